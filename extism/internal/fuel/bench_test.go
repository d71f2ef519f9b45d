package fuel

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/toolhost/toolhost/extism/internal/wasmbin"
)

// BenchmarkCPU compares, in one run, a CPU-bound call with no limit at all,
// with fuel metering, and with wazero's close-on-deadline (the only other way
// to stop a spinning guest, which go-sdk turns on with Manifest.Timeout).
//
//	go test -run '^$' -bench BenchmarkCPU -count 6 ./extism/internal/fuel/
func BenchmarkCPU(b *testing.B) {
	goWasm := goGuest(b)
	goFuel, err := Instrument(goWasm)
	if err != nil {
		b.Fatal(err)
	}
	loopWasm := tightLoopModule()
	loopFuel, err := Instrument(loopWasm)
	if err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name       string
		plain, met []byte
		fn         string
		arg        uint64
	}{
		{"go-spin", goWasm, goFuel, "spin", 1_000_000},
		{"go-json", goWasm, goFuel, "jsonwork", 20},
		{"go-fib", goWasm, goFuel, "fib", 22},
		{"wasm-loop", loopWasm, loopFuel, "run", 1_000_000},
	}
	modes := []struct {
		name     string
		fuel     bool
		deadline bool
	}{{"none", false, false}, {"fuel", true, false}, {"deadline", false, true}}
	for _, c := range cases {
		for _, mode := range modes {
			b.Run(c.name+"/"+mode.name, func(b *testing.B) {
				ctx := context.Background()
				cfg := wazero.NewRuntimeConfig()
				if mode.deadline {
					cfg = cfg.WithCloseOnContextDone(true)
				}
				r := newRuntime(b, cfg)
				wasm := c.plain
				if mode.fuel {
					wasm = c.met
				}
				mod := instantiate(b, ctx, r, wasm)
				fn := mod.ExportedFunction(c.fn)
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					cctx := ctx
					var cancel context.CancelFunc
					switch {
					case mode.fuel:
						cctx = WithMeter(ctx, NewMeter(1<<60))
					case mode.deadline:
						cctx, cancel = context.WithTimeout(ctx, time.Minute)
					}
					if _, err := fn.Call(cctx, c.arg); err != nil {
						b.Fatal(err)
					}
					if cancel != nil {
						cancel()
					}
				}
			})
		}
	}
}

// BenchmarkCPUInterleaved runs the three modes of BenchmarkCPU back to back
// in every iteration and reports the median time of each plus the ratios,
// which holds up better than separate benchmarks on a shared, noisy machine.
//
//	go test -run '^$' -bench BenchmarkCPUInterleaved -benchtime 200x ./extism/internal/fuel/
func BenchmarkCPUInterleaved(b *testing.B) {
	goWasm := goGuest(b)
	goFuel, err := Instrument(goWasm)
	if err != nil {
		b.Fatal(err)
	}
	loopWasm := tightLoopModule()
	loopFuel, err := Instrument(loopWasm)
	if err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name       string
		plain, met []byte
		fn         string
		arg        uint64
	}{
		{"go-spin", goWasm, goFuel, "spin", 200_000},
		{"go-json", goWasm, goFuel, "jsonwork", 5},
		{"go-fib", goWasm, goFuel, "fib", 18},
		{"wasm-loop", loopWasm, loopFuel, "run", 200_000},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			plainRT := newRuntime(b, nil)
			deadlineRT := newRuntime(b, wazero.NewRuntimeConfig().WithCloseOnContextDone(true))
			none := instantiate(b, ctx, plainRT, c.plain).ExportedFunction(c.fn)
			metered := instantiate(b, ctx, plainRT, c.met).ExportedFunction(c.fn)
			deadline := instantiate(b, ctx, deadlineRT, c.plain).ExportedFunction(c.fn)
			var tNone, tFuel, tDeadline []time.Duration
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				if _, err := none.Call(ctx, c.arg); err != nil {
					b.Fatal(err)
				}
				tNone = append(tNone, time.Since(start))

				start = time.Now()
				if _, err := metered.Call(WithMeter(ctx, NewMeter(1<<60)), c.arg); err != nil {
					b.Fatal(err)
				}
				tFuel = append(tFuel, time.Since(start))

				start = time.Now()
				dctx, cancel := context.WithTimeout(ctx, time.Minute)
				if _, err := deadline.Call(dctx, c.arg); err != nil {
					b.Fatal(err)
				}
				cancel()
				tDeadline = append(tDeadline, time.Since(start))
			}
			n, f, d := median(tNone), median(tFuel), median(tDeadline)
			b.ReportMetric(float64(n.Nanoseconds()), "none-ns")
			b.ReportMetric(float64(f.Nanoseconds()), "fuel-ns")
			b.ReportMetric(float64(d.Nanoseconds()), "deadline-ns")
			b.ReportMetric(float64(f)/float64(n), "fuel/none")
			b.ReportMetric(float64(d)/float64(n), "deadline/none")
		})
	}
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkInstrument measures the load-time cost of rewriting a Go guest.
func BenchmarkInstrument(b *testing.B) {
	wasm := goGuest(b)
	b.SetBytes(int64(len(wasm)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Instrument(wasm); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompile compares wazero compile time of a Go guest before and
// after instrumentation (the rewritten module is larger).
func BenchmarkCompile(b *testing.B) {
	wasm := goGuest(b)
	met, err := Instrument(wasm)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		wasm []byte
	}{{"plain", wasm}, {"fuel", met}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				r := wazero.NewRuntime(ctx)
				if _, err := r.CompileModule(ctx, c.wasm); err != nil {
					b.Fatal(err)
				}
				r.Close(ctx)
			}
		})
	}
}

// tightLoopModule is a hand-written xorshift loop: run(n i64) -> i64.
func tightLoopModule() []byte {
	const n, x = 0, 1
	body := asm{}.i64(88172645463325252).idx(wasmbin.OpLocalSet, x).
		op(wasmbin.OpBlock, wasmbin.BlockTypeEmpty).op(wasmbin.OpLoop, wasmbin.BlockTypeEmpty).
		idx(wasmbin.OpLocalGet, n).op(0x50).idx(wasmbin.OpBrIf, 1).                                              // i64.eqz
		idx(wasmbin.OpLocalGet, x).idx(wasmbin.OpLocalGet, x).i64(13).op(0x86, 0x85).idx(wasmbin.OpLocalSet, x). // x ^= x << 13
		idx(wasmbin.OpLocalGet, x).idx(wasmbin.OpLocalGet, x).i64(7).op(0x88, 0x85).idx(wasmbin.OpLocalSet, x).  // x ^= x >> 7
		idx(wasmbin.OpLocalGet, x).idx(wasmbin.OpLocalGet, x).i64(17).op(0x86, 0x85).idx(wasmbin.OpLocalSet, x). // x ^= x << 17
		idx(wasmbin.OpLocalGet, n).i64(1).op(0x7d).idx(wasmbin.OpLocalSet, n).
		idx(wasmbin.OpBr, 0).op(wasmbin.OpEnd, wasmbin.OpEnd).
		idx(wasmbin.OpLocalGet, x)
	tm := &testModule{
		types:   []wasmbin.FuncType{{Params: []byte{wasmbin.I64}, Results: []byte{wasmbin.I64}}},
		funcs:   []testFunc{{typ: 0, locals: []wasmbin.LocalRun{{Count: 1, Type: wasmbin.I64}}, body: body}},
		exports: []wasmbin.Export{{Name: "run", Kind: wasmbin.KindFunc}},
	}
	return tm.encode()
}
