package subprocess

import (
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
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
