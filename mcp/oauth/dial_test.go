package oauth

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/toolhost/toolhost/internal/netguard"
)

// TestDialer: a public MCP server's authorization endpoints are dialled
// only at public addresses, by the IP checked; an internal server's may be
// internal; the environment's proxy is dialled as named.
func TestDialer(t *testing.T) {
	names := map[string][]netip.Addr{
		"mcp.example.com":      {netip.MustParseAddr("93.184.216.34")},
		"auth.example.com":     {netip.MustParseAddr("93.184.216.35")},
		"evil.example.com":     {netip.MustParseAddr("10.0.0.5")},
		"mixed.example.com":    {netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("93.184.216.36")},
		"mcp.corp.internal":    {netip.MustParseAddr("10.1.2.3")},
		"keycloak.corp.intern": {netip.MustParseAddr("10.9.9.9")},
	}
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		if a, ok := names[host]; ok {
			return append([]netip.Addr(nil), a...), nil
		}
		return nil, errors.New("no such host")
	}
	for _, c := range []struct {
		name, server, addr, want string // want: the address dialled, "" refused
	}{
		{"public to public", "https://mcp.example.com/mcp", "auth.example.com:443", "93.184.216.35:443"},
		{"public to private", "https://mcp.example.com/mcp", "evil.example.com:443", ""},
		{"public to loopback IP", "https://mcp.example.com/mcp", "127.0.0.1:8080", ""},
		{"public to metadata IP", "https://mcp.example.com/mcp", "169.254.169.254:80", ""},
		{"public to mixed: the public one", "https://mcp.example.com/mcp", "mixed.example.com:443", "93.184.216.36:443"},
		{"internal to internal", "https://mcp.corp.internal/mcp", "keycloak.corp.intern:8443", "10.9.9.9:8443"},
		{"loopback to loopback", "http://127.0.0.1:9000/mcp", "127.0.0.1:9001", "127.0.0.1:9001"},
		{"unresolvable server: treated as public", "https://nowhere.invalid/mcp", "evil.example.com:443", ""},
		{"the proxy", "https://mcp.example.com/mcp", "proxy.corp:3128", "proxy.corp:3128"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := newDialer(c.server)
			d.lookup = lookup
			d.proxies = map[string]bool{"proxy.corp:3128": true}
			var dialled string
			d.dial = func(_ context.Context, _, addr string) (net.Conn, error) {
				dialled = addr
				a, b := net.Pipe()
				b.Close()
				return a, nil
			}
			conn, err := d.DialContext(context.Background(), "tcp", c.addr)
			if c.want == "" {
				if err == nil || !errors.Is(err, netguard.ErrAddrForbidden) || dialled != "" {
					t.Fatalf("dialled %q, err %v; want refused with ErrAddrForbidden", dialled, err)
				}
				return
			}
			if err != nil || dialled != c.want {
				t.Fatalf("dialled %q, err %v; want %s", dialled, err, c.want)
			}
			conn.Close()
		})
	}
}
