host {
  workspace = "../ws"
  log_level = "loud"
}

grants {
  mount {
    path      = "../ws"
    read_only = true
  }
  hosts = ["api.example.com:443"]
}

tool "filesystem.read" {
  tier = "read_onyl"
  wasm { path = "../missing.wasm" }
  mount {
    host_path  = "../ws"
    guest_path = "/workspace"
  }
  hosts = ["evil.example.net"]
  limits {
    memory  = "64MB!"
    timeout = "10 minutes"
    fuel    = 10
    colour  = 3
  }
}

tool "filesystem.read" {
  go {}
}

tool "runner" {
  subprocess { builtin = "shell.exec" }
  frobnicate = true
}
