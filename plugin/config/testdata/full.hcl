# A configuration that uses every block and attribute.
host {
  workspace     = "./ws"
  cache_dir     = "./cache"
  artifacts_dir = "./artifacts"
  audit_log     = "./audit.jsonl"
  log_level     = "debug"
  max_depth     = 3
  plugin_dir    = "./plugins"

  limits {
    timeout = "10s"
    preview = "8KiB"
  }
}

grants {
  mount {
    path = "./ws"
  }
  hosts        = ["api.example.com:443", "*.wikipedia.org"]
  secrets      = ["API_KEY"]
  invoke       = ["*"]
  env          = ["LANG"]
  capabilities = ["tool.exec.subprocess", "client.sampling", "client.elicitation"]
}

secret "API_KEY" {
  env = "TOOLHOST_TEST_API_KEY"
}

tool "count_vowels" {
  description = "Counts vowels."
  tier        = "read_only"
  wasm {
    path   = "./plugins/empty.wasm"
    sha256 = "93A44BBB96C751218E4C00D479E4C14358122A389ACCA16205B1E4D0DC5F9476"
    export = "count_vowels"
    config = { greeting = "hi" }
  }
  input_schema = jsonencode({
    type       = "object"
    properties = { input = { type = "string" } }
    required   = ["input"]
  })
  output_schema = file("./schemas/vowels.json")
  limits {
    memory           = "64MiB"
    timeout          = "5s"
    fuel             = 5000000
    output           = "1MiB"
    arguments        = 4096
    file_descriptors = 8
    http_requests    = 3
    http_response    = "2MiB"
    tool_invocations = 2
    client_requests  = 3
    log_entries      = 100
    file_bytes_read  = "1MiB"
    var_size         = "64KiB"
    pool             = 4
    idle_timeout     = "1d"
  }
}

tool "wiki.fetch" {
  tier     = "side_effecting"
  approval = "always"
  wasm {
    builtin = "web"
    tool    = "web.fetch"
  }
  mount {
    host_path  = "./ws"
    guest_path = "/workspace"
    read_only  = true
  }
  hosts        = ["en.wikipedia.org"]
  secrets      = ["API_KEY"]
  invoke       = ["count_vowels"]
  capabilities = ["client.sampling", "client.elicitation"]
}

tool "git.log" {
  tier = "privileged"
  subprocess {
    path = "empty.wasm" # inside plugin_dir
    tool = "log"
    args = ["--verbose"]
    env  = ["LANG"]
  }
}

tool "embedded" {
  enabled = false
  go {
    tool = "my-go-tool"
  }
}

mcp_server "everything" {
  url     = "http://127.0.0.1:3001/mcp"
  headers = { Authorization = "Bearer $API_KEY" }
  secrets = ["API_KEY"]
  tools   = ["echo", "add"]
  tier    = "read_only"
  timeout = "20s"
  # The server may put forms to the caller's user while its tools run.
  capabilities = ["client.elicitation"]
}
