package extism

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"

	"github.com/toolhost/toolhost/plugin"
)

// Benchmarks compare the adapter with raw go-sdk on the same module in the
// same run (ratios matter more than absolute numbers on a shared machine):
//
//	go test ./extism -run '^$' -bench . -benchtime 2000x -count 5
//
// The small call is the fixtures guest's echo tool (Go, shared/guest).

var echoArgs = json.RawMessage(`{"text":"hello"}`)

func benchHost(b *testing.B, specs ...plugin.Spec) (*plugin.Host, map[string]*wasmTool) {
	b.Helper()
	a, err := New(Config{CacheDir: cacheDir})
	if err != nil {
		b.Fatal(err)
	}
	h, err := plugin.NewHost(plugin.Options{Adapters: []plugin.Adapter{a}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	tools := map[string]*wasmTool{}
	for _, sp := range specs {
		sp.Source.Kind = Kind
		tool, err := a.Load(context.Background(), &sp)
		if err != nil {
			b.Fatal(err)
		}
		if err := h.Register(sp, tool); err != nil {
			b.Fatal(err)
		}
		tools[sp.Name] = tool.(*wasmTool)
	}
	// As a long-running host does: compile now and start filling the pools
	// (otherwise a pool starts filling at its tool's first call).
	if err := a.Ready(context.Background()); err != nil {
		b.Fatal(err)
	}
	return h, tools
}

// waitPool waits until the tool's pool is full again.
func waitPool(t *wasmTool) {
	for !t.pool.full() {
		time.Sleep(20 * time.Microsecond)
	}
}

func reportPercentiles(b *testing.B, d []time.Duration) {
	slices.Sort(d)
	if len(d) == 0 {
		return
	}
	b.ReportMetric(float64(d[len(d)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(d[len(d)*9/10].Microseconds()), "p90-µs")
}

// BenchmarkPipelineFreshInstance is one small call through plugin.Host
// (validation, deadline, audit, truncation), each in a fresh instance taken
// from a full pool: the latency a caller sees when calls are not back to
// back. The pool is refilled between iterations, off the clock.
func BenchmarkPipelineFreshInstance(b *testing.B) {
	h, tools := benchHost(b, guestSpec("fixtures", "echo"))
	ctx := context.Background()
	call := plugin.Call{Name: "echo", Arguments: echoArgs}
	if _, err := h.Invoke(ctx, call); err != nil {
		b.Fatal(err)
	}
	d := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		waitPool(tools["echo"])
		b.StartTimer()
		start := time.Now()
		if _, err := h.Invoke(ctx, call); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(start))
	}
	b.StopTimer()
	reportPercentiles(b, d)
}

// BenchmarkAdapterFreshInstance is BenchmarkPipelineFreshInstance without
// the pipeline: Tool.Call on the adapter's tool, to tell the two costs apart.
func BenchmarkAdapterFreshInstance(b *testing.B) {
	sp := guestSpec("fixtures", "echo")
	_, tools := benchHost(b, sp)
	tool := tools["echo"]
	req := &plugin.Request{Name: "echo", Arguments: echoArgs, Spec: &sp, Secrets: plugin.NewSecrets(nil), Log: hclog.NewNullLogger()}
	ctx := context.Background()
	d := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		waitPool(tool)
		b.StartTimer()
		start := time.Now()
		if _, err := tool.Call(ctx, req); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(start))
	}
	b.StopTimer()
	reportPercentiles(b, d)
}

// BenchmarkPipelineSustained is back-to-back small calls, each in a fresh
// instance, with the pool refilling concurrently: throughput and CPU per
// call, including building the replacement instances.
func BenchmarkPipelineSustained(b *testing.B) {
	h, _ := benchHost(b, guestSpec("fixtures", "echo"))
	ctx := context.Background()
	call := plugin.Call{Name: "echo", Arguments: echoArgs}
	if _, err := h.Invoke(ctx, call); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := h.Invoke(ctx, call); err != nil {
			b.Fatal(err)
		}
	}
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/el.Seconds(), "calls/s")
	if c := cpuTime() - cpu0; c > 0 {
		b.ReportMetric(float64(c.Microseconds())/float64(b.N), "cpu-µs/call")
	}
}

// BenchmarkPipelineParallel is BenchmarkPipelineSustained with twice as
// many callers as CPUs: the refill, at low priority (background_linux.go),
// gets little time, and calls that find the pool empty build their own
// instances.
func BenchmarkPipelineParallel(b *testing.B) {
	h, _ := benchHost(b, guestSpec("fixtures", "echo"))
	ctx := context.Background()
	call := plugin.Call{Name: "echo", Arguments: echoArgs}
	if _, err := h.Invoke(ctx, call); err != nil {
		b.Fatal(err)
	}
	b.SetParallelism(2)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := h.Invoke(ctx, call); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
}

// rawCompiled compiles a module with go-sdk the way its README does.
func rawCompiled(b *testing.B, module string) *extism.CompiledPlugin {
	b.Helper()
	wasm, err := os.ReadFile(wasmPath[module])
	if err != nil {
		b.Fatal(err)
	}
	cache, err := wazero.NewCompilationCacheWithDir(cacheDir)
	if err != nil {
		b.Fatal(err)
	}
	c, err := extism.NewCompiledPlugin(context.Background(),
		extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: wasm}}},
		extism.PluginConfig{EnableWasi: true, RuntimeConfig: wazero.NewRuntimeConfig().WithCompilationCache(cache)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close(context.Background()); cache.Close(context.Background()) })
	return c
}

var rawEchoInput = []byte(`{"params":{"name":"echo","arguments":{"text":"hello"}}}`)

// BenchmarkRawSDKInstancePerCall is raw go-sdk with a new instance for every
// call (what per-call isolation costs without a pool).
func BenchmarkRawSDKInstancePerCall(b *testing.B) {
	c := rawCompiled(b, "fixtures")
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, err := c.Instance(ctx, extism.PluginInstanceConfig{})
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := p.CallWithContext(ctx, "call_tool", rawEchoInput); err != nil {
			b.Fatal(err)
		}
		p.Close(ctx)
	}
}

// BenchmarkRawSDKWarm is raw go-sdk calling one reused, warm instance (no
// isolation between calls): the floor.
func BenchmarkRawSDKWarm(b *testing.B) {
	c := rawCompiled(b, "fixtures")
	ctx := context.Background()
	p, err := c.Instance(ctx, extism.PluginInstanceConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close(ctx)
	p.SetLogger(func(extism.LogLevel, string) {})
	if _, _, err := p.CallWithContext(ctx, "call_tool", rawEchoInput); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := p.CallWithContext(ctx, "call_tool", rawEchoInput); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOutput1MiB is a Go guest returning 1 MiB of text made with
// strings.Repeat: through the adapter (shared/guest's fast path: stdout, the
// text outside the JSON; fresh instance from the pool) and through raw
// go-sdk's pdk memory path (pdk.Output, warm instance).
func BenchmarkOutput1MiB(b *testing.B) {
	b.Run("adapter", func(b *testing.B) {
		sp := guestSpec("hostile", "blob")
		_, tools := benchHost(b, sp)
		tool := tools["blob"]
		req := &plugin.Request{Name: "blob", Arguments: json.RawMessage(`{"n":1048576}`), Spec: &sp,
			Secrets: plugin.NewSecrets(nil), Log: hclog.NewNullLogger()}
		ctx := context.Background()
		d := make([]time.Duration, 0, b.N)
		b.SetBytes(1 << 20)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			waitPool(tool)
			b.StartTimer()
			start := time.Now()
			res, err := tool.Call(ctx, req)
			if err != nil || len(res.Content[0].Text) != 1<<20 {
				b.Fatal(err)
			}
			d = append(d, time.Since(start))
		}
		b.StopTimer()
		reportPercentiles(b, d)
	})
	b.Run("raw-pdk", func(b *testing.B) {
		c := rawCompiled(b, "rawguest")
		ctx := context.Background()
		p, err := c.Instance(ctx, extism.PluginInstanceConfig{})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close(ctx)
		b.SetBytes(1 << 20)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			_, out, err := p.CallWithContext(ctx, "pdk_out", nil)
			if err != nil || len(out) != 1<<20 {
				b.Fatal(err)
			}
		}
	})
}
