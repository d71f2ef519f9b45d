# Every mistake an oauth block can hold, each reported at its attribute.
grants {
  secrets = ["cc_secret", "key", "token"]
}

secret "cc_secret" {
  env = "CC_SECRET"
}

secret "key" {
  file = "key.pem"
}

secret "token" {
  env = "TOKEN"
}

secret "ungranted" {
  env = "UNGRANTED"
}

# An Authorization header beside oauth; a grant that does not exist.
mcp_server "both" {
  url     = "https://both.example/mcp"
  headers = { authorization = "Bearer $token" }
  secrets = ["token"]
  tools   = ["t"]
  oauth {
    grant = "client_credential"
  }
}

# client_credentials without a credential, with login-only attributes.
mcp_server "nocred" {
  url   = "https://nocred.example/mcp"
  tools = ["t"]
  oauth {
    grant                  = "client_credentials"
    client_id              = "svc"
    client_id_metadata_url = "https://app.example/client.json"
    redirect_url           = "http://127.0.0.1:8976/callback"
  }
}

# A literal secret, a secret without client_id, an ungranted secret.
mcp_server "literal" {
  url   = "https://literal.example/mcp"
  tools = ["t"]
  oauth {
    client_secret = "sk-live-1234"
  }
}

mcp_server "ungranted" {
  url   = "https://ungranted.example/mcp"
  tools = ["t"]
  oauth {
    client_id     = "app"
    client_secret = "ungranted"
  }
}

# private_key with a login; both credentials; a bad algorithm.
mcp_server "keys" {
  url   = "https://keys.example/mcp"
  tools = ["t"]
  oauth {
    client_id         = "app"
    client_secret     = "cc_secret"
    private_key       = "key"
    signing_algorithm = "HS256"
  }
}

# Where the host cannot listen, a metadata URL without a path, a bad scope.
mcp_server "urls" {
  url   = "https://urls.example/mcp"
  tools = ["t"]
  oauth {
    redirect_url           = "https://app.example/callback"
    client_id_metadata_url = "https://app.example"
    scopes                 = ["read", "write all"]
  }
}

# signing_algorithm without private_key.
mcp_server "alg" {
  url   = "https://alg.example/mcp"
  tools = ["t"]
  oauth {
    signing_algorithm = "ES256"
  }
}
