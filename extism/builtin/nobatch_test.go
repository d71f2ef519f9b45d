package builtin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/toolhost/toolhost/extism/builtin"
	"github.com/toolhost/toolhost/internal/testcache"
)

// TestFilesystemWithoutBatchReads runs filesystem.search, .read and .list as a
// plain Extism host does (go-sdk with its own mounts, Extism input and
// output, and toolhost_fs_submit answering ENOSYS, as toolhost does off
// Linux): the Go guest reads and examines file by file, and the answers
// are those the tools give through toolhost. toolhost_config_get answers
// ENOSYS too: the guests read their config (max_entries, which stops the
// deep listing) through Extism's config_get.
func TestFilesystemWithoutBatchReads(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a.txt":         "one needle\nNEEDLE two\n",
		"m/b.go":        "package m // needle\n",
		"m/deep/c.md":   "no\nneedle deep\n",
		"z.bin":         "needle\x00binary",
		".gitignore":    "ignored/\n",
		"ignored/d.txt": "needle ignored\n",
		"large/big.txt": strings.Repeat("filler\n", 200<<10) + "needle at the end\n",
		"many/f00.txt":  "x",
		"many/f01.txt":  "needle\n",
		"many/f02.txt":  "",
	}
	writeFiles(t, dir, files)

	ctx := context.Background()
	cfg := map[string]string{"max_entries": "5"}
	// Each tool runs in the module that serves it (search in Go, list in
	// Rust): both must work on a plain Extism host.
	compiled := map[*byte]*extism.CompiledPlugin{} // by module
	module := func(tool string) *extism.CompiledPlugin {
		t.Helper()
		wasm, ok := builtin.LookupTool("filesystem", tool)
		if !ok {
			t.Fatalf("no module for %s", tool)
		}
		if cp := compiled[&wasm[0]]; cp != nil {
			return cp
		}
		cp := plainCompile(t, wasm, map[string]string{dir: "/workspace"}, cfg)
		compiled[&wasm[0]] = cp
		return cp
	}
	plain := func(tool, args string) string {
		t.Helper()
		p, err := module(tool).Instance(ctx, extism.PluginInstanceConfig{})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(ctx)
		_, out, err := p.Call("call_tool", []byte(fmt.Sprintf(`{"params":{"name":%q,"arguments":%s}}`, tool, args)))
		if err != nil {
			t.Fatalf("%s %s: %v", tool, args, err)
		}
		var res struct {
			Content []struct{ Text string } `json:"content"`
		}
		if err := json.Unmarshal(out, &res); err != nil || len(res.Content) != 1 {
			t.Fatalf("%s %s: %s (%v)", tool, args, out, err)
		}
		return res.Content[0].Text
	}

	for _, c := range []struct{ tool, args string }{
		{"filesystem.search", `{"pattern":"needle"}`},
		{"filesystem.search", `{"pattern":"needle","case_sensitive":false}`},
		{"filesystem.search", `{"pattern":"need\\w+","regex":true}`},
		{"filesystem.search", `{"pattern":"needle","max_results":2}`},
		{"filesystem.read", `{"path":"a.txt","offset":2}`},
		{"filesystem.read", `{"path":"m/deep/c.md","limit":1}`},
		{"filesystem.list", `{"path":"many"}`},
		{"filesystem.list", `{"depth":3}`},
	} {
		h := newHost(t, fsSpec(c.tool, dir, cfg))
		batched := mustText(t, h, c.tool, c.args)
		if c.args == `{"depth":3}` && !strings.Contains(batched, "[listing stopped at 5 entries") {
			t.Errorf("the deep listing was not stopped by max_entries = 5:\n%s", batched)
		}
		if got := plain(c.tool, c.args); got != batched {
			t.Errorf("%s %s without batch reads:\n%s\nwith them:\n%s", c.tool, c.args, got, batched)
		}
	}
}

// plainCompile compiles a built-in module for plain go-sdk, as another
// Extism host runs it: mounts and config its own, and toolhost's host
// functions answering ENOSYS, as toolhost's do where they are not offered.
// The machine code comes from the tests' shared compilation cache (under
// -race, compiled by a helper built without it: internal/testcache); it is
// what wazero would compile here.
func plainCompile(t *testing.T, wasm []byte, mounts, cfg map[string]string) *extism.CompiledPlugin {
	t.Helper()
	enosys := int32(52)
	i32 := extism.ValueTypeI32
	answer := func(_ context.Context, _ *extism.CurrentPlugin, stack []uint64) { stack[0] = uint64(uint32(-enosys)) }
	ctx := context.Background()
	testcache.Precompile(wasm)
	cp, err := extism.NewCompiledPlugin(ctx, extism.Manifest{
		Wasm:         []extism.Wasm{extism.WasmData{Data: wasm}},
		AllowedPaths: mounts,
		Config:       cfg,
	}, extism.PluginConfig{EnableWasi: true, RuntimeConfig: wazero.NewRuntimeConfig().WithCompilationCache(testcache.Cache())}, []extism.HostFunction{
		extism.NewHostFunctionWithStack("toolhost_fs_submit", answer, []extism.ValueType{i32, i32, i32, i32, extism.ValueTypeI64, i32, i32, i32}, []extism.ValueType{i32}),
		extism.NewHostFunctionWithStack("toolhost_fs_take", answer, []extism.ValueType{i32, i32, i32}, []extism.ValueType{i32}),
		extism.NewHostFunctionWithStack("toolhost_config_get", answer, []extism.ValueType{i32, i32, i32, i32}, []extism.ValueType{i32}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cp.Close(ctx) })
	return cp
}

// TestFilesystemToolsOneModuleEach: every tool of the filesystem plugin is
// offered (list_tools) by exactly one of its modules, the one LookupTool
// routes it to, so that a tool moved between modules cannot be served by a
// stale copy or by none.
func TestFilesystemToolsOneModuleEach(t *testing.T) {
	ctx := context.Background()
	want := []string{"filesystem.delete", "filesystem.edit", "filesystem.list", "filesystem.read", "filesystem.search", "filesystem.write"}
	offeredBy := map[string][]string{}
	for _, m := range []string{"filesystem", "filesystem-rs"} {
		wasm, _ := builtin.Lookup(m)
		p, err := plainCompile(t, wasm, nil, nil).Instance(ctx, extism.PluginInstanceConfig{})
		if err != nil {
			t.Fatal(err)
		}
		_, out, err := p.Call("list_tools", []byte("{}"))
		p.Close(ctx)
		if err != nil {
			t.Fatalf("%s list_tools: %v", m, err)
		}
		var res struct {
			Tools []struct{ Name string } `json:"tools"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("%s list_tools: %s (%v)", m, out, err)
		}
		for _, tool := range res.Tools {
			offeredBy[tool.Name] = append(offeredBy[tool.Name], m)
		}
	}
	if len(offeredBy) != len(want) {
		t.Errorf("the modules offer %v, want %v", offeredBy, want)
	}
	for _, tool := range want {
		routed, _ := builtin.LookupTool("filesystem", tool)
		if ms := offeredBy[tool]; len(ms) != 1 {
			t.Errorf("%s is offered by %v, want one module", tool, ms)
		} else if mod, _ := builtin.Lookup(ms[0]); &mod[0] != &routed[0] {
			t.Errorf("%s is offered by %s, but LookupTool routes it elsewhere", tool, ms[0])
		}
	}
}
