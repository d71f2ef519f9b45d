package builtin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/extism"
	"github.com/toolhost/toolhost/extism/builtin"
	"github.com/toolhost/toolhost/internal/testcache"
	"github.com/toolhost/toolhost/plugin"
)

// adapter is shared by every test so that each module compiles once per
// test binary; hosts get it wrapped so that closing a host keeps it open.
var adapter *extism.Adapter

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "toolhost-builtin-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	adapter, err = extism.New(extism.Config{
		CacheDir: testcache.Dir(filepath.Join(dir, "cache")),
		Builtins: builtin.LookupTool,
		Logger:   hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: os.Stderr}),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer adapter.Close()
	return m.Run()
}

// keepOpen lends the shared adapter to a host without letting it close it.
type keepOpen struct{ plugin.Adapter }

func (keepOpen) Close() error { return nil }

// newHost returns a host with the given tools loaded; every mount, host
// and secret the specs declare is granted.
func newHost(t testing.TB, specs ...plugin.Spec) *plugin.Host {
	t.Helper()
	var grants plugin.Capabilities
	for _, s := range specs {
		grants.Mounts = append(grants.Mounts, s.Capabilities.Mounts...)
		grants.Hosts = append(grants.Hosts, s.Capabilities.Hosts...)
		grants.Secrets = append(grants.Secrets, s.Capabilities.Secrets...)
	}
	return newHostWith(t, plugin.Options{Grants: grants}, specs...)
}

func newHostWith(t testing.TB, opts plugin.Options, specs ...plugin.Spec) *plugin.Host {
	t.Helper()
	opts.Adapters = []plugin.Adapter{keepOpen{adapter}}
	h, err := plugin.NewHost(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	for _, s := range specs {
		if err := h.Load(context.Background(), s); err != nil {
			t.Fatalf("Load(%s): %v", s.Name, err)
		}
	}
	return h
}

// fsSpec is a spec for one filesystem tool with dir mounted at /workspace
// (read-only for the read-only tools).
func fsSpec(tool, dir string, config map[string]string) plugin.Spec {
	tier := plugin.TierSideEffecting
	ro := false
	switch tool {
	case "filesystem.read", "filesystem.list", "filesystem.search":
		tier, ro = plugin.TierReadOnly, true
	}
	return plugin.Spec{
		Name:   tool,
		Tier:   tier,
		Source: plugin.Source{Kind: extism.Kind, Builtin: "filesystem", Tool: tool, Config: config},
		Capabilities: plugin.Capabilities{Mounts: []plugin.Mount{
			{HostPath: dir, GuestPath: "/workspace", ReadOnly: ro},
		}},
		Limits: plugin.Limits{FileBytesRead: 1 << 30},
	}
}

// invoke calls a tool through the host's pipeline with raw JSON arguments.
func invoke(t testing.TB, h *plugin.Host, name, args string) (*plugin.Result, error) {
	t.Helper()
	return h.Invoke(context.Background(), plugin.Call{Name: name, Arguments: json.RawMessage(args)})
}

// mustText calls a tool that must succeed and returns its text.
func mustText(t testing.TB, h *plugin.Host, name, args string) string {
	t.Helper()
	res, err := invoke(t, h, name, args)
	if err != nil {
		t.Fatalf("%s %s: %v", name, args, err)
	}
	return res.TextContent()
}

// jsonArgs marshals v as arguments.
func jsonArgs(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// writeFiles creates files (slash path → content) under dir.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// check is one table case: call a tool and expect text containing every
// want (and no notWant), or expect the error code (and the wants in the
// error message).
type check struct {
	name    string
	tool    string
	args    string
	code    plugin.Code
	want    []string
	notWant []string
}

// runChecks runs the cases; after every failing call it makes sure the
// host still answers a good call (probe).
func runChecks(t *testing.T, h *plugin.Host, probe check, cases []check) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := invoke(t, h, c.tool, c.args)
			if c.code != "" {
				if got := plugin.CodeOf(err); got != c.code {
					t.Fatalf("code = %q (err %v, text %q), want %s", got, err, res.TextContent(), c.code)
				}
				for _, w := range c.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				if res, err := invoke(t, h, probe.tool, probe.args); err != nil {
					t.Fatalf("probe call after the failure: %v", err)
				} else if text := res.TextContent(); !strings.Contains(text, probe.want[0]) {
					t.Fatalf("probe call after the failure returned %q", text)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			text := res.TextContent()
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("output does not contain %q:\n%s", w, text)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(text, w) {
					t.Errorf("output contains %q:\n%s", w, text)
				}
			}
		})
	}
}

func TestNames(t *testing.T) {
	names := builtin.Names()
	for _, n := range names {
		b, ok := builtin.Lookup(n)
		if !ok || !bytes.HasPrefix(b, []byte("\x00asm")) {
			t.Errorf("Lookup(%q) = %d bytes, %v", n, len(b), ok)
		}
	}
	if !slices.Contains(names, "filesystem") {
		t.Errorf("Names() = %v, missing filesystem", names)
	}
	// Every module go generate wrote is embedded and listed.
	files, err := filepath.Glob("wasm/*.wasm")
	if err != nil {
		t.Fatal(err)
	}
	var onDisk []string
	for _, f := range files {
		onDisk = append(onDisk, strings.TrimSuffix(filepath.Base(f), ".wasm"))
	}
	slices.Sort(onDisk)
	if !slices.Equal(onDisk, names) {
		t.Errorf("wasm/ holds %v, builtin.go embeds %v: add a variable for each module", onDisk, names)
	}
	for _, n := range names {
		b, _ := builtin.Lookup(n)
		disk, err := os.ReadFile(filepath.Join("wasm", n+".wasm"))
		if err != nil || !bytes.Equal(b, disk) {
			t.Errorf("Lookup(%q) differs from wasm/%s.wasm", n, n)
		}
		if again, _ := builtin.Lookup(n); &again[0] != &b[0] {
			t.Errorf("Lookup(%q) copies the module", n)
		}
	}
	for _, bad := range []string{"", "nope", "../wasm/filesystem", "filesystem.wasm", "GOVERSION"} {
		if _, ok := builtin.Lookup(bad); ok {
			t.Errorf("Lookup(%q) succeeded", bad)
		}
	}
	// A plugin's tools go to the module that serves them.
	for _, c := range []struct{ plugin, tool, module string }{
		{"filesystem", "filesystem.read", "filesystem-rs"},
		{"filesystem", "filesystem.list", "filesystem-rs"},
		{"filesystem", "filesystem.search", "filesystem"},
		{"filesystem", "", "filesystem"},
		{"filesystem-rs", "filesystem.read", "filesystem-rs"},
		{"web", "web.fetch", "web"},
	} {
		got, ok := builtin.LookupTool(c.plugin, c.tool)
		want, _ := builtin.Lookup(c.module)
		if !ok || &got[0] != &want[0] {
			t.Errorf("LookupTool(%q, %q) is not module %s", c.plugin, c.tool, c.module)
		}
	}
	if _, ok := builtin.LookupTool("nope", "filesystem.read"); ok {
		t.Error("LookupTool of an unknown plugin succeeded")
	}
}

// rustc returns the path of the rustc go generate uses, and skips the test
// when there is none or it is not the version that built the committed
// modules.
func rustc(t *testing.T) string {
	t.Helper()
	want, err := os.ReadFile("wasm/RUSTVERSION")
	if err != nil {
		t.Fatal(err)
	}
	got, err := exec.Command("go", "run", "./internal/gen", "-rustc").CombinedOutput()
	if err != nil {
		t.Skipf("no rustc for the Rust guests (apt-get install rustc libstd-rust-dev-wasm32): %s", bytes.TrimSpace(got))
	}
	v, path, _ := strings.Cut(strings.TrimSpace(string(got)), "\n")
	if w := strings.TrimSpace(string(want)); v != w {
		t.Skipf("the Rust modules were built with %s; this is %s (run go generate ./extism/builtin to rebuild them)", w, v)
	}
	return path
}

// TestRustGuestUnits runs the Rust guests' own unit tests, built natively
// by the rustc that builds the modules.
func TestRustGuestUnits(t *testing.T) {
	rc := rustc(t)
	libs, _ := filepath.Glob("guests/*/lib.rs")
	if len(libs) == 0 {
		t.Fatal("no Rust guest under guests/")
	}
	for _, lib := range libs {
		bin := filepath.Join(t.TempDir(), "units")
		if b, err := exec.Command(rc, "--edition", "2021", "--test", "-o", bin, lib).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", lib, err, b)
		}
		b, err := exec.Command(bin).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", lib, err, b)
		}
		if !bytes.Contains(b, []byte("test result: ok")) {
			t.Fatalf("%s:\n%s", lib, b)
		}
	}
}

// TestReproducible rebuilds the modules and compares them with the
// committed ones. Other compiler versions produce other bytes, so it needs
// the versions recorded in wasm/GOVERSION and wasm/RUSTVERSION.
func TestReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("rebuilds every plugin")
	}
	want, err := os.ReadFile("wasm/GOVERSION")
	if err != nil {
		t.Fatal(err)
	}
	gov, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	if v, w := strings.TrimSpace(string(gov)), strings.TrimSpace(string(want)); v != w {
		t.Skipf("the modules were built with %s; this is %s (run go generate ./extism/builtin to rebuild them)", w, v)
	}
	rustc(t)
	out := t.TempDir()
	cmd := exec.Command("go", "run", "./internal/gen", "-src", "guests", "-out", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen: %v\n%s", err, b)
	}
	entries, err := os.ReadDir("guests")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(builtin.Names()) {
		t.Errorf("guests/ has %d plugins, wasm/ %d: run go generate ./extism/builtin", len(entries), len(builtin.Names()))
	}
	for _, e := range entries {
		got, err := os.ReadFile(filepath.Join(out, e.Name()+".wasm"))
		if err != nil {
			t.Fatal(err)
		}
		committed, _ := builtin.Lookup(e.Name())
		if !bytes.Equal(got, committed) {
			t.Errorf("%s.wasm: rebuilding gives %d bytes that differ from the committed %d; run go generate ./extism/builtin and commit", e.Name(), len(got), len(committed))
		}
	}
}

// TestCatalog: the catalog the configuration checks names against is what
// the modules offer: each listed tool loads, and a module lists no tool of
// its plugin that the catalog leaves out.
func TestCatalog(t *testing.T) {
	cat := builtin.Catalog()
	for plugin_, tools := range cat {
		for _, tool := range tools {
			sp := plugin.Spec{Name: tool, Source: plugin.Source{Kind: extism.Kind, Builtin: plugin_, Tool: tool}}
			tl, err := adapter.Load(context.Background(), &sp)
			if err != nil {
				t.Errorf("%s/%s: %v", plugin_, tool, err)
				continue
			}
			tl.(plugin.Closer).Close()
		}
		// Asking a module for a tool it does not have lists what it has.
		sp := plugin.Spec{Name: "no.such.tool", Source: plugin.Source{Kind: extism.Kind, Builtin: plugin_, Tool: "no.such.tool"}}
		_, err := adapter.Load(context.Background(), &sp)
		if err == nil {
			t.Fatalf("%s: loaded a tool that does not exist", plugin_)
		}
		_, offers, _ := strings.Cut(err.Error(), "it offers ")
		for _, name := range strings.Split(strings.TrimSuffix(offers, ")"), ", ") {
			if !slices.Contains(tools, name) {
				t.Errorf("the %s module offers %q, which the catalog does not list", plugin_, name)
			}
		}
	}
	cat["filesystem"][0] = "changed"
	if builtin.Catalog()["filesystem"][0] == "changed" {
		t.Error("Catalog shares its slices")
	}
}
