package extism

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/extism/builtin"
	"github.com/toolhost/toolhost/extism/internal/snapshot"
	"github.com/toolhost/toolhost/plugin"
)

// snapAdapters returns two adapters sharing the package's cache: one that
// starts instances from snapshots, one that runs the initialiser in each.
func snapAdapters(t *testing.T) (on, off *Adapter) {
	t.Helper()
	var err error
	if on, err = New(Config{CacheDir: cacheDir, Builtins: builtin.LookupTool}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { on.Close() })
	if off, err = New(Config{CacheDir: cacheDir, Builtins: builtin.LookupTool, DisableSnapshots: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { off.Close() })
	return on, off
}

// comparableResult is what must be equal between a snapshot's call and a plain
// one: everything but the fuel used.
func comparableResult(t *testing.T, res *plugin.Result, err error) string {
	t.Helper()
	if err != nil {
		return "error " + string(plugin.CodeOf(err)) + ": " + err.Error()
	}
	r := *res
	r.Meta = nil
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSnapshotBehavesLikePlain runs built-in and example tools from a
// snapshot and from the plain module and compares every result.
func TestSnapshotBehavesLikePlain(t *testing.T) {
	ws := t.TempDir()
	for name, content := range map[string]string{
		"hello.txt":     "hello\nworld\n",
		"notes.txt":     "alpha\nbeta\ngamma alpha\n",
		"sub/deep.txt":  "a needle in a subdirectory\n",
		"sub/other.txt": "no match\n",
	} {
		p := filepath.Join(ws, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mount := []plugin.Mount{{HostPath: ws, GuestPath: "/workspace", ReadOnly: true}}
	fsTool := func(tool string) plugin.Spec {
		return plugin.Spec{Name: tool, Source: plugin.Source{Builtin: "filesystem", Tool: tool},
			Capabilities: plugin.Capabilities{Mounts: mount}}
	}
	withMount := func(sp plugin.Spec) plugin.Spec { sp.Capabilities.Mounts = mount; return sp }
	vowels := guestSpec("vowels", "count_vowels")
	vowels.Source.Export = "count_vowels"
	vowels.InputSchema = json.RawMessage(`{"type":"object"}`)
	vowels.OutputSchema = json.RawMessage(`{"type":"object"}`)

	on, off := snapAdapters(t)
	for _, tc := range []struct {
		name  string
		spec  plugin.Spec
		calls []any
	}{
		{"filesystem.search", fsTool("filesystem.search"), []any{map[string]any{"pattern": "needle"}, map[string]any{"pattern": "x", "path": "../outside.txt"}}},
		{"textstats text_stats", guestSpec("textstats", "text_stats"), []any{map[string]any{"text": "one two\nthree"}}},
		{"textstats grep_file", withMount(guestSpec("textstats", "grep_file")), []any{
			map[string]any{"path": "notes.txt", "contains": "alpha"},
			map[string]any{"path": "../../etc/passwd", "contains": "root"},
		}},
		{"vowels", vowels, []any{map[string]any{"text": "Hello, WebAssembly"}}},
		{"fixtures echo", guestSpec("fixtures", "echo"), []any{map[string]any{"text": "hello", "n": 3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := tc.spec
			snapTool := loadWith(t, on, sp).(*wasmTool)
			plainTool := loadWith(t, off, sp).(*wasmTool)
			if err := snapTool.ready(context.Background()); err != nil {
				t.Fatal(err)
			}
			if !snapTool.snap.on {
				t.Fatal("the module was not snapshotted")
			}
			if !slices.Equal(snapTool.snap.preopens, guestPaths(&sp)) {
				t.Fatalf("snapshot preopens %q, want %q", snapTool.snap.preopens, guestPaths(&sp))
			}
			if plainTool.snap.on {
				t.Fatal("DisableSnapshots: the module was snapshotted")
			}
			if !reflectEqual(snapTool.Descriptor(), plainTool.Descriptor()) {
				t.Errorf("descriptors differ:\nsnapshot %+v\nplain    %+v", snapTool.Descriptor(), plainTool.Descriptor())
			}
			if res, err := call(t, snapTool, &sp, tc.calls[0], nil); err != nil || res.IsError {
				t.Fatalf("first call failed: %v %s", err, comparableResult(t, res, err))
			}
			for _, args := range tc.calls {
				// Twice: the second call runs in another fresh instance.
				for range 2 {
					res, err := call(t, snapTool, &sp, args, nil)
					got := comparableResult(t, res, err)
					res, err = call(t, plainTool, &sp, args, nil)
					want := comparableResult(t, res, err)
					if got != want {
						t.Fatalf("%v:\nsnapshot %s\nplain    %s", args, got, want)
					}
				}
			}
			if snapTool.snap.plain != nil {
				t.Error("calls with the load-time mounts built the plain module")
			}
		})
	}
}

func reflectEqual(a, b plugin.Descriptor) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestSnapshotHoldsNoSecrets checks that what a call can see (a secret, a
// host environment variable, a mounted file), present before the tool is
// loaded and while it is called, never appears in the snapshot module.
func TestSnapshotHoldsNoSecrets(t *testing.T) {
	const (
		envCanary    = "env-canary-8c1f0e7d2b"
		fileCanary   = "file-canary-5a9e3c1b7f"
		secretCanary = "secret-canary-2d6b8f4a0c"
	)
	t.Setenv("TOOLHOST_TEST_CANARY", envCanary)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("line with "+fileCanary+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "cache")
	a, err := New(Config{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	sp := guestSpec("textstats", "grep_file")
	sp.Capabilities.Mounts = []plugin.Mount{{HostPath: ws, GuestPath: "/workspace", ReadOnly: true}}
	sp.Capabilities.Secrets = []string{"TOKEN"}
	tool := loadWith(t, a, sp).(*wasmTool)
	secrets := map[string]string{"TOKEN": secretCanary}
	res, err := call(t, tool, &sp, map[string]any{"path": "notes.txt", "contains": "canary"}, secrets)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(res.StructuredContent, []byte(fileCanary)) {
		t.Fatalf("the call did not read the file: %s", res.StructuredContent)
	}
	if _, err := call(t, tool, &sp, map[string]any{"path": "notes.txt", "contains": secretCanary}, secrets); err != nil {
		t.Fatal(err)
	}

	code, err := os.ReadFile(filepath.Join(a.modDir, sha256Hex([]byte(tool.key))+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	info, ok := snapshot.Describe(code)
	if !ok {
		t.Fatal("the compiled module is not a snapshot")
	}
	if !slices.Equal(info.Preopens, []string{"/workspace", "/tmp"}) {
		t.Fatalf("preopens %q", info.Preopens)
	}
	// The search is meaningful: state built by the guest's init is there.
	if !bytes.Contains(code, []byte(`"name":"grep_file"`)) {
		t.Fatal("the snapshot does not hold the tool list built during initialisation")
	}
	for _, canary := range []string{envCanary, fileCanary, secretCanary, ws} {
		if bytes.Contains(code, []byte(canary)) {
			t.Errorf("the snapshot module contains %q", canary)
		}
	}
}

// TestSnapshotOtherMounts checks that an instance whose mounts differ from
// the snapshot's gets the plain module, and that one with the same guest
// paths (other host directories) keeps the snapshot.
func TestSnapshotOtherMounts(t *testing.T) {
	dirA, dirB, dirC := t.TempDir(), t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dirA, "f.txt"), []byte("from A"), 0o644)
	os.WriteFile(filepath.Join(dirB, "f.txt"), []byte("from B"), 0o644)
	os.WriteFile(filepath.Join(dirC, "f.txt"), []byte("from C"), 0o644)
	sp := mountSpec("read", dirA, true)
	tool := load(t, sp).(*wasmTool)
	read := func(spec *plugin.Spec, path string) string {
		t.Helper()
		res, err := call(t, tool, spec, map[string]any{"path": path}, nil)
		if err != nil {
			t.Fatalf("read %s: %v", path, err)
		}
		return structured(t, res)["content"].(string)
	}
	if got := read(&sp, "/workspace/f.txt"); got != "from A" {
		t.Fatalf("load-time mounts: %q", got)
	}
	if !tool.snap.on {
		t.Fatal("the module was not snapshotted")
	}

	same := mountSpec("read", dirB, true) // same guest path, other directory
	if got := read(&same, "/workspace/f.txt"); got != "from B" {
		t.Fatalf("same guest paths: %q", got)
	}
	if tool.snap.plain != nil {
		t.Fatal("same guest paths built the plain module")
	}

	// Two mounts: the snapshot saw one directory at fd 3 and /tmp at fd 4;
	// used here, /tmp's path would resolve to the second mount.
	other := mountSpec("read", dirB, true)
	other.Capabilities.Mounts = append(other.Capabilities.Mounts, plugin.Mount{HostPath: dirC, GuestPath: "/extra", ReadOnly: true})
	if got := read(&other, "/workspace/f.txt"); got != "from B" {
		t.Fatalf("other mounts, /workspace: %q", got)
	}
	if got := read(&other, "/extra/f.txt"); got != "from C" {
		t.Fatalf("other mounts, /extra: %q", got)
	}
	if tool.snap.plain == nil {
		t.Fatal("other mounts did not use the plain module")
	}
	// The snapshot keeps serving the load-time mounts.
	if got := read(&sp, "/workspace/f.txt"); got != "from A" {
		t.Fatalf("load-time mounts after a fallback: %q", got)
	}
}

// TestSnapshotSeed checks that snapshots are stable per host (the seed file
// in the cache directory, mode 0600), so compiled code stays cached across
// restarts, and differ between hosts.
func TestSnapshotSeed(t *testing.T) {
	raw, err := os.ReadFile(wasmPath["fixtures"])
	if err != nil {
		t.Fatal(err)
	}
	code, err := renameExport(raw, "_initialize", initExport)
	if err != nil {
		t.Fatal(err)
	}
	pre := []string{"/tmp"}
	snap := func(dir string) []byte {
		a, err := New(Config{CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		out := a.preinitialize(code, sha256Hex(raw), pre, 64<<20, a.log)
		if _, ok := snapshot.Describe(out); !ok {
			t.Fatal("not snapshotted")
		}
		return out
	}
	host1, host2 := t.TempDir(), t.TempDir()
	first := snap(host1)
	fi, err := os.Stat(filepath.Join(host1, seedFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("seed file mode %v, want 0600", fi.Mode().Perm())
	}
	if !bytes.Equal(snap(host1), first) {
		t.Error("a restart with the same cache directory made another snapshot")
	}
	if bytes.Equal(snap(host2), first) {
		t.Error("two hosts made the same snapshot (same random seed)")
	}

	// Without a cache directory, one adapter makes one snapshot per module
	// and mounts (tools of one plugin share its compiled code); another
	// adapter makes another.
	a, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	one := a.preinitialize(code, sha256Hex(raw), pre, 64<<20, a.log)
	if !bytes.Equal(a.preinitialize(code, sha256Hex(raw), pre, 64<<20, a.log), one) {
		t.Error("one adapter without a cache directory made two different snapshots of a module")
	}
	if bytes.Equal(one, first) {
		t.Error("an adapter without a cache directory used the seed of another")
	}
}

// initCallsHost is a module whose initialiser calls the host (Extism's
// config_get, as go-pdk's GetConfig does), which a snapshot cannot
// capture. It exports _initialize and a raw export run that returns 0.
func initCallsHost() []byte {
	str := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	section := func(id byte, content ...[]byte) []byte {
		b := bytes.Join(content, nil)
		return append([]byte{id, byte(len(b))}, b...)
	}
	return bytes.Join([][]byte{
		{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00},
		// types: () -> (), (i64) -> i64, () -> i32
		section(1, []byte{3, 0x60, 0, 0, 0x60, 1, 0x7e, 1, 0x7e, 0x60, 0, 1, 0x7f}),
		section(2, []byte{1}, str("extism:host/env"), str("config_get"), []byte{0x00, 1}),
		section(3, []byte{2, 0, 2}),
		section(5, []byte{1, 0, 1}),
		section(7, []byte{3}, str("_initialize"), []byte{0x00, 1}, str("run"), []byte{0x00, 2}, str("memory"), []byte{0x02, 0}),
		// _initialize: config_get(0), drop; run: return 0
		section(10, []byte{2, 7, 0, 0x42, 0, 0x10, 0, 0x1a, 0x0b, 4, 0, 0x41, 0, 0x0b}),
	}, nil)
}

// syncBuffer is a log destination safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSnapshotRefused checks that a module whose initialiser calls the
// host is loaded unchanged, that the log says why, naming the import, and
// that its instances still run the initialiser.
func TestSnapshotRefused(t *testing.T) {
	var logs syncBuffer
	// A cache of its own: with a warm shared cache the transformed module
	// would be read back, and the decision this test checks never logged.
	a, err := New(Config{CacheDir: t.TempDir(), Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: &logs})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	sp := plugin.Spec{Name: "initcall", InputSchema: json.RawMessage(`{"type":"object"}`),
		Source: plugin.Source{Kind: Kind, Bytes: initCallsHost(), Export: "run"}}
	tool := loadWith(t, a, sp).(*wasmTool)
	if err := tool.ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	if tool.snap.on {
		t.Fatal("a module whose initialiser calls the host was snapshotted")
	}
	if _, err := call(t, tool, &sp, map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	if l := logs.String(); !strings.Contains(l, "not pre-initialising") || !strings.Contains(l, "extism:host/env.config_get") {
		t.Fatalf("the log does not say why the module was not snapshotted:\n%s", l)
	}
}

// TestSnapshotMemoryLimit checks that a snapshot whose memory after
// initialisation exceeds the tool's memory limit (made by an earlier load
// with a larger limit, and read back from the cache) fails the call with
// LIMIT_EXCEEDED, as running the initialiser would.
func TestSnapshotMemoryLimit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	a, err := New(Config{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	sp := guestSpec("fixtures", "echo")
	sp.InputSchema = json.RawMessage(`{"type":"object"}`)
	sp.Limits.Pool = -1
	if _, err := call(t, loadWith(t, a, sp), &sp, map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	small := sp
	small.Limits.Memory = 1 << 20
	tool := loadWith(t, a, small).(*wasmTool)
	_, err = call(t, tool, &small, map[string]any{}, nil)
	if !tool.snap.on {
		t.Fatal("the cached snapshot was not used")
	}
	var pe *plugin.Error
	if !errors.As(err, &pe) || pe.Code != plugin.CodeLimitExceeded || !strings.Contains(pe.Message, "memory") {
		t.Fatalf("call with a memory limit below the snapshot's memory: %v", err)
	}

	// A plain module whose declared initial memory exceeds the limit is
	// refused the same way (wazero would panic in the allocator).
	off, err := New(Config{CacheDir: dir, DisableSnapshots: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { off.Close() })
	plain := loadWith(t, off, small).(*wasmTool)
	if _, err = call(t, plain, &small, map[string]any{}, nil); !errors.As(err, &pe) || pe.Code != plugin.CodeLimitExceeded {
		t.Fatalf("plain module, memory limit below its initial memory: %v", err)
	}
}
