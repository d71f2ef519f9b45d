tool "x" {
  wasm { path = "a.wasm"
}
