package config_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/plugin/config"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestDiagnosticsGolden loads each file in testdata/errors and compares the
// printed diagnostics with its .golden file. Paths in the output are made
// relative to testdata so the golden files do not depend on the checkout.
func TestDiagnosticsGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/errors/*.hcl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	abs, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			p := config.NewParser().WithCatalog(testCatalog)
			cfg, diags := p.LoadFile(f)
			if !diags.HasErrors() {
				t.Fatalf("expected errors, got none")
			}
			if cfg != nil {
				t.Errorf("a configuration with errors must not be returned")
			}
			var buf bytes.Buffer
			if err := p.WriteDiagnostics(&buf, diags, 0, false); err != nil { // unwrapped: wrapping would depend on the checkout path
				t.Fatal(err)
			}
			got := strings.ReplaceAll(buf.String(), abs, "testdata")
			golden := strings.TrimSuffix(f, ".hcl") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("diagnostics differ from %s (-want +got):\n%s", golden, diff)
			}
		})
	}
}

// testCatalog stands for the built-ins of the host binary (extism/builtin
// and subprocess list the real ones, checked by their own tests).
var testCatalog = &config.Catalog{
	Wasm: map[string][]string{
		"filesystem": {"filesystem.read", "filesystem.list", "filesystem.search", "filesystem.write", "filesystem.edit", "filesystem.delete"},
		"web":        {"web.fetch", "http.request", "web.search"},
		"kb":         {"kb.learn"},
	},
	Subprocess: []string{"shell.exec", "bash.read-only"},
}

// Every diagnostic names a file, a line and a column.
func TestDiagnosticsHavePositions(t *testing.T) {
	files, _ := filepath.Glob("testdata/errors/*.hcl")
	for _, f := range files {
		_, diags := config.Load(f)
		for _, d := range diags {
			if d.Subject == nil || d.Subject.Filename == "" || d.Subject.Start.Line == 0 || d.Subject.Start.Column == 0 {
				t.Errorf("%s: diagnostic %q has no position", f, d.Summary)
			}
		}
	}
}

func TestFullConfig(t *testing.T) {
	cfg, diags := config.Load("testdata/full.hcl")
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	dir, _ := filepath.Abs("testdata")
	ws, _ := filepath.EvalSymlinks(filepath.Join(dir, "ws"))

	wantHost := config.Host{
		Workspace:    filepath.Join(dir, "ws"),
		CacheDir:     filepath.Join(dir, "cache"),
		ArtifactsDir: filepath.Join(dir, "artifacts"),
		AuditLog:     filepath.Join(dir, "audit.jsonl"),
		LogLevel:     "debug",
		MaxDepth:     3,
		PluginDir:    filepath.Join(dir, "plugins"),
		Defaults:     plugin.Limits{Timeout: 10 * time.Second, Preview: 8 << 10},
	}
	if diff := cmp.Diff(wantHost, cfg.Host); diff != "" {
		t.Errorf("host (-want +got):\n%s", diff)
	}
	wantGrants := plugin.Capabilities{
		Mounts:     []plugin.Mount{{HostPath: ws}},
		Hosts:      []plugin.HostRule{{Host: "api.example.com", Port: 443}, {Host: "*.wikipedia.org"}},
		Secrets:    []string{"API_KEY"},
		Invoke:     []string{"*"},
		Env:        []string{"LANG"},
		Subprocess: true, Sampling: true, Elicitation: true,
	}
	if diff := cmp.Diff(wantGrants, cfg.Grants); diff != "" {
		t.Errorf("grants (-want +got):\n%s", diff)
	}
	if got := cfg.Secrets["API_KEY"]; got.Env != "TOOLHOST_TEST_API_KEY" {
		t.Errorf("secret API_KEY = %+v", got)
	}

	if len(cfg.Tools) != 4 {
		t.Fatalf("got %d tools, want 4", len(cfg.Tools))
	}
	cv := cfg.Tools[0]
	if cv.Name != "count_vowels" || cv.Tier != plugin.TierReadOnly || cv.Description != "Counts vowels." {
		t.Errorf("count_vowels = %+v", cv)
	}
	wantSrc := plugin.Source{
		Kind: "wasm", Path: filepath.Join(dir, "plugins", "empty.wasm"),
		SHA256: "93a44bbb96c751218e4c00d479e4c14358122a389acca16205b1e4d0dc5f9476",
		Export: "count_vowels", Config: map[string]string{"greeting": "hi"},
	}
	if diff := cmp.Diff(wantSrc, cv.Source); diff != "" {
		t.Errorf("count_vowels source (-want +got):\n%s", diff)
	}
	var in map[string]any
	if err := json.Unmarshal(cv.InputSchema, &in); err != nil || in["type"] != "object" {
		t.Errorf("input schema = %s (%v)", cv.InputSchema, err)
	}
	if !strings.Contains(string(cv.OutputSchema), `"count"`) {
		t.Errorf("output schema from file() = %s", cv.OutputSchema)
	}
	wantLimits := plugin.Limits{
		Memory: 64 << 20, Timeout: 5 * time.Second, Fuel: 5000000, Output: 1 << 20, Arguments: 4096,
		FileDescriptors: 8, HTTPRequests: 3, HTTPResponse: 2 << 20, ToolInvocations: 2, ClientRequests: 3, LogEntries: 100,
		FileBytesRead: 1 << 20, VarSize: 64 << 10, Pool: 4, IdleTimeout: 24 * time.Hour,
	}
	if diff := cmp.Diff(wantLimits, cv.Limits); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}

	wiki := cfg.Tools[1]
	if wiki.Approval != plugin.ApprovalAlways || wiki.Source.Builtin != "web" || wiki.Source.Tool != "web.fetch" {
		t.Errorf("wiki.fetch = %+v", wiki)
	}
	wantCaps := plugin.Capabilities{
		Mounts:  []plugin.Mount{{HostPath: ws, GuestPath: "/workspace", ReadOnly: true}},
		Hosts:   []plugin.HostRule{{Host: "en.wikipedia.org"}},
		Secrets: []string{"API_KEY"},
		Invoke:  []string{"count_vowels"},
		// client.sampling and client.elicitation: the tool may ask the
		// caller's client.
		Sampling: true, Elicitation: true,
	}
	if diff := cmp.Diff(wantCaps, wiki.Capabilities); diff != "" {
		t.Errorf("wiki.fetch capabilities (-want +got):\n%s", diff)
	}

	git := cfg.Tools[2]
	if git.Tier != plugin.TierPrivileged || git.Source.Kind != "subprocess" || !git.Capabilities.Subprocess ||
		git.Source.Tool != "log" || !cmp.Equal(git.Source.Args, []string{"--verbose"}) || !cmp.Equal(git.Capabilities.Env, []string{"LANG"}) {
		t.Errorf("git.log = %+v", git)
	}
	if emb := cfg.Tools[3]; !emb.Disabled || emb.Source.Kind != "go" || emb.Source.Tool != "my-go-tool" {
		t.Errorf("embedded = %+v", emb)
	}

	if len(cfg.MCPServers) != 1 {
		t.Fatalf("got %d MCP servers", len(cfg.MCPServers))
	}
	m := cfg.MCPServers[0]
	if m.Name != "everything" || m.URL != "http://127.0.0.1:3001/mcp" || m.Tier != plugin.TierReadOnly ||
		m.Timeout != 20*time.Second || !cmp.Equal(m.Tools, []string{"echo", "add"}) || m.Headers["Authorization"] != "Bearer $API_KEY" ||
		!m.Elicitation || m.Sampling {
		t.Errorf("mcp server = %+v", m)
	}
	if _, ok := cfg.Range("wiki.fetch"); !ok {
		t.Errorf("no range recorded for wiki.fetch")
	}
}

// The default configuration at the repository root must always load.
func TestRepositoryDefaultConfig(t *testing.T) {
	_, diags := config.Load("../../config.hcl")
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
}

func TestMissingFile(t *testing.T) {
	_, diags := config.Load("testdata/does-not-exist.hcl")
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "no such file") {
		t.Fatalf("diags = %v", diags)
	}
}

// FuzzParse feeds arbitrary source to the parser: it must never panic, and
// either return a configuration or at least one error diagnostic.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"testdata/full.hcl", "testdata/errors/many.hcl", "testdata/errors/limits.hcl", "testdata/errors/grants.hcl", "testdata/errors/declared.hcl", "testdata/declared/declared.hcl"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`tool "x" { go {} limits { memory = "1e400MiB" } }`))
	f.Fuzz(func(t *testing.T, src []byte) {
		cfg, diags := config.NewParser().Parse(src, "testdata/fuzz.hcl")
		if cfg == nil && !diags.HasErrors() {
			t.Fatalf("no configuration and no error")
		}
		if cfg != nil && diags.HasErrors() {
			t.Fatalf("configuration returned despite errors")
		}
	})
}

// pool = -1 turns the instance pool off, as plugin.Limits documents; other
// negative values are refused.
func TestPoolOff(t *testing.T) {
	cfg, diags := config.NewParser().Parse([]byte(`tool "t" {
  go {}
  limits {
    pool = -1
  }
}`), "testdata/pool.hcl")
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if got := cfg.Tools[0].Limits.Pool; got != -1 {
		t.Errorf("pool = %d, want -1", got)
	}
	_, diags = config.NewParser().Parse([]byte(`tool "t" {
  go {}
  limits {
    pool = -2
  }
}`), "testdata/pool.hcl")
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "pool") {
		t.Errorf("pool = -2: %v", diags)
	}
}

func TestSubprocessUser(t *testing.T) {
	cfg, diags := config.NewParser().Parse([]byte(`host {
  subprocess_user = "1000:100"
}`), "t.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if u := cfg.Host.SubprocessUser; u == nil || *u != [2]uint32{1000, 100} {
		t.Fatalf("SubprocessUser = %v", u)
	}
	for _, bad := range []string{"0:0", "nobody:nogroup", "1000", "1000:-1", ""} {
		_, diags := config.NewParser().Parse([]byte(`host {
  subprocess_user = "`+bad+`"
}`), "t.hcl")
		if !diags.HasErrors() || diags[0].Subject == nil || diags[0].Subject.Start.Line != 2 || !strings.Contains(diags[0].Detail, "subprocess_user") {
			t.Errorf("%q: %v, want an error at line 2", bad, diags)
		}
	}
}

// TestGitExampleMerge: the merge examples/plugins/git/README.md shows —
// its two tool blocks added to the repository's config.hcl, and the
// capability added to the grants block there — validates; appending the
// whole snippet instead gives one error, the second grants block, not one
// per tool it would have granted.
func TestGitExampleMerge(t *testing.T) {
	base, err := os.ReadFile("../../config.hcl")
	if err != nil {
		t.Fatal(err)
	}
	snippet, err := os.ReadFile("../../examples/plugins/git/plugin.hcl")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../examples/plugins/git/README.md")
	if err != nil || !strings.Contains(string(readme), `capabilities = ["tool.exec.subprocess"]`) {
		t.Fatalf("the README no longer shows the merge this test checks: %v", err)
	}
	dir := t.TempDir()
	for _, d := range []string{"workspace/kb", "bin"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	os.WriteFile(filepath.Join(dir, "bin", "git-plugin"), []byte("binary"), 0o755)
	pinned := strings.ReplaceAll(string(snippet), `"<output of: sha256sum bin/git-plugin>"`, `"`+strings.Repeat("ab", 32)+`"`)
	tools := pinned[strings.Index(pinned, "tool \""):]
	grants := "grants {\n"
	if !strings.Contains(string(base), grants) {
		t.Fatal("config.hcl has no grants block")
	}
	merged := strings.Replace(string(base), grants, grants+"  capabilities = [\"tool.exec.subprocess\"]\n", 1) + "\n" + tools
	check := func(src string) hcl.Diagnostics {
		file := filepath.Join(dir, "config.hcl")
		os.WriteFile(file, []byte(src), 0o644)
		_, diags := config.NewParser().WithCatalog(testCatalog).LoadFile(file)
		return diags
	}
	if diags := check(merged); diags.HasErrors() {
		t.Fatalf("the README's merge: %v", diags)
	}
	diags := check(string(base) + "\n" + pinned)
	var errs []string
	for _, d := range diags.Errs() {
		errs = append(errs, d.Error())
	}
	if len(errs) != 1 || !strings.Contains(errs[0], "Duplicate grants block") {
		t.Fatalf("appending the snippet: %d errors, want one duplicate grants block:\n%s", len(errs), strings.Join(errs, "\n"))
	}
}
