tool "nosource" {
  tier = "read_only"
}

tool "two" {
  wasm { builtin = "a" }
  go {}
}

tool "raw" {
  wasm {
    builtin = "plain"
    export  = "count_vowels"
  }
}

tool "bad name!" {
  go {}
}

tool "pinned" {
  wasm {
    builtin = "x"
    sha256  = "abc"
  }
}
