package subprocess

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/shared/pluginv1"
)

func TestPluginCall(t *testing.T) {
	t.Parallel() // mostly waits (helper_test.go)
	a := newTestAdapter(t, nil)
	mark := newMark(t)
	tool := load(t, a, testSpec(testPluginSum(), "echo", "serve", mark))
	if d := tool.Descriptor(); d.Name != "echo" || d.Description != "test tool echo" || string(d.InputSchema) != `{"type":"object"}` {
		t.Fatalf("descriptor = %+v", d)
	}
	res, err := call(t, tool, `{"text":"hi"}`, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.TextContent(); got != "echo: hi" {
		t.Fatalf("got %q", got)
	}
	a.Close()
	assertNoneLeft(t, mark, 2*time.Second)
	if _, err := call(t, tool, `{}`, time.Second); !errors.Is(err, plugin.ErrToolUnavailable) {
		t.Fatalf("call after Close: %v", err)
	}
}

func TestSandbox(t *testing.T) {
	h := Report()
	a := newTestAdapter(t, nil)
	mark := newMark(t)
	spec := func(tool string) *plugin.Spec {
		s := testSpec(testPluginSum(), tool, "serve", mark)
		s.Limits.FileDescriptors = 48
		s.Limits.Memory = 128 << 20
		return s
	}
	text := func(tool plugin.Tool, args string) string {
		t.Helper()
		res, err := call(t, tool, args, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return res.TextContent()
	}

	t.Run("rlimits", func(t *testing.T) {
		got := text(load(t, a, spec("rlimits")), `{}`)
		data := "402653184"
		if raceEnabled {
			data = "1125900041060352"
		}
		want := "core=0 cpu=600 data=" + data + " fsize=67108864 nofile=48 as=18446744073709551615"
		if got != want {
			t.Fatalf("rlimits:\n got %s\nwant %s", got, want)
		}
	})
	t.Run("seccomp", func(t *testing.T) {
		if !h.Seccomp {
			t.Skip("no seccomp here")
		}
		got := text(load(t, a, spec("syscalls")), `{}`)
		for _, s := range []string{"setsid=operation not permitted", "setpgid=operation not permitted",
			"unshare=operation not permitted", "setns=operation not permitted", "ptrace=operation not permitted", "keyctl=operation not permitted",
			"bpf=operation not permitted", "mount=operation not permitted",
			// Namespace-creating clone refused, clone3 made to look absent
			// (libc then falls back to clone, whose flags the filter reads).
			"clone-newuser=operation not permitted", "clone3=function not implemented"} {
			if !strings.Contains(got, s) {
				t.Errorf("want %s in %s", s, got)
			}
		}
	})
	t.Run("environment", func(t *testing.T) {
		t.Setenv("TOOLHOST_TEST_SECRET", "s3cret")
		t.Setenv("TOOLHOST_TEST_ALLOWED", "yes")
		s := spec("env")
		s.Source.Env = []string{"TOOLHOST_TEST_ALLOWED"}
		got := text(load(t, a, s), `{}`)
		if strings.Contains(got, "s3cret") || !strings.Contains(got, "TOOLHOST_TEST_ALLOWED=yes") {
			t.Fatalf("environment:\n%s", got)
		}
		for _, v := range strings.Split(got, "\x00") {
			name, _, _ := strings.Cut(v, "=")
			switch name {
			case "PATH", "HOME", "TMPDIR", "LANG", "TOOLHOST_TEST_ALLOWED", "TOOLHOST_PLUGIN",
				"PLUGIN_MIN_PORT", "PLUGIN_MAX_PORT", "PLUGIN_PROTOCOL_VERSIONS", "PLUGIN_CLIENT_CERT",
				"PLUGIN_UNIX_SOCKET_DIR":
			default:
				t.Errorf("unexpected variable %s", name)
			}
		}
	})
	t.Run("cwd is scratch", func(t *testing.T) {
		got := text(load(t, a, spec("cwd")), `{}`)
		if !strings.HasPrefix(got, a.cfg.ScratchDir+"/p-") {
			t.Fatalf("cwd = %s, want under %s", got, a.cfg.ScratchDir)
		}
	})
	t.Run("landlock", func(t *testing.T) {
		if !h.Landlock {
			t.Skip("no Landlock here")
		}
		tool := load(t, a, spec("write"))
		outside := filepath.Join(t.TempDir(), "escaped")
		if got := text(tool, `{"path":"`+outside+`"}`); !strings.Contains(got, "permission denied") {
			t.Fatalf("write outside scratch: %s", got)
		}
		if _, err := os.Stat(outside); err == nil {
			t.Fatal("file written outside the sandbox")
		}
		if got := text(tool, `{"path":"inside"}`); got != "<nil>" {
			t.Fatalf("write inside scratch: %s", got)
		}
		// The plugin's own directory (here the test binary's, which the
		// test process may write) is readable, not writable.
		exe, _ := os.Executable()
		own := filepath.Join(filepath.Dir(exe), "written-by-plugin")
		t.Cleanup(func() { os.Remove(own) })
		if got := text(tool, `{"path":"`+own+`"}`); !strings.Contains(got, "permission denied") && !strings.Contains(got, "operation not permitted") {
			t.Fatalf("write in the plugin's directory: %s", got)
		}
		if _, err := os.Stat(own); err == nil {
			t.Fatal("file written in the plugin's directory")
		}
		if err := os.WriteFile(own, nil, 0o600); err != nil {
			t.Fatalf("the test process cannot write there either, so the check proves nothing: %v", err)
		}
	})
	t.Run("inherited descriptors", func(t *testing.T) {
		// Descriptors the host holds reach no plugin: Go opens its own
		// with O_CLOEXEC; a descriptor the host itself inherited without
		// it (from a shell, a supervisor) must not pass either.
		r1, w1, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r1.Close()
		defer w1.Close()
		r2, w2, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r2.Close()
		defer w2.Close()
		if _, err := unix.FcntlInt(w2.Fd(), unix.F_SETFD, 0); err != nil {
			t.Fatal(err)
		}
		pipeOf := func(f *os.File) string {
			l, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
			return l
		}
		cloexec, inherited := pipeOf(w1), pipeOf(w2)
		m := mark + "-fds"
		s := testSpec(testPluginSum(), "echo", "serve", m)
		s.Name = "fds_probe"
		tool := load(t, a, s)
		mustServe(t, tool)
		pids := marked(m)
		if len(pids) != 1 {
			t.Fatalf("plugin processes %v", pids)
		}
		shim, _ := statFields(pids[0])
		var leaked []string
		for _, pid := range []int{pids[0], shim} {
			ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
			for _, e := range ents {
				l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
				if l == cloexec {
					t.Errorf("process %d has the host's O_CLOEXEC pipe as fd %s", pid, e.Name())
				}
				if l == inherited {
					leaked = append(leaked, fmt.Sprintf("process %d fd %s", pid, e.Name()))
				}
			}
		}
		tool.(*pluginTool).stopAll()
		assertNoneLeft(t, m, 2*time.Second)
		if len(leaked) > 0 {
			t.Errorf("a descriptor the host inherited without O_CLOEXEC reaches the sandbox: %s", strings.Join(leaked, ", "))
		}
	})
	a.Close()
	assertNoneLeft(t, mark, 2*time.Second)
}

func TestLoadRefusals(t *testing.T) {
	t.Parallel() // mostly waits (helper_test.go)
	a := newTestAdapter(t, nil)
	base := sandboxDir(t)
	dir := filepath.Join(base, "plugins")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "outside"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	tests := []struct {
		name string
		mod  func(*plugin.Spec)
		cfg  func(*Config)
		code plugin.Code
		msg  string
	}{
		{"no subprocess capability", func(s *plugin.Spec) { s.Capabilities.Subprocess = false }, nil, plugin.CodeCapabilityDenied, "tool.exec.subprocess"},
		{"unpinned", func(s *plugin.Spec) { s.Source.SHA256 = "" }, nil, plugin.CodePermissionDenied, testPluginSum()},
		{"wrong pin", func(s *plugin.Spec) { s.Source.SHA256 = strings.Repeat("ab", 32) }, nil, plugin.CodeToolUnavailable, "does not match its pinned sha256"},
		{"bad pin", func(s *plugin.Spec) { s.Source.SHA256 = "xyz" }, nil, plugin.CodeInvalidRequest, "64 hex digits"},
		{"relative without plugin dir", func(s *plugin.Spec) { s.Source.Path = "plugin" }, nil, plugin.CodeInvalidRequest, "must be absolute"},
		{"dot-dot escape", func(s *plugin.Spec) {
			s.Source.Path = "../outside"
		},
			func(c *Config) { c.PluginDir = dir }, plugin.CodeInvalidRequest, "outside the plugin directory"},
		{"absolute outside", func(s *plugin.Spec) {}, func(c *Config) { c.PluginDir = dir }, plugin.CodeInvalidRequest, "outside the plugin directory"},
		{"unknown tool", func(s *plugin.Spec) { s.Source.Tool = "nope" }, nil, plugin.CodeToolNotFound, `not "nope"`},
		{"unknown builtin", func(s *plugin.Spec) { s.Source.Builtin = "rm.rf" }, nil, plugin.CodeToolNotFound, "no built-in"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ad := a
			if tc.cfg != nil {
				ad = newTestAdapter(t, tc.cfg)
			}
			spec := testSpec(testPluginSum(), "echo", "serve", newMark(t))
			tc.mod(spec)
			_, err := ad.Load(context.Background(), spec)
			var pe *plugin.Error
			if !errors.As(err, &pe) || pe.Code != tc.code || !strings.Contains(pe.Error(), tc.msg) {
				t.Fatalf("err = %v; want %s containing %q", err, tc.code, tc.msg)
			}
		})
	}
	// A symlink inside the plugin directory that points out of it.
	if err := os.Symlink(exe, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	ad := newTestAdapter(t, func(c *Config) { c.PluginDir = dir })
	spec := testSpec(testPluginSum(), "echo", "serve", newMark(t))
	spec.Source.Path = "link"
	if _, err := ad.Load(context.Background(), spec); err == nil || !strings.Contains(err.Error(), "outside the plugin directory") {
		t.Fatalf("symlink escape: %v", err)
	}
}

// TestAutoMTLS: the gRPC connection to a plugin is mutual TLS. The plugin
// gets the host's client certificate in PLUGIN_CLIENT_CERT, and its socket
// speaks only TLS and demands a client certificate, while the host's calls
// go through.
func TestAutoMTLS(t *testing.T) {
	t.Parallel() // mostly waits (helper_test.go)
	a := newTestAdapter(t, nil)
	mark := newMark(t)
	tool := load(t, a, testSpec(testPluginSum(), "env", "serve", mark))
	res, err := call(t, tool, `{}`, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var certPEM string
	for _, v := range strings.Split(res.TextContent(), "\x00") {
		if c, ok := strings.CutPrefix(v, "PLUGIN_CLIENT_CERT="); ok {
			certPEM = c
		}
	}
	block, _ := pem.Decode([]byte(certPEM))
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("PLUGIN_CLIENT_CERT is not a PEM certificate: %q", certPEM)
	}
	if _, err := x509.ParseCertificate(block.Bytes); err != nil {
		t.Fatalf("PLUGIN_CLIENT_CERT: %v", err)
	}

	pt := tool.(*pluginTool)
	pt.mu.Lock()
	rc := pt.cur.client.ReattachConfig()
	pt.mu.Unlock()
	if rc == nil || rc.Addr.Network() != "unix" {
		t.Fatalf("reattach config %+v", rc)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	// A TLS client without a certificate: the plugin presents its own
	// certificate, then refuses the connection for want of the client's.
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", rc.Addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true, ServerName: "localhost"})
	err = tc.HandshakeContext(ctx)
	if err == nil {
		if len(tc.ConnectionState().PeerCertificates) == 0 {
			t.Fatal("the plugin presented no certificate")
		}
		_, err = tc.Read(make([]byte, 1)) // TLS 1.3: the refusal comes after the handshake
	}
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a TLS client without a certificate: %v; want the plugin to require one", err)
	}

	// Plain gRPC is refused.
	cc, err := grpc.NewClient("unix://"+rc.Addr.String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	if _, err := pluginv1.NewToolsClient(cc).ListTools(ctx, &pluginv1.ListToolsRequest{}); err == nil {
		t.Fatal("the plugin answered plaintext gRPC")
	}

	// The host's own connection works.
	if _, err := call(t, tool, `{}`, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	a.Close()
	assertNoneLeft(t, mark, 2*time.Second)
}
