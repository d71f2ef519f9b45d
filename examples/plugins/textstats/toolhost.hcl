# Two tools from one plugin. Build textstats.wasm next to this file first:
#   GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o textstats.wasm .

grants {
  mount {
    path      = "./workspace"
    read_only = true
  }
}

tool "text_stats" {
  tier = "read_only"
  wasm {
    path = "./textstats.wasm"
    tool = "text_stats"
  }
}

tool "grep_file" {
  tier = "read_only"
  wasm {
    path = "./textstats.wasm"
    tool = "grep_file"
  }
  mount {
    host_path  = "./workspace"
    guest_path = "/workspace"
    read_only  = true
  }
  limits {
    file_bytes_read = "4MiB"
    timeout         = "5s"
  }
}
