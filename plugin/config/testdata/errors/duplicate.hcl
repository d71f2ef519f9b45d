tool "t" {
  go {}
}

# The duplicate is reported, and so is every mistake inside it.
tool "t" {
  tier = "sometimes"
  wasm { path = "../missing.wasm" }
  limits {
    timeout = "soon"
  }
}

mcp_server "t" {
  url   = "ftp://example.com/mcp"
  tools = []
}

secret "S" {
  env = "A"
}

secret "S" {
}
