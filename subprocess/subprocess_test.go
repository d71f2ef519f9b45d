package subprocess

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/plugin"
)

func TestPluginCall(t *testing.T) {
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
			"unshare=operation not permitted", "ptrace=operation not permitted", "keyctl=operation not permitted",
			"bpf=operation not permitted", "mount=operation not permitted"} {
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
	})
	a.Close()
	assertNoneLeft(t, mark, 2*time.Second)
}

func TestLoadRefusals(t *testing.T) {
	a := newTestAdapter(t, nil)
	base := t.TempDir()
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
