# Built-in names with typos are reported in the same pass as every other
# mistake, at the attribute, with a suggestion; a second grants block is one
# error, not one per tool it covers.
grants {
  mount {
    path = "../ws"
  }
}

grants {
  capabilities = ["tool.exec.subprocess"]
}

tool "notes.read" {
  tier = "read_only"
  wasm {
    builtin = "filesystm"
    tool    = "filesystem.read"
  }
}

tool "notes.list" {
  tier = "read_only"
  wasm {
    builtin = "filesystem"
    tool    = "filesystem.raed"
  }
}

tool "filesystem.serch" {
  wasm {
    builtin = "filesystem"
  }
}

tool "shell" {
  tier = "privileged"
  subprocess {
    builtin = "shel.exec"
  }
}

tool "bad.tier" {
  tier = "sometimes"
  go {}
}
