package subprocess

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// logBuffer collects the JSON lines of an hclog logger.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// entries decodes every line logged so far.
func (b *logBuffer) entries(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}

// find returns the first entry whose message contains msg and whose
// attributes include attrs.
func (b *logBuffer) find(t *testing.T, msg string, attrs map[string]any) map[string]any {
	t.Helper()
	for _, e := range b.entries(t) {
		m, _ := e["@message"].(string)
		if !strings.Contains(m, msg) {
			continue
		}
		match := true
		for k, v := range attrs {
			if e[k] != v {
				match = false
			}
		}
		if match {
			return e
		}
	}
	return nil
}

// newLoggedAdapter returns a test adapter whose log goes, as JSON, to the
// returned buffer.
func newLoggedAdapter(t *testing.T, level hclog.Level) (*Adapter, *logBuffer) {
	t.Helper()
	buf := &logBuffer{}
	a := newTestAdapter(t, func(c *Config) {
		c.Logger = hclog.New(&hclog.LoggerOptions{Name: "test", Level: level, JSONFormat: true, Output: buf})
	})
	return a, buf
}

// TestLoadWarning: every subprocess tool that loads is announced with a
// warning naming it and the protections in force; a refused one is not.
func TestLoadWarning(t *testing.T) {
	t.Parallel() // mostly waits (helper_test.go)
	a, logs := newLoggedAdapter(t, hclog.Warn)
	h := a.Hardening()
	s := testSpec(testPluginSum(), "echo", "serve", newMark(t))
	s.Name = "warned_plugin"
	load(t, a, s)
	builtinTool(t, a, BuiltinShellExec, nil)
	builtinTool(t, a, BuiltinBashReadOnly, nil)
	refused := testSpec(testPluginSum(), "echo", "serve", newMark(t))
	refused.Name = "refused_plugin"
	refused.Capabilities.Subprocess = false
	if _, err := a.Load(context.Background(), refused); err == nil {
		t.Fatal("loaded without the capability")
	}

	for tool, source := range map[string]string{
		"warned_plugin":     s.Source.Path,
		BuiltinShellExec:    "builtin:" + BuiltinShellExec,
		BuiltinBashReadOnly: "builtin:" + BuiltinBashReadOnly,
	} {
		e := logs.find(t, "subprocess tool loaded", map[string]any{"tool": tool})
		if e == nil {
			t.Errorf("no load warning names %s; log:\n%s", tool, logs.String())
			continue
		}
		want := map[string]any{
			"@level":        "warn",
			"@module":       "test.subprocess",
			"source":        source,
			"seccomp":       h.Seccomp,
			"landlock_abi":  float64(h.LandlockABI),
			"pid_namespace": h.PIDNamespace,
			"pids_cgroup":   h.PIDsCgroup,
			"subreaper":     h.Subreaper,
		}
		for k, v := range want {
			if e[k] != v {
				t.Errorf("load warning of %s: %s = %v, want %v", tool, k, e[k], v)
			}
		}
	}
	if e := logs.find(t, "subprocess tool loaded", map[string]any{"tool": "refused_plugin"}); e != nil {
		t.Errorf("a refused tool was announced as loaded: %v", e)
	}
}

// TestPluginOutputLogged: what a plugin writes to its stdout and stderr
// reaches the host's log, under the tool's name.
func TestPluginOutputLogged(t *testing.T) {
	t.Parallel() // mostly waits (helper_test.go)
	a, logs := newLoggedAdapter(t, hclog.Debug)
	mark := newMark(t)
	s := testSpec(testPluginSum(), "print", "serve", mark)
	s.Name = "printer"
	tool := load(t, a, s)
	res, err := call(t, tool, `{"text":"`+mark+`"}`, 10*time.Second)
	if err != nil || res.TextContent() != "<nil>" {
		t.Fatalf("print: %v, %v", res, err)
	}
	for _, want := range []struct{ msg, level string }{
		// os.Stdout and os.Stderr, forwarded by go-plugin over gRPC.
		{"plugin stdout: " + mark, "info"},
		{"plugin stderr: " + mark, "info"},
		// Descriptor 2, the pipe the shim was started with.
		{"plugin fd2: " + mark, "debug"},
	} {
		var e map[string]any
		deadline := time.Now().Add(5 * time.Second)
		for e == nil && time.Now().Before(deadline) {
			if e = logs.find(t, want.msg, nil); e == nil {
				time.Sleep(10 * time.Millisecond)
			}
		}
		if e == nil {
			t.Errorf("%q never reached the log:\n%s", want.msg, logs.String())
			continue
		}
		if mod, _ := e["@module"].(string); e["@level"] != want.level || !strings.HasPrefix(mod, "test.subprocess.printer") {
			t.Errorf("%q logged as %v %v; want %s under test.subprocess.printer", want.msg, e["@level"], e["@module"], want.level)
		}
	}
	a.Close()
	assertNoneLeft(t, mark, 2*time.Second)
}

// TestNormalStopIsNotAnError: a plugin the host stops (adapter closed after
// a successful call) is not logged as an error; a plugin that dies on its
// own still is.
func TestNormalStopIsNotAnError(t *testing.T) {
	t.Parallel() // mostly waits (helper_test.go)
	a, logs := newLoggedAdapter(t, hclog.Debug)
	mark := newMark(t)
	s := testSpec(testPluginSum(), "print", "serve", mark)
	s.Name = "printer"
	tool := load(t, a, s)
	if _, err := call(t, tool, `{"text":"hello"}`, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	a.Close()
	assertNoneLeft(t, mark, 2*time.Second)
	var exited map[string]any
	deadline := time.Now().Add(5 * time.Second)
	for exited == nil && time.Now().Before(deadline) {
		if exited = logs.find(t, "plugin process exited", nil); exited == nil {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if exited == nil {
		t.Fatalf("go-plugin never logged the exit:\n%s", logs.String())
	}
	for _, e := range logs.entries(t) {
		if e["@level"] == "error" {
			t.Errorf("normal stop logged an error: %v", e)
		}
	}
}
