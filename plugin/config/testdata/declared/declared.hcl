# Every kind of prompt message, resource and resource template, with the
# files they name beside this one.

prompt "review" {
  title       = "Code review"
  description = "Review a diff against the house style."
  argument "diff" {
    description = "The unified diff."
    required    = true
  }
  argument "style" {
    description = "Which style guide."
    completions = ["go", "google", "uber"]
  }
  message {
    role = "user"
    text = "Review {{ diff }} against the {{style}} style. Literal: {{ not a placeholder }}"
  }
  message {
    role = "assistant"
    image { path = "./pixel.png" }
  }
  message {
    role = "user"
    resource {
      uri  = "notes://{{style}}"
      text = "Style {{style}}."
    }
  }
  message {
    role = "user"
    resource {
      uri  = "file:///notes.txt"
      path = "./notes.txt"
    }
  }
  message {
    role = "user"
    resource {
      uri       = "file:///data.bin"
      mime_type = "application/octet-stream"
      path      = "./data.bin"
    }
  }
}

resource "docs://readme" {
  name        = "readme"
  title       = "Read me"
  description = "Fixed text."
  text        = "Hello."
}

resource "docs://notes" {
  path = "./notes.txt"
}

resource "docs://data" {
  path = "./data.bin"
}

resource_template "docs://issue/{id}/{part}" {
  name        = "issue"
  description = "An issue's part."
  text        = "Issue {{id}}, {{part}}."
  completions = { part = ["title", "body"] }
}
