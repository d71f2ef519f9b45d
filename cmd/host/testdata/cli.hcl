host {
  cache_dir = "./.cache"
  log_level = "off"
}

tool "echo" {
  description = "Echoes its text."
  tier        = "read_only"
  go {}
}

tool "danger.zone" {
  description = "Does something that needs approval."
  tier        = "privileged"
  go {
    tool = "danger"
  }
}

tool "ask" {
  go {}
}

tool "big" {
  tier = "read_only"
  go {}
  limits {
    preview = "1KiB"
  }
}

tool "retired" {
  description = "An old tool, switched off."
  enabled     = false
  go {
    tool = "echo"
  }
}
