# The configuration TestOfficialConformance serves to the official MCP
# conformance suite: real wasm tools (the built-in filesystem module) over
# ./ws, the tests' in-process echo tool, and the suite's fixture tools from
# a wasm plugin (conformance/main.go, which the test builds into .cache),
# the sampling and elicitation ones granted the right to ask the client.

host {
  workspace = "./ws"
  cache_dir = "./.cache"
  log_level = "warn"
}

grants {
  mount {
    path = "./ws"
  }
  capabilities = ["client.sampling", "client.elicitation"]
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

tool "test_simple_text" {
  tier = "read_only"
  wasm {
    path = "./.cache/conformance-fixtures.wasm"
    tool = "test_simple_text"
  }
}

tool "test_image_content" {
  tier = "read_only"
  wasm {
    path = "./.cache/conformance-fixtures.wasm"
    tool = "test_image_content"
  }
}

tool "test_audio_content" {
  tier = "read_only"
  wasm {
    path = "./.cache/conformance-fixtures.wasm"
    tool = "test_audio_content"
  }
}

tool "test_embedded_resource" {
  tier = "read_only"
  wasm {
    path = "./.cache/conformance-fixtures.wasm"
    tool = "test_embedded_resource"
  }
}

tool "test_multiple_content_types" {
  tier = "read_only"
  wasm {
    path = "./.cache/conformance-fixtures.wasm"
    tool = "test_multiple_content_types"
  }
}

tool "test_error_handling" {
  tier = "read_only"
  wasm {
    path = "./.cache/conformance-fixtures.wasm"
    tool = "test_error_handling"
  }
}

tool "test_tool_with_logging" {
  tier = "read_only"
  wasm {
    path = "./.cache/conformance-fixtures.wasm"
    tool = "test_tool_with_logging"
  }
}

tool "test_tool_with_progress" {
  tier = "read_only"
  wasm {
    path = "./.cache/conformance-fixtures.wasm"
    tool = "test_tool_with_progress"
  }
}

tool "test_sampling" {
  tier         = "read_only"
  capabilities = ["client.sampling"]
  wasm {
    path = "./.cache/conformance-fixtures.wasm"
    tool = "test_sampling"
  }
}

tool "test_elicitation" {
  tier         = "read_only"
  capabilities = ["client.elicitation"]
  wasm {
    path = "./.cache/conformance-fixtures.wasm"
    tool = "test_elicitation"
  }
}

tool "test_elicitation_sep1034_defaults" {
  tier         = "read_only"
  capabilities = ["client.elicitation"]
  wasm {
    path = "./.cache/conformance-fixtures.wasm"
    tool = "test_elicitation_sep1034_defaults"
  }
}

tool "test_elicitation_sep1330_enums" {
  tier         = "read_only"
  capabilities = ["client.elicitation"]
  wasm {
    path = "./.cache/conformance-fixtures.wasm"
    tool = "test_elicitation_sep1330_enums"
  }
}
