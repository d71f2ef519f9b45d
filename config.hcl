# toolhost's default configuration: the built-in catalog, scoped to ./workspace,
# no network, no subprocess tier. See docs/configuration.md for every setting
# and docs/tools.md for every built-in tool.

host {
  workspace = "./workspace"
  cache_dir = "./.cache/toolhost"
  log_level = "warn"
}

# What the operator lets the host hand out. A tool that declares more than
# this does not load (the composition rule).
grants {
  mount {
    path = "./workspace"
  }
  # Network tools need their hosts granted here and on the tool, e.g.
  # hosts = ["en.wikipedia.org", "api.search.brave.com:443"]
}

# --- Files: read-only tools see ./workspace read-only at /workspace. ---

tool "filesystem.read" {
  tier = "read_only"
  wasm {
    builtin = "filesystem"
    tool    = "filesystem.read"
    config  = { max_file_size = "10MiB" }
  }
  mount {
    host_path  = "./workspace"
    guest_path = "/workspace"
    read_only  = true
  }
  limits {
    file_bytes_read = "16MiB"
  }
}

tool "filesystem.list" {
  tier = "read_only"
  wasm {
    builtin = "filesystem"
    tool    = "filesystem.list"
    config  = { max_entries = "1000" }
  }
  mount {
    host_path  = "./workspace"
    guest_path = "/workspace"
    read_only  = true
  }
}

tool "filesystem.search" {
  tier = "read_only"
  wasm {
    builtin = "filesystem"
    tool    = "filesystem.search"
    config  = { max_file_size = "10MiB" }
  }
  mount {
    host_path  = "./workspace"
    guest_path = "/workspace"
    read_only  = true
  }
  limits {
    # A search reads every file it looks at.
    file_bytes_read = "1GiB"
  }
}

# --- Files: writers change ./workspace, one call at a time. ---

tool "filesystem.write" {
  tier = "side_effecting"
  wasm {
    builtin = "filesystem"
    tool    = "filesystem.write"
  }
  mount {
    host_path  = "./workspace"
    guest_path = "/workspace"
  }
}

tool "filesystem.edit" {
  tier = "side_effecting"
  wasm {
    builtin = "filesystem"
    tool    = "filesystem.edit"
    config  = { max_file_size = "10MiB" }
  }
  mount {
    host_path  = "./workspace"
    guest_path = "/workspace"
  }
  limits {
    file_bytes_read = "16MiB"
  }
}

tool "filesystem.delete" {
  tier = "side_effecting"
  wasm {
    builtin = "filesystem"
    tool    = "filesystem.delete"
  }
  mount {
    host_path  = "./workspace"
    guest_path = "/workspace"
  }
}

# --- Knowledge base: Markdown subjects in ./workspace/kb, read-only. ---

tool "kb.learn" {
  tier = "read_only"
  wasm {
    builtin = "kb"
    tool    = "kb.learn"
    config  = { disabled = "" } # comma-separated subject globs to hide
  }
  mount {
    host_path  = "./workspace/kb"
    guest_path = "/kb"
    read_only  = true
  }
}

# --- Network: present but disabled. To enable one, grant its hosts in
# grants { hosts = [...] }, list them on the tool, and set enabled = true. ---

tool "http.request" {
  enabled = false
  tier    = "side_effecting"
  wasm {
    builtin = "web"
    tool    = "http.request"
  }
  # hosts = ["api.example.com:443"]
}

tool "web.fetch" {
  enabled = false
  tier    = "read_only"
  wasm {
    builtin = "web"
    tool    = "web.fetch"
  }
  # hosts = ["en.wikipedia.org"]
}

tool "web.search" {
  enabled = false
  tier    = "read_only"
  wasm {
    builtin = "web"
    tool    = "web.search"
    # SearXNG: { provider = "searxng", endpoint = "https://searx.example.org" }
    # Brave:   { provider = "brave", api_key_secret = "BRAVE_API_KEY" } with a
    #          secret "BRAVE_API_KEY" block and secrets = ["BRAVE_API_KEY"] here.
    config = { provider = "searxng", endpoint = "https://searx.example.org" }
  }
  # hosts = ["searx.example.org:443"]
}
