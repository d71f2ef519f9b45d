package toolhost_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost"
	"github.com/toolhost/toolhost/plugin"
)

func writeConfig(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "config.hcl")
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A tool that fails to load is a diagnostic at its block, and every such
// failure is reported at once.
func TestOpenReportsEveryLoadFailure(t *testing.T) {
	cfg := writeConfig(t, `host { log_level = "off" }

tool "ghost" {
  go {}
}

tool "phantom" {
  go {
    tool = "nowhere"
  }
}
`)
	_, err := toolhost.Open(context.Background(), toolhost.Options{ConfigFile: cfg})
	var ce *toolhost.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want *ConfigError", err)
	}
	if len(ce.Diagnostics) != 2 {
		t.Fatalf("got %d diagnostics, want 2: %v", len(ce.Diagnostics), ce.Diagnostics)
	}
	for i, want := range []struct {
		line int
		text string
	}{{3, `no in-process tool "ghost"`}, {7, `no in-process tool "nowhere"`}} {
		d := ce.Diagnostics[i]
		if d.Subject == nil || d.Subject.Start.Line != want.line || !strings.Contains(d.Detail, want.text) {
			t.Errorf("diagnostic %d = %v at %v, want %q at line %d", i, d.Detail, d.Subject, want.text, want.line)
		}
	}
	var out strings.Builder
	if err := ce.Write(&out, 0, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `tool "ghost" {`) {
		t.Errorf("printed diagnostics lack the source line:\n%s", out.String())
	}
}

// Secrets come from secret blocks, are redacted from output, and never
// reach the audit log; the audit log has one line per call, refused ones
// included.
func TestOpenSecretsAndAudit(t *testing.T) {
	t.Setenv("TOOLHOST_TEST_TOKEN", "s3cr3t-v4lue")
	cfg := writeConfig(t, `
host {
  log_level = "off"
  audit_log = "./logs/audit.jsonl"
  cache_dir = "./cache"
}
grants {
  secrets = ["TOKEN"]
}
secret "TOKEN" {
  env = "TOOLHOST_TEST_TOKEN"
}
tool "leaky" {
  tier    = "read_only"
  secrets = ["TOKEN"]
  go {}
}
`)
	tools := plugin.NewInProcess()
	tools.Add("leaky", plugin.Func(plugin.Descriptor{Name: "leaky", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, r *plugin.Request) (*plugin.Result, error) {
			v, _ := r.Secrets.Value("TOKEN")
			return &plugin.Result{Content: []plugin.Content{plugin.Text("the token is " + v)}}, nil
		}))
	h, err := toolhost.Open(context.Background(), toolhost.Options{ConfigFile: cfg, GoTools: tools})
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.Invoke(context.Background(), plugin.Call{Name: "leaky"})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.TextContent(); got != "the token is [REDACTED:TOKEN]" {
		t.Errorf("output = %q", got)
	}
	if _, err := h.Invoke(context.Background(), plugin.Call{Name: "leaky", Arguments: json.RawMessage(`[1]`)}); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Errorf("err = %v, want INVALID_REQUEST", err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}

	b, err := os.ReadFile(filepath.Join(filepath.Dir(cfg), "logs", "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "s3cr3t") {
		t.Errorf("the audit log holds the secret value:\n%s", b)
	}
	var recs []plugin.AuditRecord
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		var r plugin.AuditRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		recs = append(recs, r)
	}
	if len(recs) != 2 {
		t.Fatalf("got %d audit records, want 2:\n%s", len(recs), b)
	}
	if r := recs[0]; r.Tool != "leaky" || r.Tier != "read_only" || r.Decision != plugin.DecisionAllowed || r.Code != "" || r.BytesOut == 0 || r.CallID == "" {
		t.Errorf("first record = %+v", r)
	}
	if r := recs[1]; r.Code != plugin.CodeInvalidRequest || r.Decision != plugin.DecisionRejected {
		t.Errorf("second record = %+v", r)
	}
	if fi, err := os.Stat(filepath.Join(filepath.Dir(cfg), "logs", "audit.jsonl")); err == nil && fi.Mode().Perm() != 0o600 {
		t.Errorf("audit log mode = %v, want 0600", fi.Mode().Perm())
	}
}

// A secret whose source is missing fails the call, naming the secret but
// never a value, and the host keeps serving.
func TestOpenMissingSecret(t *testing.T) {
	cfg := writeConfig(t, `
host { log_level = "off" }
grants { secrets = ["ABSENT"] }
secret "ABSENT" { env = "TOOLHOST_TEST_ABSENT_VAR" }
tool "needs" {
  secrets = ["ABSENT"]
  go {}
}
tool "fine" {
  go {}
}
`)
	tools := plugin.NewInProcess()
	ok := func(context.Context, *plugin.Request) (*plugin.Result, error) {
		return &plugin.Result{Content: []plugin.Content{plugin.Text("ok")}}, nil
	}
	tools.Add("needs", plugin.Func(plugin.Descriptor{Name: "needs"}, ok))
	tools.Add("fine", plugin.Func(plugin.Descriptor{Name: "fine"}, ok))
	h, err := toolhost.Open(context.Background(), toolhost.Options{ConfigFile: cfg, GoTools: tools})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	_, err = h.Invoke(context.Background(), plugin.Call{Name: "needs"})
	if !errors.Is(err, plugin.ErrToolUnavailable) || !strings.Contains(err.Error(), "TOOLHOST_TEST_ABSENT_VAR is not set") {
		t.Errorf("err = %v", err)
	}
	if res, err := h.Invoke(context.Background(), plugin.Call{Name: "fine"}); err != nil || res.TextContent() != "ok" {
		t.Errorf("next call: %v %v", res, err)
	}
}
