package mcp

import (
	"strings"
	"testing"

	"github.com/toolhost/toolhost/plugin"
)

// A header that names a secret without a value is refused, whichever way
// it is written, and a header with the value gets it expanded.
func TestSetHeadersSecrets(t *testing.T) {
	for _, tt := range []struct {
		header  string
		values  map[string]string
		want    string
		missing bool
	}{
		{"Bearer $API_KEY", map[string]string{"API_KEY": "k1"}, "Bearer k1", false},
		{"Bearer ${API_KEY}", map[string]string{"API_KEY": "k1"}, "Bearer k1", false},
		{"Bearer $API_KEY", nil, "", true},
		{"Bearer ${API_KEY}", nil, "", true},
		{"cost $5, $OTHER", nil, "cost $5, $OTHER", false}, // not a secret of this server: left as written
	} {
		r := &remote{srv: plugin.MCPServer{Headers: map[string]string{"Authorization": tt.header}}, secrets: []string{"API_KEY"}}
		err := r.setHeaders(plugin.NewSecrets(tt.values))
		if tt.missing {
			if err == nil || !strings.Contains(err.Error(), "uses the secret API_KEY, which has no value") {
				t.Errorf("%q: err = %v, want a missing-secret error", tt.header, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.header, err)
			continue
		}
		if got := r.headers.Get("Authorization"); got != tt.want {
			t.Errorf("%q: header = %q, want %q", tt.header, got, tt.want)
		}
	}
}
