package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/plugin/config"
)

// An oauth block decodes into the server's MCPOAuth, with the secrets it
// names added to the server's secrets (so its calls redact them) and the
// default grant filled in.
func TestDecodeOAuth(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "c.hcl")
	src := `grants {
  secrets = ["key", "cs"]
}
secret "key" {
  file = "key.pem"
}
secret "cs" {
  env = "CS"
}
mcp_server "login" {
  url   = "https://login.example/mcp"
  tools = ["t"]
  oauth {
    client_id_metadata_url = "https://app.example/client.json"
    scopes                 = ["read", "write"]
    redirect_url           = "http://127.0.0.1:8976/callback"
    client_id              = "app"
    client_secret          = "cs"
  }
}
mcp_server "service" {
  url     = "https://svc.example/mcp"
  tools   = ["t"]
  headers = { X-Tenant = "acme" }
  oauth {
    grant             = "client_credentials"
    client_id         = "svc"
    private_key       = "key"
    signing_algorithm = "ES256"
  }
}
`
	if err := os.WriteFile(f, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, diags := config.Load(f)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	want := []*plugin.MCPOAuth{
		{Grant: "authorization_code", ClientID: "app", ClientSecret: "cs", ClientIDMetadataURL: "https://app.example/client.json",
			Scopes: []string{"read", "write"}, RedirectURL: "http://127.0.0.1:8976/callback"},
		{Grant: "client_credentials", ClientID: "svc", PrivateKey: "key", SigningAlgorithm: "ES256"},
	}
	wantSecrets := [][]string{{"cs"}, {"key"}}
	for i, m := range cfg.MCPServers {
		if diff := cmp.Diff(want[i], m.OAuth); diff != "" {
			t.Errorf("%s: oauth (-want +got):\n%s", m.Name, diff)
		}
		if diff := cmp.Diff(wantSecrets[i], m.Secrets); diff != "" {
			t.Errorf("%s: secrets (-want +got):\n%s", m.Name, diff)
		}
	}
}
