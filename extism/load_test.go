package extism

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/toolhost/toolhost/extism/internal/wasmbin"
	"github.com/toolhost/toolhost/internal/testcache"
	"github.com/toolhost/toolhost/plugin"
)

func TestLoadRefuses(t *testing.T) {
	good, err := os.ReadFile(wasmPath["vowels"])
	if err != nil {
		t.Fatal(err)
	}
	vowelsSchema := []byte(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)
	cases := []struct {
		name string
		spec plugin.Spec
		want []string
	}{
		{"sha256 mismatch", plugin.Spec{Name: "v", InputSchema: vowelsSchema,
			Source: plugin.Source{Bytes: good, Export: "count_vowels", SHA256: strings.Repeat("ab", 32)}},
			[]string{"sha256 mismatch", "expected " + strings.Repeat("ab", 32), "got " + sha256Hex(good)}},
		{"not wasm", plugin.Spec{Name: "v", Source: plugin.Source{Bytes: []byte("#!/bin/sh\necho hi\n")}},
			[]string{"not a wasm binary"}},
		{"truncated", plugin.Spec{Name: "v", Source: plugin.Source{Bytes: good[:len(good)/2]}},
			[]string{"truncated"}},
		{"component or wrong version", plugin.Spec{Name: "v", Source: plugin.Source{Bytes: append([]byte{0, 'a', 's', 'm', 0x0d, 0, 1, 0}, good[8:]...)}},
			[]string{"unsupported wasm version"}},
		{"missing exports", plugin.Spec{Name: "v", Source: plugin.Source{Path: wasmPath["vowels"]}},
			[]string{"exports neither list_tools and call_tool", "count_vowels"}},
		{"raw export missing", plugin.Spec{Name: "v", InputSchema: vowelsSchema, Source: plugin.Source{Path: wasmPath["vowels"], Export: "count_consonants"}},
			[]string{`"count_consonants"`, "count_vowels"}},
		{"raw without schema", plugin.Spec{Name: "v", Source: plugin.Source{Path: wasmPath["vowels"], Export: "count_vowels"}},
			[]string{"needs an input schema"}},
		{"unknown tool in plugin", plugin.Spec{Name: "nope", Source: plugin.Source{Path: wasmPath["textstats"]}},
			[]string{`no tool "nope"`, "grep_file", "text_stats"}},
		{"missing file", plugin.Spec{Name: "v", Source: plugin.Source{Path: filepath.Join(t.TempDir(), "absent.wasm")}},
			[]string{"absent.wasm"}},
		{"unknown builtin", plugin.Spec{Name: "v", Source: plugin.Source{Builtin: "nothing"}},
			[]string{"built-in", "nothing"}},
		{"unknown host function", plugin.Spec{Name: "v", Source: plugin.Source{Bytes: importingModule(
			[2]string{"extism:host/user", hostHTTP}, [2]string{"extism:host/user", "nope"}, [2]string{"env", "abort"})}},
			[]string{"does not provide", "extism:host/user.nope", "env.abort", hostConfigGet}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sp := tc.spec
			tool, err := shared.Load(context.Background(), &sp)
			if err == nil {
				tool.(plugin.Closer).Close()
				t.Fatal("loaded")
			}
			var pe *plugin.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err %T %v is not a *plugin.Error", err, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	t.Run("corrupt body compiles to an error, host keeps serving", func(t *testing.T) {
		// Framing intact, code section garbage: the scan passes, the
		// compiler refuses, and the call reports it.
		bad := append([]byte(nil), good...)
		for i := len(bad) / 3; i < len(bad)/3+4096; i++ {
			bad[i] ^= 0x5a
		}
		sp := plugin.Spec{Name: "v", InputSchema: vowelsSchema, Source: plugin.Source{Kind: Kind, Bytes: bad, Export: "count_vowels"}}
		tool, err := shared.Load(context.Background(), &sp)
		if err != nil {
			return // refused at load: also fine
		}
		defer tool.(plugin.Closer).Close()
		_, err = call(t, tool, &sp, map[string]any{"text": "aeiou"}, nil)
		if err == nil {
			t.Fatal("corrupt module ran")
		}
		okSpec := plugin.Spec{Name: "v", InputSchema: vowelsSchema, OutputSchema: []byte(`{"type":"object"}`),
			Source: plugin.Source{Kind: Kind, Bytes: good, Export: "count_vowels"}}
		res, err := call(t, load(t, okSpec), &okSpec, map[string]any{"text": "aeiou"}, nil)
		if err != nil || structured(t, res)["count"] != float64(5) {
			t.Fatalf("healthy module after a corrupt one: %v %v", err, res)
		}
	})
}

func TestBuiltins(t *testing.T) {
	b, err := os.ReadFile(wasmPath["textstats"])
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{CacheDir: cacheDir, Builtins: func(name, _ string) ([]byte, bool) {
		if name == "textstats" {
			return b, true
		}
		return nil, false
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	sp := plugin.Spec{Name: "text_stats", Source: plugin.Source{Builtin: "textstats", SHA256: sha256Hex(b)}}
	res, err := call(t, loadWith(t, a, sp), &sp, map[string]any{"text": "one two\nthree"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := structured(t, res); m["words"] != float64(3) || m["lines"] != float64(2) {
		t.Fatalf("text_stats = %v", m)
	}
	// The module's digest is remembered, and still checked for each tool.
	bad := plugin.Spec{Name: "pinned_wrong", Source: plugin.Source{Builtin: "textstats", SHA256: strings.Repeat("cd", 32)}}
	if _, err := a.Load(context.Background(), &bad); err == nil || !strings.Contains(err.Error(), "got "+sha256Hex(b)) {
		t.Errorf("second tool pinned to another digest: %v", err)
	}
	again := plugin.Spec{Name: "text_stats_again", Source: plugin.Source{Builtin: "textstats", Tool: "text_stats", SHA256: sha256Hex(b)}}
	if _, err := call(t, loadWith(t, a, again), &again, map[string]any{"text": "x"}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestTransformHook(t *testing.T) {
	var seen int
	// A name of its own, so that the transformed-module cache does not
	// already hold the result; the output equals the input, so compiling
	// hits the package's compilation cache.
	name := fmt.Sprintf("count-%d", time.Now().UnixNano())
	a, err := New(Config{CacheDir: cacheDir, Transforms: []Transform{{Name: name, Apply: func(b []byte) ([]byte, error) {
		seen++
		if _, err := scanModule(b); err != nil {
			return nil, err
		}
		return b, nil
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	sp := guestSpec("textstats", "text_stats")
	tool := loadWith(t, a, sp)
	if seen != 1 {
		t.Fatalf("transform ran %d times, want 1", seen)
	}
	if k := tool.(*wasmTool).key; !strings.HasSuffix(k, "+"+name) {
		t.Fatalf("cache key %q does not name the transform", k)
	}
	if _, err := New(Config{Transforms: []Transform{{Name: "x"}}}); err == nil {
		t.Fatal("transform without Apply accepted")
	}
}

func TestCompilationCache(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	countFiles := func() int {
		n := 0
		filepath.WalkDir(dir, func(_ string, d os.DirEntry, _ error) error {
			if d != nil && !d.IsDir() {
				n++
			}
			return nil
		})
		return n
	}
	start := func() {
		a, err := New(Config{CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		sp := guestSpec("textstats", "text_stats")
		sp.Limits.Pool = -1
		if _, err := call(t, loadWith(t, a, sp), &sp, map[string]any{"text": "a b"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	start()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("cache dir mode %v, want 0700", fi.Mode().Perm())
	}
	first := countFiles()
	if first == 0 {
		t.Fatal("nothing was cached")
	}
	// A second start finds everything in the cache: it writes nothing new.
	start()
	if n := countFiles(); n != first {
		t.Fatalf("second start wrote to the cache: %d files, was %d", n, first)
	}
	// An existing directory with loose permissions is tightened.
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	start()
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("cache dir mode %v after restart, want 0700", fi.Mode().Perm())
	}
}

// TestCoalesceData checks that merging a Go guest's data segments leaves the
// memory an instance starts with unchanged, byte for byte.
func TestCoalesceData(t *testing.T) {
	orig, err := os.ReadFile(wasmPath["vowels"])
	if err != nil {
		t.Fatal(err)
	}
	merged, err := coalesceData(orig)
	if err != nil {
		t.Fatal(err)
	}
	count := func(b []byte) int {
		r := &reader{b: b, off: 8}
		for r.off < len(b) {
			id, _ := r.byte()
			size, _ := r.u32()
			p, _ := r.bytes(size)
			if id == 11 {
				n, _ := (&reader{b: p}).u32()
				return int(n)
			}
		}
		return 0
	}
	before, after := count(orig), count(merged)
	t.Logf("data segments: %d -> %d", before, after)
	if after >= before || after == 0 {
		t.Fatalf("data segments: %d -> %d", before, after)
	}
	ctx := context.Background()
	memOf := func(b []byte) []byte {
		// Machine code from the tests' cache (under -race compiled by a
		// helper built without it): the data segments are applied the
		// same way whichever compiled the code.
		testcache.Precompile(b)
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(testcache.Cache()))
		defer rt.Close(ctx)
		cm, err := rt.CompileModule(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		// Instantiate without imports satisfied is impossible; read the
		// data segments as wazero applies them through a host-less view:
		// compile both and compare the memory after instantiating with
		// stub imports.
		for _, imp := range cm.ImportedFunctions() {
			mod, name, _ := imp.Import()
			_ = name
			if rt.Module(mod) == nil {
				builder := rt.NewHostModuleBuilder(mod)
				for _, f := range cm.ImportedFunctions() {
					m2, n2, _ := f.Import()
					if m2 != mod {
						continue
					}
					builder.NewFunctionBuilder().WithGoFunction(api.GoFunc(func(context.Context, []uint64) {}), f.ParamTypes(), f.ResultTypes()).Export(n2)
				}
				if _, err := builder.Instantiate(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		m, err := rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithStartFunctions())
		if err != nil {
			t.Fatal(err)
		}
		b2, ok := m.Memory().Read(0, m.Memory().Size())
		if !ok {
			t.Fatal("reading memory")
		}
		return append([]byte(nil), b2...)
	}
	if a, b := memOf(orig), memOf(merged); !bytes.Equal(a, b) {
		t.Fatalf("memories differ (%d and %d bytes)", len(a), len(b))
	}
	// Modules it cannot prove safe are left alone.
	if out, err := coalesceData(wasmMagic); err != nil || !bytes.Equal(out, wasmMagic) {
		t.Fatalf("empty module: %v", err)
	}
}

// importingModule is a minimal valid module that imports each of imports
// (module, name) as a function of type () -> () and exports the first as
// list_tools and call_tool.
func importingModule(imports ...[2]string) []byte {
	section := func(id byte, body []byte) []byte {
		return append(wasmbin.AppendU32([]byte{id}, uint32(len(body))), body...)
	}
	b := append([]byte(nil), wasmMagic...)
	b = append(b, section(wasmbin.SectionType, []byte{1, 0x60, 0, 0})...)
	imp := wasmbin.AppendU32(nil, uint32(len(imports)))
	for _, im := range imports {
		imp = wasmbin.AppendName(imp, im[0])
		imp = wasmbin.AppendName(imp, im[1])
		imp = append(imp, wasmbin.KindFunc, 0)
	}
	b = append(b, section(wasmbin.SectionImport, imp)...)
	exp := []byte{2}
	for _, name := range []string{exportListTools, exportCallTool} {
		exp = append(wasmbin.AppendName(exp, name), wasmbin.KindFunc, 0)
	}
	return append(b, section(wasmbin.SectionExport, exp)...)
}
