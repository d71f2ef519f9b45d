host {
  cache_dir = "./.cache"
  log_level = "off"
}

grants {
  mount {
    path = "./ws"
  }
  capabilities = ["tool.exec.subprocess"]
}

tool "shell.exec" {
  tier = "privileged"
  subprocess {
    builtin = "shell.exec"
  }
  mount {
    host_path  = "./ws"
    guest_path = "/workspace"
  }
}

tool "bash.read-only" {
  tier = "read_only"
  subprocess {
    builtin = "bash.read-only"
  }
  mount {
    host_path  = "./ws"
    guest_path = "/workspace"
    read_only  = true
  }
}
