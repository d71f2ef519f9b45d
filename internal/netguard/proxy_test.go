package netguard

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/plugin"
)

// startProxy serves a proxy for rules on 127.0.0.1 and returns its URL and
// the refusals it reported.
func startProxy(t *testing.T, g *Guard, opts ProxyOptions) (*url.URL, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var refused []string
	opts.OnRefuse = func(target string, err error) {
		mu.Lock()
		refused = append(refused, target+": "+err.Error())
		mu.Unlock()
	}
	p := NewProxy(g, opts)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Serve(l) }()
	t.Cleanup(func() {
		p.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	u, _ := url.Parse("http://" + l.Addr().String())
	return u, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), refused...)
	}
}

func port(t *testing.T, s *httptest.Server) string {
	_, p, err := net.SplitHostPort(s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// localNames resolves every name ending in .test to 127.0.0.1, as a
// rebinding DNS server would.
func localNames(_ context.Context, host string) ([]netip.Addr, error) {
	if strings.HasSuffix(host, ".test") {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return nil, fmt.Errorf("lookup %s: no such host", host)
}

func TestProxy(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "http://elsewhere.test/", http.StatusFound)
		default:
			fmt.Fprintf(w, "plain %s host=%s conn=%q", r.URL.Path, r.Host, r.Header.Get("X-Hop"))
		}
	}))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "secure %s", r.URL.Path)
	}))
	defer secure.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a refused server was reached: %s", r.URL)
	}))
	defer other.Close()

	g := New(rules(t, "127.0.0.1:"+port(t, plain), "127.0.0.1:"+port(t, secure), "rebind.test:"+port(t, other)), localNames)
	proxyURL, refusals := startProxy(t, g, ProxyOptions{})
	client := func() *http.Client {
		tr := secure.Client().Transport.(*http.Transport).Clone()
		tr.Proxy = http.ProxyURL(proxyURL)
		return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 10 * time.Second}
	}()
	get := func(u string) (int, string) {
		t.Helper()
		resp, err := client.Get(u)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	t.Run("plain http to an allowed host", func(t *testing.T) {
		req, _ := http.NewRequest("GET", plain.URL+"/a", nil)
		req.Header.Set("Connection", "X-Hop")
		req.Header.Set("X-Hop", "dropped")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := fmt.Sprintf(`plain /a host=127.0.0.1:%s conn=""`, port(t, plain))
		if resp.StatusCode != 200 || string(b) != want {
			t.Fatalf("%d %q, want %q", resp.StatusCode, b, want)
		}
	})
	t.Run("https through CONNECT to an allowed host", func(t *testing.T) {
		if code, body := get(secure.URL + "/b"); code != 200 || body != "secure /b" {
			t.Fatalf("%d %q", code, body)
		}
	})
	t.Run("redirects are the client's to follow", func(t *testing.T) {
		code, _ := get(plain.URL + "/redirect")
		if code != http.StatusFound {
			t.Fatalf("status %d, want 302 passed through", code)
		}
		if code, body := get("http://elsewhere.test/"); code != http.StatusForbidden || !strings.Contains(body, "allowlist") {
			t.Fatalf("redirect target: %d %q", code, body)
		}
	})
	refusedCases := []struct {
		name, url, want string
	}{
		{"host not granted", other.URL + "/", "allowlist"},
		{"granted name resolving to loopback", "http://rebind.test:" + port(t, other) + "/", "not publicly routable"},
		{"granted name resolving to loopback, CONNECT", "https://rebind.test:" + port(t, other) + "/", "Forbidden"},
		{"granted host on another port", "http://127.0.0.1:1/", "allowlist"},
		{"non-canonical address", "http://2130706433:" + port(t, plain) + "/", "non-canonical"},
	}
	for _, tc := range refusedCases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(tc.url)
			if code == 200 || !strings.Contains(body, tc.want) {
				t.Fatalf("%d %q, want a refusal mentioning %q", code, body, tc.want)
			}
		})
	}
	if n := len(refusals()); n < len(refusedCases)+1 {
		t.Errorf("%d refusals reported, want at least %d: %q", n, len(refusedCases)+1, refusals())
	}

	raw := func(t *testing.T, request string) string {
		t.Helper()
		c, err := net.Dial("tcp", proxyURL.Host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, request)
		line, _ := bufio.NewReader(c).ReadString('\n')
		return line
	}
	t.Run("origin-form requests are not served", func(t *testing.T) {
		if line := raw(t, "GET /etc/passwd HTTP/1.1\r\nHost: 127.0.0.1:"+port(t, plain)+"\r\n\r\n"); !strings.Contains(line, " 400 ") {
			t.Fatalf("answer %q, want 400", line)
		}
	})
	t.Run("a Host header cannot redirect a checked request", func(t *testing.T) {
		c, err := net.Dial("tcp", proxyURL.Host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET %s/h HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n", plain.URL)
		b, _ := io.ReadAll(c)
		if !strings.Contains(string(b), "host=127.0.0.1:"+port(t, plain)) {
			t.Fatalf("answer %q", b)
		}
	})
	t.Run("CONNECT to a scoped or malformed target", func(t *testing.T) {
		for _, target := range []string{"[fe80::1%25eth0]:443", "nohostport", "127.0.0.1:0"} {
			if line := raw(t, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n"); strings.Contains(line, " 200 ") || line == "" {
				t.Errorf("CONNECT %s: %q", target, line)
			}
		}
	})
}

func TestProxyClosesTunnels(t *testing.T) {
	// An echo server the tunnel stays open to.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	g := New(rules(t, l.Addr().String()), nil)
	p := NewProxy(g, ProxyOptions{MaxConns: 1})
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(pl)
	connect := func() (net.Conn, *bufio.Reader, string) {
		c, err := net.Dial("tcp", pl.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", l.Addr(), l.Addr())
		r := bufio.NewReader(c)
		line, _ := r.ReadString('\n')
		r.ReadString('\n') // the blank line ending the answer
		return c, r, line
	}
	c, r, line := connect()
	defer c.Close()
	if !strings.Contains(line, " 200 ") {
		t.Fatalf("CONNECT: %q", line)
	}
	// The tunnel carries bytes both ways.
	io.WriteString(c, "ping")
	buf := make([]byte, 4)
	if _, err := io.ReadFull(r, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("through the tunnel: %q %v", buf, err)
	}
	// One connection at most: a second waits for nothing and gets 503.
	c2, _, line := connect()
	c2.Close()
	if !strings.Contains(line, " 503 ") {
		t.Fatalf("second tunnel over MaxConns: %q", line)
	}
	p.Close()
	if _, err := c.Read(buf); err == nil {
		t.Fatal("tunnel still open after Close")
	}
}

// BenchmarkProxy: a request through the proxy against the same request
// sent directly, both over kept-alive connections to a loopback server
// (the rule names it exactly). The difference is the proxy's cost per
// request; "connect" opens a new tunnel each time, as a client without
// keep-alive does.
func BenchmarkProxy(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello")
	}))
	defer srv.Close()
	r, err := plugin.ParseHostRule(srv.Listener.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	p := NewProxy(New([]plugin.HostRule{r}, nil), ProxyOptions{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go p.Serve(l)
	defer p.Close()
	proxyURL, _ := url.Parse("http://" + l.Addr().String())
	get := func(b *testing.B, c *http.Client) {
		resp, err := c.Get(srv.URL + "/")
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatal(resp.Status)
		}
	}
	run := func(name string, tr *http.Transport) {
		b.Run(name, func(b *testing.B) {
			c := &http.Client{Transport: tr}
			defer tr.CloseIdleConnections()
			get(b, c)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				get(b, c)
			}
		})
	}
	run("direct", &http.Transport{Proxy: nil})
	run("proxy", &http.Transport{Proxy: http.ProxyURL(proxyURL)})
	run("direct-new-conn", &http.Transport{Proxy: nil, DisableKeepAlives: true})
	run("proxy-new-conn", &http.Transport{Proxy: http.ProxyURL(proxyURL), DisableKeepAlives: true})
}
