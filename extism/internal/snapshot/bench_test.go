package snapshot

import (
	"context"
	"crypto/rand"
	"testing"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
)

// BenchmarkInstance compares, in one run, a fresh instance of a Go guest
// made the usual way (instantiate, then _initialize) with one made from its
// snapshot, with wazero directly: "create" is instance creation alone,
// "call" a whole fresh-instance call (create, call an export, close).
// "snapshot+pool" also recycles linear memories (poolAllocator), which
// takes the multi-megabyte allocation and its garbage out of each
// instance.
//
//	go test -run '^$' -bench BenchmarkInstance -count 6 ./extism/internal/snapshot/
func BenchmarkInstance(b *testing.B) {
	ctx := context.Background()
	orig := goWasm(b, guestDir)
	snap, _, err := Snapshot(ctx, orig, Options{})
	if err != nil {
		b.Fatal(err)
	}
	r := newRuntime(b)
	cms := map[string]wazero.CompiledModule{"plain": compile(b, r, orig), "snapshot": compile(b, r, snap)}
	cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions().WithSysNanotime().WithSysWalltime().WithRandSource(rand.Reader)
	cms["snapshot+pool"] = cms["snapshot"]
	kinds := []string{"plain", "snapshot", "snapshot+pool"}
	for _, what := range []string{"create", "call"} {
		for _, kind := range kinds {
			b.Run(what+"/"+kind, func(b *testing.B) {
				cm := cms[kind]
				ictx := ctx
				if kind == "snapshot+pool" {
					ictx = experimental.WithMemoryAllocator(ctx, testAllocator)
				}
				b.ReportAllocs()
				for b.Loop() {
					mod, err := r.InstantiateModule(ictx, cm, cfg)
					if err != nil {
						b.Fatal(err)
					}
					if kind == "plain" {
						if _, err := mod.ExportedFunction("_initialize").Call(ctx); err != nil {
							b.Fatal(err)
						}
					}
					if what == "call" {
						if _, err := mod.ExportedFunction("lookup").Call(ctx, 7); err != nil {
							b.Fatal(err)
						}
					}
					mod.Close(ctx)
				}
			})
		}
	}
}

// BenchmarkInstanceParallel is the sustained fresh-instance throughput of
// BenchmarkInstance's "call" on every available core.
func BenchmarkInstanceParallel(b *testing.B) {
	ctx := context.Background()
	orig := goWasm(b, guestDir)
	snap, _, err := Snapshot(ctx, orig, Options{})
	if err != nil {
		b.Fatal(err)
	}
	r := newRuntime(b)
	for _, kind := range []string{"plain", "snapshot"} {
		wasm := orig
		if kind == "snapshot" {
			wasm = snap
		}
		cm := compile(b, r, wasm)
		b.Run(kind, func(b *testing.B) {
			cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions().WithSysNanotime().WithSysWalltime().WithRandSource(rand.Reader)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					mod, err := r.InstantiateModule(ctx, cm, cfg)
					if err != nil {
						b.Error(err)
						return
					}
					if kind == "plain" {
						if _, err := mod.ExportedFunction("_initialize").Call(ctx); err != nil {
							b.Error(err)
							return
						}
					}
					if _, err := mod.ExportedFunction("lookup").Call(ctx, 7); err != nil {
						b.Error(err)
						return
					}
					mod.Close(ctx)
				}
			})
		})
	}
}

// BenchmarkExtismFreshCall is the same comparison through go-sdk with the
// vowels example (a go-pdk guest), which is the extism adapter's path:
// CompiledPlugin.Instance, then Call (go-sdk runs _initialize on the first
// call of a plain instance; on a snapshot it is an empty function).
func BenchmarkExtismFreshCall(b *testing.B) {
	ctx := context.Background()
	orig := goWasm(b, "../../../examples/plugins/vowels")
	snap, _, err := Snapshot(ctx, orig, Options{})
	if err != nil {
		b.Fatal(err)
	}
	input := []byte(`{"text":"Benchmarking fresh instances"}`)
	for _, c := range []struct {
		name string
		wasm []byte
	}{{"plain", orig}, {"snapshot", snap}} {
		b.Run(c.name, func(b *testing.B) {
			cp, err := extism.NewCompiledPlugin(ctx, extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: c.wasm}}},
				extism.PluginConfig{EnableWasi: true, RuntimeConfig: wazero.NewRuntimeConfig().WithCompilationCache(compileCache)}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cp.Close(ctx)
			b.ReportAllocs()
			for b.Loop() {
				p, err := cp.Instance(ctx, extism.PluginInstanceConfig{})
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := p.CallWithContext(ctx, "count_vowels", input); err != nil {
					b.Fatal(err)
				}
				p.Close(ctx)
			}
		})
	}
}

// BenchmarkSnapshot is the load-time cost of taking a snapshot of a Go
// guest: one initialisation run (wazero's interpreter by default, or its
// compiler with a warm compilation cache) plus the rewrite. Compiling the
// snapshot afterwards costs what compiling the original would.
func BenchmarkSnapshot(b *testing.B) {
	ctx := context.Background()
	orig := goWasm(b, guestDir)
	cache := wazero.NewCompilationCache()
	for _, c := range []struct {
		name string
		cfg  wazero.RuntimeConfig
	}{{"interpreter", nil}, {"compiler-cached", wazero.NewRuntimeConfig().WithCompilationCache(cache)}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := Snapshot(ctx, orig, Options{RuntimeConfig: c.cfg}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
