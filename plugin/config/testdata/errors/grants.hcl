grants {
  mount {
    path      = "../ws"
    read_only = true
  }
  secrets      = ["NOPE"]
  capabilities = ["tool.exec.everything"]
  hosts        = ["http://example.com", "*"]
}

secret "1BAD" {
  env = "X"
}

secret "BOTH" {
  env  = "X"
  file = "y"
}

tool "writer" {
  go {}
  mount {
    host_path  = "../ws"
    guest_path = "/workspace"
  }
  mount {
    host_path  = "../nowhere"
    guest_path = "/n"
  }
  mount {
    host_path  = "../ws"
    guest_path = "relative"
  }
  secrets = ["BOTH"]
  invoke  = ["other"]
}

mcp_server "remote" {
  url   = "http://example.com/mcp"
  tools = []
}

mcp_server "writer" {
  url   = "https://example.com/mcp"
  tools = ["a", "a"]
  tier  = "root"
  timeout = "forever"
  capabilities = ["client.elicitation", "client.sampeling"]
}

tool "asker" {
  go {}
  capabilities = ["client.sampling", "client.elicitaton"]
}
