tool "a" {
  go {}
  input_schema = "{not json"
}

tool "b" {
  go {}
  input_schema = jsonencode({ type = "array" })
}

tool "c" {
  go {}
  input_schema = jsonencode({ type = "object", properties = { x = { type = "integr" } } })
}

tool "d" {
  go {}
  input_schema = jsonencode({ type = "object", properties = { x = { "$ref" = "file:///etc/passwd" } } })
}
