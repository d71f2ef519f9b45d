# A plain Extism plugin in raw mode: the tool block names the export and
# declares the schemas the plugin cannot describe itself. Build vowels.wasm
# next to this file first:
#   GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o vowels.wasm .

tool "count_vowels" {
  description = "Counts the vowels in a text."
  tier        = "read_only"
  wasm {
    path   = "./vowels.wasm"
    export = "count_vowels"
  }
  input_schema = jsonencode({
    type       = "object"
    properties = { text = { type = "string" } }
    required   = ["text"]
  })
  output_schema = jsonencode({
    type = "object"
    properties = {
      count  = { type = "integer" }
      vowels = { type = "string" }
    }
    required = ["count", "vowels"]
  })
  limits {
    memory  = "32MiB"
    timeout = "5s"
  }
}
