package subprocess

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/plugin"
)

// Issue 23, part 3: bash.read-only answered `cat < /dev/tcp/127.0.0.1/PORT`
// with a local listener's bytes, and shell.exec reached 127.0.0.1 and [::1].
// A tool granted no network hosts now has no network at all.

// listeners opens a TCP listener on 127.0.0.1 and on [::1] and a UDP socket
// on 127.0.0.1 that count what reaches them, and returns their ports.
func listeners(t *testing.T) (tcp4, tcp6, udp4 int, seen *atomic.Int64) {
	t.Helper()
	seen = new(atomic.Int64)
	accept := func(l net.Listener) {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			seen.Add(1)
			c.Write([]byte("LISTENER-SECRET\n"))
			c.Close()
		}
	}
	l4, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l4.Close() })
	go accept(l4)
	tcp6 = -1
	if l6, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		t.Cleanup(func() { l6.Close() })
		go accept(l6)
		tcp6 = l6.Addr().(*net.TCPAddr).Port
	}
	u, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			if _, _, err := u.ReadFrom(buf); err != nil {
				return
			}
			seen.Add(1)
		}
	}()
	return l4.Addr().(*net.TCPAddr).Port, tcp6, u.LocalAddr().(*net.UDPAddr).Port, seen
}

// netProbe is a shell command that tries every way out and prints what it
// got; "probe-done" shows it ran to its end.
func netProbe(tcp4, tcp6, udp4 int) string {
	cmds := []string{
		fmt.Sprintf("cat < /dev/tcp/127.0.0.1/%d", tcp4),
		fmt.Sprintf("echo exfiltrate > /dev/udp/127.0.0.1/%d", udp4),
		"getent hosts example.com",
	}
	if tcp6 > 0 {
		cmds = append(cmds, fmt.Sprintf("cat < /dev/tcp/::1/%d", tcp6))
	}
	return "bash -c '" + strings.Join(cmds, "; ") + "; echo probe-done'"
}

func TestNoNetworkWithoutHosts(t *testing.T) {
	t.Parallel() // mostly waits (helper_test.go)
	tcp4, tcp6, udp4, seen := listeners(t)
	probe := netProbe(tcp4, tcp6, udp4)
	a := newTestAdapter(t, nil)
	shell, _ := builtinTool(t, a, BuiltinShellExec, nil)
	res, err := shellCall(t, shell, map[string]any{"command": probe})
	if err != nil {
		t.Fatal(err)
	}
	out := res.TextContent()
	if !strings.Contains(out, "probe-done") || strings.Contains(out, "LISTENER-SECRET") {
		t.Fatalf("shell.exec:\n%s", out)
	}
	// bash.read-only, as in the report: a redirection that reads.
	ro, _ := builtinTool(t, a, BuiltinBashReadOnly, nil)
	res, err = shellCall(t, ro, map[string]any{"command": fmt.Sprintf("cat < /dev/tcp/127.0.0.1/%d", tcp4)})
	if err == nil && strings.Contains(res.TextContent(), "LISTENER-SECRET") {
		t.Fatalf("bash.read-only read a local listener:\n%s", res.TextContent())
	}
	time.Sleep(100 * time.Millisecond) // a connection in flight would have arrived
	if n := seen.Load(); n != 0 {
		t.Fatalf("the listeners saw %d connections or packets", n)
	}
	// Loopback inside the tool's own namespace works: a tool may talk to
	// itself.
	if a.Hardening().NetNamespace {
		res, err = shellCall(t, shell, map[string]any{"command": "bash -c 'exec 3<>/dev/udp/127.0.0.1/9 && echo own-loopback-ok'"})
		if err != nil || !strings.Contains(res.TextContent(), "own-loopback-ok") {
			t.Fatalf("the tool's own loopback: %v %v", res, err)
		}
	}
	if got, err := shellCall(t, ro, map[string]any{"command": "echo ok"}); err != nil || !strings.Contains(got.TextContent(), "ok") {
		t.Fatalf("after the probes: %v %v", got, err)
	}
}

// TestNoNetworkUnderUnprivilegedHost: a host that cannot make network
// namespaces refuses inet sockets to an offline tool with seccomp.
func TestNoNetworkUnderUnprivilegedHost(t *testing.T) {
	t.Parallel() // mostly waits (helper_test.go)
	tcp4, tcp6, udp4, seen := listeners(t)
	out := shellHost(t, &syscall.Credential{Uid: nobody.UID, Gid: nobody.GID}, netProbe(tcp4, tcp6, udp4))
	if !strings.Contains(out, "seccomp refuses inet sockets") || !strings.Contains(out, "probe-done") || strings.Contains(out, "LISTENER-SECRET") {
		t.Fatalf("host output:\n%s", out)
	}
	time.Sleep(100 * time.Millisecond)
	if n := seen.Load(); n != 0 {
		t.Fatalf("the listeners saw %d connections or packets", n)
	}
}

// grantedServers starts a plain and a TLS server on 127.0.0.1 that a tool
// is granted, and returns the rules naming them exactly.
func grantedServers(t *testing.T) (plain, tls *httptest.Server, hosts []plugin.HostRule) {
	t.Helper()
	plain = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "granted-body %s", r.URL.Path)
	}))
	t.Cleanup(plain.Close)
	tls = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "granted-tls %s", r.URL.Path)
	}))
	t.Cleanup(tls.Close)
	for _, s := range []*httptest.Server{plain, tls} {
		r, err := plugin.ParseHostRule(s.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, r)
	}
	return plain, tls, hosts
}

// TestGrantedHostsThroughTheProxy: a tool granted hosts reaches them, by
// HTTP and HTTPS, through the proxy the host hands it, and nothing else:
// not another local port, not the granted server directly, not DNS.
func TestGrantedHostsThroughTheProxy(t *testing.T) {
	t.Parallel() // mostly waits (helper_test.go)
	// Go's client never proxies loopback addresses: the plugin names the
	// server granted.test, which resolves to it.
	a := newTestAdapter(t, func(c *Config) {
		c.Lookup = func(_ context.Context, host string) ([]netip.Addr, error) {
			if host == "granted.test" {
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			}
			return nil, fmt.Errorf("lookup %s: no such host", host)
		}
	})
	if !a.Hardening().NetNamespace {
		t.Skip("no network namespaces here: TestGrantedHostsNeedANamespace covers this host")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	plain, secure, hosts := grantedServers(t)
	tcp4, _, _, seen := listeners(t)
	shell, _ := builtinTool(t, a, BuiltinShellExec, func(s *plugin.Spec) { s.Capabilities.Hosts = hosts })
	run := func(command string) string {
		t.Helper()
		res, err := shellCall(t, shell, map[string]any{"command": command})
		if err != nil {
			t.Fatalf("%s: %v", command, err)
		}
		return res.TextContent()
	}
	for _, tc := range []struct{ command, want string }{
		{"curl -sS --max-time 5 " + plain.URL + "/a", "granted-body /a"},
		{"curl -sSk --max-time 5 " + secure.URL + "/b", "granted-tls /b"},
		{fmt.Sprintf("curl -sS --max-time 5 http://127.0.0.1:%d/", tcp4), "refused"},
		{fmt.Sprintf("curl -sSk --max-time 5 https://127.0.0.1:%d/", tcp4), "403"},
		{"echo $HTTPS_PROXY", fmt.Sprintf("http://127.0.0.1:%d", proxyPort)},
	} {
		if out := run(tc.command); !strings.Contains(out, tc.want) {
			t.Errorf("%s:\n%s\nwant %q", tc.command, out, tc.want)
		}
	}
	// Around the proxy: the granted server directly, another port, DNS.
	port := plain.Listener.Addr().(*net.TCPAddr).Port
	direct := run(fmt.Sprintf("curl -sS --noproxy '*' --max-time 5 %s/direct; cat < /dev/tcp/127.0.0.1/%d; cat < /dev/tcp/127.0.0.1/%d; getent hosts example.com; echo probe-done", plain.URL, port, tcp4))
	if strings.Contains(direct, "granted-body") || strings.Contains(direct, "LISTENER-SECRET") || !strings.Contains(direct, "probe-done") {
		t.Errorf("around the proxy:\n%s", direct)
	}
	// The plugin tier: Go's default client finds the proxy by itself. The
	// name is granted, and so is the loopback address it resolves to
	// (named exactly, as an operator must for a non-public address).
	named, err := plugin.ParseHostRule(fmt.Sprintf("granted.test:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	tool := load(t, a, func() *plugin.Spec {
		s := testSpec(testPluginSum(), "fetch", "serve", "proxy-fetch")
		s.Capabilities.Hosts = append(hosts, named)
		return s
	}())
	for _, tc := range []struct{ url, want string }{
		{fmt.Sprintf("http://granted.test:%d/plugin", port), "status 200: granted-body /plugin"},
		{fmt.Sprintf("http://granted.test:%d/", tcp4), "status 403"},
	} {
		res, err := call(t, tool, fmt.Sprintf(`{"path":%q}`, tc.url), 20*time.Second)
		if err != nil || !strings.Contains(res.TextContent(), tc.want) {
			t.Errorf("fetch %s: %v %v, want %q", tc.url, res, err, tc.want)
		}
	}
	dial := load(t, a, func() *plugin.Spec {
		s := testSpec(testPluginSum(), "dial", "serve", "proxy-dial")
		s.Capabilities.Hosts = hosts
		return s
	}())
	res, err := call(t, dial, fmt.Sprintf(`{"path":"127.0.0.1:%d"}`, tcp4), 20*time.Second)
	if err != nil || !strings.Contains(res.TextContent(), "dial error") {
		t.Errorf("direct dial from a plugin: %v %v", res, err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := seen.Load(); n != 0 {
		t.Fatalf("the ungranted listener saw %d connections", n)
	}
}

// TestGrantedHostsNeedANamespace: where the host cannot make network
// namespaces, nothing would hold a tool to the proxy, so a tool granted
// hosts is refused at load, saying why.
func TestGrantedHostsNeedANamespace(t *testing.T) {
	a := newTestAdapter(t, nil)
	a.hard.NetNamespace = false
	_, _, hosts := grantedServers(t)
	spec := testSpec(testPluginSum(), "fetch", "serve", "no-netns")
	spec.Capabilities.Hosts = hosts
	_, err := a.Load(context.Background(), spec)
	if err == nil || plugin.CodeOf(err) != plugin.CodeToolUnavailable || !strings.Contains(err.Error(), "network namespace") ||
		!strings.Contains(err.Error(), hosts[0].String()) {
		t.Fatalf("err = %v", err)
	}
}
