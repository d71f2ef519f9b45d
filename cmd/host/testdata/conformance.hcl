# The configuration TestOfficialConformance serves to the official MCP
# conformance suite: real wasm tools (the built-in filesystem module) over
# ./ws, and the tests' in-process echo tool.

host {
  workspace = "./ws"
  cache_dir = "./.cache"
  log_level = "warn"
}

grants {
  mount {
    path = "./ws"
  }
}

tool "filesystem.read" {
  tier = "read_only"
  wasm {
    builtin = "filesystem"
    tool    = "filesystem.read"
  }
  mount {
    host_path  = "./ws"
    guest_path = "/workspace"
    read_only  = true
  }
}

tool "filesystem.list" {
  tier = "read_only"
  wasm {
    builtin = "filesystem"
    tool    = "filesystem.list"
  }
  mount {
    host_path  = "./ws"
    guest_path = "/workspace"
    read_only  = true
  }
}

tool "echo" {
  description = "Echoes its text."
  tier        = "read_only"
  go {}
}
