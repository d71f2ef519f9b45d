# Mistakes in prompt, resource and resource_template blocks.
prompt "review" {
  description = "Review a change."
  argument "diff" { required = true }
  argument "diff" {}
  argument "two words" {}
  message {
    role = "system"
    text = "Review {{diff}} against {{style}}."
  }
  message {
    role = "user"
    text = "Both."
    image { path = "./declared.hcl" }
  }
  message {
    role = "user"
    image { path = "./missing.png" }
  }
  message {
    role = "user"
    image { path = "./declared.hcl" }
  }
  message {
    role = "assistant"
    image { path = "../declared/pixel.png" }
  }
  message {
    role = "user"
    resource {
      uri  = "no-scheme"
      text = "x"
      path = "./declared.hcl"
    }
  }
}

prompt "review" {
  message {
    role = "user"
    text = "{{nothing}}"
  }
}

prompt "empty" {}

resource "test://a" {
  text = "a"
}

resource "test://a" {
  text = "again"
}

resource "toolhost://artifacts/x" {
  text = "mine"
}

resource "test://neither" {}

resource "test://escape" {
  path = "../declared/notes.txt"
}

template_is_not_a_block {}

resource_template "test://t/{id}/{+path}" {
  text = "{{id}}"
}

resource_template "test://u/{id}" {
  text        = "{{id}} and {{other}}"
  completions = { id = ["1"], idd = ["2"] }
}

resource_template "test://u/{id}" {
  text = "again"
}
