# unknown_import.wasm is a 74-byte module written by hand: it imports
# extism:host/user.nope, which toolhost does not provide, and exports that
# import as list_tools and call_tool. validate must refuse it at the wasm
# block, naming the import.
tool "nope" {
  wasm {
    path = "./unknown_import.wasm"
  }
}
