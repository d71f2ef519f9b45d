toool "x" {
  go {}
}

tool "y" {
  go {}
  limts {
    memory = "1MiB"
  }
  mount "ws" {
    host_path  = "../ws"
    guest_path = "/ws"
  }
}

host {
  plugins {}
}
