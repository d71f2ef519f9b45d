# toolhost's default configuration: the built-in catalog, scoped to ./workspace,
# no network, no subprocess tier. See docs/configuration.md for every setting.

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
}
