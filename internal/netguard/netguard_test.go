package netguard

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/plugin"
)

func rules(t *testing.T, specs ...string) []plugin.HostRule {
	t.Helper()
	var out []plugin.HostRule
	for _, s := range specs {
		r, err := plugin.ParseHostRule(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func TestForbiddenAddresses(t *testing.T) {
	for _, s := range []string{
		"127.0.0.1", "127.255.255.254", "::1", "10.1.2.3", "172.16.0.1", "192.168.1.1",
		"169.254.169.254", "fe80::1", "fd00:ec2::254", "0.0.0.0", "::", "100.64.0.1",
		"::ffff:127.0.0.1", "::ffff:8.8.8.8", "64:ff9b::7f00:1", "2002:7f00:1::", "224.0.0.1", "255.255.255.255",
	} {
		if !Forbidden(netip.MustParseAddr(s)) {
			t.Errorf("%s is not forbidden", s)
		}
	}
	for _, s := range []string{"8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"} {
		if Forbidden(netip.MustParseAddr(s)) {
			t.Errorf("public address %s is forbidden", s)
		}
	}
}

func TestOperatorNamedAddress(t *testing.T) {
	g := New(rules(t, "169.254.169.254:80"), nil)
	if !g.AddrAllowed(netip.MustParseAddr("169.254.169.254"), 80) {
		t.Fatal("operator-named address refused")
	}
	if g.AddrAllowed(netip.MustParseAddr("169.254.169.254"), 8080) {
		t.Fatal("operator-named address allowed on another port")
	}
	if g.AddrAllowed(netip.MustParseAddr("::ffff:169.254.169.254"), 80) {
		t.Fatal("mapped form allowed by a rule naming the IPv4 address")
	}
}

func TestCheckURL(t *testing.T) {
	g := New(rules(t, "api.example.com", "*.example.org:8443", "10.0.0.5:9000"), nil)
	cases := []struct {
		url  string
		want string // "" allowed, else a substring of the error
	}{
		{"https://api.example.com/v1", ""},
		{"http://api.example.com/", ""},
		{"https://API.Example.com./x", ""},
		{"https://api.example.com:8443/", "not in the tool's network allowlist"},
		{"https://a.example.org:8443/", ""},
		{"https://a.example.org/", "not in the tool's network allowlist"},
		{"http://10.0.0.5:9000/", ""},
		{"http://10.0.0.5:9001/", "not in the tool's network allowlist"},
		{"ftp://api.example.com/", "only http and https"},
		{"https://user:pw@api.example.com/", "credentials in URLs"},
		{"http://2130706433/", "non-canonical"},
		{"http://0x7f000001/", "non-canonical"},
		{"http://127.1/", "non-canonical"},
		{"http://evil.com/", "not in the tool's network allowlist"},
		{"http:///path", "has no host"},
		{"http://api.example.com:99999/", "bad port"},
	}
	for _, tc := range cases {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		err = g.CheckURL(u)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.url, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: err = %v, want %q", tc.url, err, tc.want)
		}
	}
}

func TestDialChecksResolvedAddresses(t *testing.T) {
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "rebind.example.com":
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		case "meta.example.com":
			return []netip.Addr{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("::ffff:10.0.0.1")}, nil
		}
		return nil, errors.New("no such host")
	}
	g := New(rules(t, "rebind.example.com:80", "meta.example.com:80"), lookup)
	for _, addr := range []string{"rebind.example.com:80", "meta.example.com:80", "127.0.0.1:80", "[::1]:80", "0177.0.0.1:80"} {
		c, err := g.Dial(context.Background(), "tcp", addr)
		if err == nil {
			c.Close()
			t.Errorf("%s: dialled", addr)
			continue
		}
		if !Refused(err) {
			t.Errorf("%s: err %v is not a refusal by policy", addr, err)
		}
	}
	if _, err := g.Dial(context.Background(), "tcp", "unknown.example.com:80"); err == nil || Refused(err) {
		t.Errorf("unresolvable name: err = %v, want the resolver's error", err)
	}
}

// TestCheckRedirect: a redirect is checked as a first request is, counted
// by the caller's hop, bounded, and leaves the tool's headers (secrets)
// behind when it leaves the host the tool named.
func TestCheckRedirect(t *testing.T) {
	g := New(rules(t, "api.example.com", "cdn.example.com"), nil)
	req := func(raw string, h http.Header) *http.Request {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		return &http.Request{URL: u, Header: h}
	}
	first := req("https://api.example.com/a", nil)
	hops := 0
	check := g.CheckRedirect(func() error { hops++; return nil }, []string{"Authorization", "X-Key"})

	same := req("https://api.example.com/b", http.Header{"Authorization": {"Bearer s"}, "X-Key": {"k"}, "Accept": {"*/*"}})
	if err := check(same, []*http.Request{first}); err != nil {
		t.Fatalf("same host: %v", err)
	}
	if same.Header.Get("Authorization") == "" || same.Header.Get("X-Key") == "" {
		t.Error("the tool's headers were dropped on a redirect to the same host")
	}
	other := req("https://cdn.example.com/c", http.Header{"Authorization": {"Bearer s"}, "X-Key": {"k"}, "Accept": {"*/*"}})
	if err := check(other, []*http.Request{first}); err != nil {
		t.Fatalf("allowed host: %v", err)
	}
	if other.Header.Get("Authorization") != "" || other.Header.Get("X-Key") != "" || other.Header.Get("Accept") == "" {
		t.Errorf("headers after leaving the first host: %v", other.Header)
	}
	if hops != 2 {
		t.Errorf("hop called %d times, want 2", hops)
	}

	for _, target := range []string{"https://evil.example.net/", "file:///etc/passwd", "https://u:p@api.example.com/", "http://127.0.0.1/"} {
		err := check(req(target, http.Header{}), []*http.Request{first})
		if err == nil || !Refused(err) || !errors.Is(err, ErrRedirectRefused) {
			t.Errorf("redirect to %s: %v, want a refusal", target, err)
		}
	}
	if hops != 2 {
		t.Errorf("refused redirects were counted: %d hops", hops)
	}

	via := make([]*http.Request, MaxRedirects+1)
	for i := range via {
		via[i] = first
	}
	if err := check(req("https://api.example.com/d", http.Header{}), via); err == nil || Refused(err) {
		t.Errorf("redirect %d: %v, want stopped (not a policy refusal)", MaxRedirects+1, err)
	}

	limit := errors.New("limit")
	stop := g.CheckRedirect(func() error { return limit }, nil)
	if err := stop(req("https://api.example.com/e", http.Header{}), []*http.Request{first}); !errors.Is(err, limit) {
		t.Errorf("hop's error: %v", err)
	}
}
