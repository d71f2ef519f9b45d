# The git example plugin, as an operator would configure it. Build the
# binary first (see README.md) and pin it: toolhost refuses to start a
# plugin binary whose sha256 differs from the pin.

grants {
  capabilities = ["tool.exec.subprocess"]
  mount {
    path      = "./workspace"
    read_only = true
  }
}

tool "git_log" {
  tier = "read_only"
  subprocess {
    path   = "./bin/git-plugin"
    sha256 = "<output of: sha256sum bin/git-plugin>"
    tool   = "git_log"
  }
  # The plugin can read only what is mounted for it (Landlock).
  mount {
    host_path  = "./workspace"
    guest_path = "/workspace"
    read_only  = true
  }
  limits {
    timeout = "10s"
    memory  = "128MiB"
  }
}

tool "git_show" {
  tier = "read_only"
  subprocess {
    path   = "./bin/git-plugin"
    sha256 = "<output of: sha256sum bin/git-plugin>"
    tool   = "git_show"
  }
  mount {
    host_path  = "./workspace"
    guest_path = "/workspace"
    read_only  = true
  }
}
