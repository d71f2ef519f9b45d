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

# The suite's prompts, resources and resource template, declared as an
# operator would (docs/configuration.md, "Prompts and resources").

prompt "test_simple_prompt" {
  description = "A prompt without arguments."
  message {
    role = "user"
    text = "This is a simple prompt for testing."
  }
}

prompt "test_prompt_with_arguments" {
  description = "A prompt with two required arguments."
  argument "arg1" {
    description = "First test argument"
    required    = true
    completions = ["test", "testing", "tested", "other"]
  }
  argument "arg2" {
    description = "Second test argument"
    required    = true
  }
  message {
    role = "user"
    text = "Prompt with arguments: arg1='{{arg1}}', arg2='{{arg2}}'"
  }
}

prompt "test_prompt_with_embedded_resource" {
  description = "A prompt that embeds the resource it is given."
  argument "resourceUri" {
    description = "URI of the resource to embed"
    required    = true
  }
  message {
    role = "user"
    resource {
      uri  = "{{resourceUri}}"
      text = "Embedded resource content for testing."
    }
  }
  message {
    role = "user"
    text = "Please process the embedded resource above."
  }
}

prompt "test_prompt_with_image" {
  description = "A prompt that shows an image."
  message {
    role = "user"
    image { path = "./declared/pixel.png" }
  }
  message {
    role = "user"
    text = "Please analyze the image above."
  }
}

resource "test://static-text" {
  name        = "static-text"
  description = "A fixed text resource."
  text        = "This is the content of the static text resource."
}

resource "test://static-binary" {
  name        = "static-binary"
  description = "A fixed binary resource (a PNG)."
  path        = "./declared/pixel.png"
}

resource "test://watched-resource" {
  name        = "watched-resource"
  description = "A file-backed resource: subscribers hear when it changes."
  path        = "./declared/watched.txt"
}

resource_template "test://template/{id}/data" {
  name        = "template"
  description = "A resource for every id."
  mime_type   = "application/json"
  text        = "{\"id\":\"{{id}}\",\"templateTest\":true,\"data\":\"Data for ID: {{id}}\"}"
  completions = { id = ["123", "456"] }
}
