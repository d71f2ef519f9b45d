host {
  max_depth = 99
  limits {
    memory = "2GiB"
  }
}

tool "t" {
  go {}
  limits {
    memory           = -5
    timeout          = 30
    fuel             = 1.5
    output           = true
    preview          = "0"
    file_descriptors = "many"
    idle_timeout     = "-1s"
  }
}
