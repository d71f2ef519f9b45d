package snapshot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/toolhost/toolhost/extism/internal/wasmbin"
)

const guestDir = "./testdata/guest"

func call(tb testing.TB, mod api.Module, fn string, args ...uint64) uint64 {
	tb.Helper()
	res, err := mod.ExportedFunction(fn).Call(context.Background(), args...)
	if err != nil {
		tb.Fatalf("%s: %v", fn, err)
	}
	if len(res) == 0 {
		return 0
	}
	return res[0]
}

func TestGoGuestBehavesTheSame(t *testing.T) {
	t.Parallel()
	orig := goWasm(t, guestDir)
	snap, rep, err := Snapshot(context.Background(), orig, Options{Preopens: []string{"/data"}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.InitExport != "_initialize" || rep.MemoryPages == 0 || rep.DataBytes == 0 || rep.Globals == 0 {
		t.Fatalf("report %+v", rep)
	}
	if info, ok := Describe(snap); !ok || info.Version != Version || !slices.Equal(info.Preopens, []string{"/data"}) || info.InitExport != "_initialize" {
		t.Fatalf("Describe = %+v, %v", info, ok)
	}
	if _, ok := Describe(orig); ok {
		t.Fatal("Describe finds a snapshot in the original")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte("hello, snapshot"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := wazero.NewModuleConfig().WithFSConfig(wazero.NewFSConfig().WithReadOnlyDirMount(dir, "/data"))
	r := newRuntime(t)
	cmOrig, cmSnap := compile(t, r, orig), compile(t, r, snap)
	for _, tc := range []struct {
		fn   string
		args []uint64
	}{
		{"inits", nil}, {"lookup", []uint64{5}}, {"lookup", []uint64{1999}}, {"words", nil},
		{"work", []uint64{50}}, {"work", []uint64{3}}, {"sleepy", nil}, {"readfile", nil},
		{"envlen", nil}, {"readroot", nil},
	} {
		want := call(t, fresh(t, r, cmOrig, cfg), tc.fn, tc.args...)
		got := call(t, fresh(t, r, cmSnap, cfg), tc.fn, tc.args...)
		if got != want {
			t.Errorf("%s%v = %d from the snapshot, %d from the original", tc.fn, tc.args, int64(got), int64(want))
		}
	}
	// Many calls in one instance: the heap carries on from the snapshot.
	a, b := fresh(t, r, cmOrig, cfg), fresh(t, r, cmSnap, cfg)
	for i := range 20 {
		call(t, a, "heap")
		call(t, b, "heap")
		if x, y := call(t, a, "work", uint64(i)), call(t, b, "work", uint64(i)); x != y {
			t.Fatalf("work(%d) in a long-lived instance: %d vs %d", i, y, x)
		}
	}
	if got := call(t, b, "readfile"); int32(got) != int32(len("hello, snapshot")) {
		t.Fatalf("readfile from the snapshot = %d", int32(got))
	}
}

func TestInitializerDoesNotRunAgain(t *testing.T) {
	t.Parallel()
	snap, _, err := Snapshot(context.Background(), goWasm(t, guestDir), Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := newRuntime(t)
	ctx := context.Background()
	mod, err := r.InstantiateModule(ctx, compile(t, r, snap), wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		t.Fatal(err)
	}
	before, _ := mod.Memory().Read(0, mod.Memory().Size())
	sum := sha256.Sum256(before)
	call(t, mod, "_initialize")
	after, _ := mod.Memory().Read(0, mod.Memory().Size())
	if sha256.Sum256(after) != sum {
		t.Fatal("calling _initialize on the snapshot changed memory")
	}
	if n := call(t, mod, "inits"); n != 1 {
		t.Fatalf("package initialisation ran %d times", n)
	}
}

// TestRandomSeedIsSharedAndChosenByOptions pins documented behaviour: the
// runtime's random state is part of the snapshot.
func TestRandomSeedIsSharedAndChosenByOptions(t *testing.T) {
	t.Parallel()
	orig := goWasm(t, guestDir)
	ctx := context.Background()
	r := newRuntime(t)
	snap, rep, err := Snapshot(ctx, orig, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.RandomBytes == 0 {
		t.Fatal("the Go runtime read no randomness during initialisation")
	}
	cm := compile(t, r, snap)
	if x, y := call(t, fresh(t, r, cm, nil), "randv"), call(t, fresh(t, r, cm, nil), "randv"); x != y {
		t.Fatalf("two instances of one snapshot drew %d and %d; the seed is expected to be shared", x, y)
	}
	cmOrig := compile(t, r, orig)
	if x, y := call(t, fresh(t, r, cmOrig, nil), "randv"), call(t, fresh(t, r, cmOrig, nil), "randv"); x == y {
		t.Fatalf("two plain instances drew the same value %d", x)
	}
	// Default: a fresh seed per snapshot. With a fixed source: the same bytes.
	other, _, err := Snapshot(ctx, orig, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(snap, other) {
		t.Fatal("two snapshots with crypto/rand are identical")
	}
	fixed := func() Options { return Options{Random: bytes.NewReader(bytes.Repeat([]byte{7}, 1<<12))} }
	s1, _, err := Snapshot(ctx, orig, fixed())
	if err != nil {
		t.Fatal(err)
	}
	s2, _, err := Snapshot(ctx, orig, fixed())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(s1, s2) {
		t.Fatal("snapshots from the same random source differ")
	}
}

func TestNothingFromTheHostLeaksIn(t *testing.T) {
	const secret = "s3cr3t-snapshot-value-4711"
	t.Setenv("TOOLHOST_SNAPSHOT_SECRET", secret)
	orig := goWasm(t, guestDir)
	snap, rep, err := Snapshot(context.Background(), orig, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{secret, os.Getenv("HOME"), os.Getenv("PATH")} {
		if s != "" && bytes.Contains(snap, []byte(s)) {
			t.Fatalf("snapshot contains host value %q", s)
		}
	}
	for imp := range rep.Calls {
		if !strings.HasPrefix(imp, wasiModule+".") {
			t.Fatalf("initialiser reached non-WASI import %s", imp)
		}
	}
	r := newRuntime(t)
	mod := fresh(t, r, compile(t, r, snap), nil)
	if n := call(t, mod, "envlen"); n != 0 {
		t.Fatalf("guest sees %d environment variables", n)
	}
	if call(t, mod, "readroot") != 0 {
		t.Fatal("guest can list / without mounts")
	}
	// The environment is read once, while snapshotting: instances do not see
	// variables given later. Hosts must not snapshot tools that get some.
	if !rep.ReadEnvironment {
		t.Fatal("report does not say the environment was read")
	}
	withEnv := wazero.NewModuleConfig().WithEnv("GRANTED", "1")
	if n := call(t, fresh(t, r, compile(t, r, snap), withEnv), "envlen"); n != 0 {
		t.Fatalf("snapshot instance sees %d variables", n)
	}
	if n := call(t, fresh(t, r, compile(t, r, orig), withEnv), "envlen"); n != 1 {
		t.Fatalf("plain instance sees %d variables", n)
	}
}

// module assembles a module with one memory, the given imports and
// functions; function 0 (after imports) is exported as _initialize.
func module(imports []wasmbin.Import, types []wasmbin.FuncType, bodies [][]byte, extra func(*wasmbin.Module)) []byte {
	m := &wasmbin.Module{}
	m.Set(wasmbin.SectionType, wasmbin.EncodeTypes(types))
	if len(imports) > 0 {
		m.Set(wasmbin.SectionImport, wasmbin.EncodeImports(imports))
	}
	fs := make([]uint32, len(bodies))
	code := wasmbin.AppendU32(nil, uint32(len(bodies)))
	for _, b := range bodies {
		code = wasmbin.AppendCode(code, &wasmbin.Code{Body: append(append([]byte(nil), b...), wasmbin.OpEnd)})
	}
	m.Set(wasmbin.SectionFunction, wasmbin.EncodeU32Vec(fs))
	m.Set(wasmbin.SectionMemory, []byte{1, 0, 1})
	m.Set(wasmbin.SectionExport, wasmbin.EncodeExports([]wasmbin.Export{
		{Name: "_initialize", Kind: wasmbin.KindFunc, Index: wasmbin.FuncImportCount(imports)},
		{Name: "memory", Kind: wasmbin.KindMemory},
	}))
	m.Set(wasmbin.SectionCode, code)
	if extra != nil {
		extra(m)
	}
	return m.Encode()
}

func TestRefusals(t *testing.T) {
	void := wasmbin.FuncType{}
	i32x4 := wasmbin.FuncType{Params: []byte{wasmbin.I32, wasmbin.I32, wasmbin.I32, wasmbin.I32}, Results: []byte{wasmbin.I32}}
	clock := wasmbin.FuncType{Params: []byte{wasmbin.I32, wasmbin.I64, wasmbin.I32}, Results: []byte{wasmbin.I32}}
	callImport := []byte{wasmbin.OpCall, 0}
	for _, tc := range []struct {
		name    string
		wasm    []byte
		import_ string
		want    string
	}{
		{
			name:    "host function",
			wasm:    module([]wasmbin.Import{{Module: "extism:host/env", Name: "input_length", Kind: wasmbin.KindFunc, TypeIndex: 0}}, []wasmbin.FuncType{void}, [][]byte{callImport}, nil),
			import_: "extism:host/env.input_length",
		},
		{
			name: "writes output",
			wasm: module([]wasmbin.Import{{Module: wasiModule, Name: "fd_write", Kind: wasmbin.KindFunc, TypeIndex: 1}},
				[]wasmbin.FuncType{void, i32x4}, [][]byte{{wasmbin.OpI32Const, 1, wasmbin.OpI32Const, 0, wasmbin.OpI32Const, 0, wasmbin.OpI32Const, 0, wasmbin.OpCall, 0, wasmbin.OpDrop}}, nil),
			import_: wasiModule + ".fd_write",
		},
		{
			name: "reads the wall clock",
			wasm: module([]wasmbin.Import{{Module: wasiModule, Name: "clock_time_get", Kind: wasmbin.KindFunc, TypeIndex: 1}},
				[]wasmbin.FuncType{void, clock}, [][]byte{{wasmbin.OpI32Const, 0, wasmbin.OpI64Const, 0, wasmbin.OpI32Const, 0, wasmbin.OpCall, 0, wasmbin.OpDrop}}, nil),
			import_: wasiModule + ".clock_time_get",
			want:    "wall clock",
		},
		{
			name: "opens a file",
			wasm: module([]wasmbin.Import{{Module: wasiModule, Name: "path_open", Kind: wasmbin.KindFunc, TypeIndex: 0}},
				[]wasmbin.FuncType{void}, [][]byte{callImport}, nil),
			import_: wasiModule + ".path_open",
		},
		{
			name: "mutable tables",
			wasm: module(nil, []wasmbin.FuncType{void}, [][]byte{{}, {wasmbin.OpI32Const, 0, wasmbin.OpRefNull, wasmbin.FuncRef, 0x26, 0}}, func(m *wasmbin.Module) {
				m.Set(wasmbin.SectionTable, []byte{1, wasmbin.FuncRef, 0, 1})
			}),
			want: "table.set",
		},
		{
			name: "traps",
			wasm: module(nil, []wasmbin.FuncType{void}, [][]byte{{wasmbin.OpUnreachable}}, nil),
			want: "failed",
		},
		{
			name: "imported memory",
			wasm: module([]wasmbin.Import{{Module: "env", Name: "memory", Kind: wasmbin.KindMemory, Desc: []byte{0, 1}}}, []wasmbin.FuncType{void}, [][]byte{{}}, func(m *wasmbin.Module) {
				m.Remove(func(s wasmbin.Section) bool { return s.ID == wasmbin.SectionMemory })
			}),
			want: "imports its memory",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Snapshot(context.Background(), tc.wasm, Options{})
			var re *RefusedError
			if !errors.As(err, &re) || !errors.Is(err, ErrRefused) {
				t.Fatalf("err = %v, want a RefusedError", err)
			}
			if re.Import != tc.import_ {
				t.Fatalf("refusal names import %q, want %q (%v)", re.Import, tc.import_, err)
			}
			if tc.want != "" && !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
	t.Run("no initialiser", func(t *testing.T) {
		m := &wasmbin.Module{}
		m.Set(wasmbin.SectionMemory, []byte{1, 0, 1})
		if _, _, err := Snapshot(context.Background(), m.Encode(), Options{}); !errors.Is(err, ErrNoInitializer) {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestToyModuleCapturesGlobalsAndMemory checks the rewrite on a module small
// enough to reason about: the initialiser writes memory and a global, and
// counts how often it runs.
func TestToyModuleCapturesGlobalsAndMemory(t *testing.T) {
	void := wasmbin.FuncType{}
	get := wasmbin.FuncType{Results: []byte{wasmbin.I64}}
	// global 0: i64 mutable, incremented by init; memory[100] = 42; memory
	// grows by one page.
	initBody := []byte{
		wasmbin.OpGlobalGet, 0, wasmbin.OpI64Const, 1, 0x7c, wasmbin.OpGlobalSet, 0,
		wasmbin.OpI32Const, 0xe4, 0x00, wasmbin.OpI32Const, 42, 0x3a, 0, 0, // i32.store8
		wasmbin.OpI32Const, 1, 0x40, 0, wasmbin.OpDrop, // memory.grow 1
	}
	getBody := []byte{wasmbin.OpGlobalGet, 0, wasmbin.OpI32Const, 0xe4, 0x00, 0x31, 0, 0, 0x7c} // + i64.load8_u
	wasm := module(nil, []wasmbin.FuncType{void, get}, [][]byte{initBody, getBody}, func(m *wasmbin.Module) {
		fb, _ := m.Find(wasmbin.SectionFunction)
		fs, _ := wasmbin.DecodeU32Vec(fb)
		fs[1] = 1
		m.Set(wasmbin.SectionFunction, wasmbin.EncodeU32Vec(fs))
		m.Set(wasmbin.SectionGlobal, wasmbin.EncodeGlobals([]wasmbin.Global{{Type: wasmbin.I64, Mutable: true, Init: []byte{wasmbin.OpI64Const, 0, wasmbin.OpEnd}}}))
		eb, _ := m.Find(wasmbin.SectionExport)
		ex, _ := wasmbin.DecodeExports(eb)
		ex = append(ex, wasmbin.Export{Name: "get", Kind: wasmbin.KindFunc, Index: 1})
		m.Set(wasmbin.SectionExport, wasmbin.EncodeExports(ex))
	})
	snap, rep, err := Snapshot(context.Background(), wasm, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.MemoryPages != 2 || rep.Globals != 1 || rep.DataBytes != 1 || len(rep.Calls) != 0 {
		t.Fatalf("report %+v", rep)
	}
	r := newRuntime(t)
	mod := fresh(t, r, compile(t, r, snap), nil) // runs the no-op _initialize
	if got := call(t, mod, "get"); got != 1+42 {
		t.Fatalf("get() = %d, want 43", got)
	}
	if mod.Memory().Size() != 2*65536 {
		t.Fatalf("memory size %d", mod.Memory().Size())
	}
	if _, ok := (func() (wasmbin.Section, bool) {
		m, _ := wasmbin.Parse(snap)
		for _, s := range m.Sections {
			if s.ID == wasmbin.SectionStart {
				return s, true
			}
		}
		return wasmbin.Section{}, false
	})(); ok {
		t.Fatal("snapshot keeps a start section")
	}
}

func TestSpinningInitialiserIsStoppedByTheContext(t *testing.T) {
	spin := []byte{wasmbin.OpLoop, wasmbin.BlockTypeEmpty, wasmbin.OpBr, 0, wasmbin.OpEnd}
	wasm := module(nil, []wasmbin.FuncType{{}}, [][]byte{spin}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := Snapshot(ctx, wasm, Options{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v", d)
	}
}

// FuzzInspect feeds arbitrary bytes to the module checks that run before any
// guest code: they must return an error or a description, never panic.
func FuzzInspect(f *testing.F) {
	void := wasmbin.FuncType{}
	f.Add(module(nil, []wasmbin.FuncType{void}, [][]byte{{}}, nil))
	f.Add(module([]wasmbin.Import{{Module: wasiModule, Name: "random_get", Kind: wasmbin.KindFunc, TypeIndex: 0}}, []wasmbin.FuncType{void}, [][]byte{{wasmbin.OpCall, 0}}, nil))
	f.Fuzz(func(t *testing.T, wasm []byte) {
		m, err := wasmbin.Parse(wasm)
		if err != nil {
			return
		}
		_, _ = inspect(m, "")
	})
}
