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
  # Read-only: ./ws belongs to whoever checked the repository out, and
  # subprocess tools of a root host run as 65534:65534.
  mount {
    host_path  = "./ws"
    guest_path = "/workspace"
    read_only  = true
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
