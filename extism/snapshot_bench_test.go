package extism

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/extism/builtin"
	"github.com/toolhost/toolhost/plugin"
)

// Snapshot benchmarks: the same Go guest (the built-in filesystem plugin)
// started from a snapshot and from the plain module, in the same run. The
// ratio is what matters on a shared machine:
//
//	go test ./extism -run '^$' -bench 'BenchmarkSnapshot' -count 5

// The modes: snapshot or plain module, each with the adapter's recycled
// guest memories and with a fresh memory reservation per instance
// ("fresh-mem"); plain/fresh-mem is the adapter before snapshots.
var snapModes = []struct {
	name       string
	off        bool
	noRecycled bool
}{
	{"snapshot", false, false},
	{"plain", true, false},
	{"snapshot-fresh-mem", false, true},
	{"plain-fresh-mem", true, true},
}

// snapBenchHost loads filesystem.search (a tool of the Go filesystem
// module, which is snapshotted) over a directory holding a 4 KiB file, in a
// host whose adapter has snapshots on or off.
func snapBenchHost(b *testing.B, off, noRecycled bool, pool int) (*plugin.Host, *wasmTool, *plugin.Spec) {
	b.Helper()
	dir := b.TempDir()
	line := "The quick brown fox jumps over the lazy dog, again and again.\n"
	if err := os.WriteFile(filepath.Join(dir, "4KiB.txt"), []byte(strings.Repeat(line, 70)[:4096]), 0o644); err != nil {
		b.Fatal(err)
	}
	a, err := New(Config{CacheDir: cacheDir, Builtins: builtin.LookupTool, DisableSnapshots: off})
	if err != nil {
		b.Fatal(err)
	}
	if noRecycled {
		a.mem.Drain() // a drained pool keeps nothing
	}
	sp := plugin.Spec{
		Name:         "filesystem.search",
		Tier:         plugin.TierReadOnly,
		Source:       plugin.Source{Kind: Kind, Builtin: "filesystem", Tool: "filesystem.search"},
		Capabilities: plugin.Capabilities{Mounts: []plugin.Mount{{HostPath: dir, GuestPath: "/workspace", ReadOnly: true}}},
		Limits:       plugin.Limits{Pool: pool},
	}
	h, err := plugin.NewHost(plugin.Options{Adapters: []plugin.Adapter{a}, Grants: sp.Capabilities})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	tool, err := a.Load(context.Background(), &sp)
	if err != nil {
		b.Fatal(err)
	}
	if err := h.Register(sp, tool); err != nil {
		b.Fatal(err)
	}
	wt := tool.(*wasmTool)
	if err := wt.ready(context.Background()); err != nil {
		b.Fatal(err)
	}
	if wt.snap.on == off {
		b.Fatalf("snapshot on = %v with DisableSnapshots = %v", wt.snap.on, off)
	}
	return h, wt, &sp
}

// BenchmarkSnapshotInstance is the adapter's instance creation (temp dir,
// mounts, instantiation, and for the plain module the guest's
// initialiser); closing the instance is off the clock. create-µs is the
// median creation time.
func BenchmarkSnapshotInstance(b *testing.B) {
	for _, m := range snapModes {
		b.Run("mode="+m.name, func(b *testing.B) {
			_, t, sp := snapBenchHost(b, m.off, m.noRecycled, -1)
			ctx := context.Background()
			d := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				inst, err := t.newInstance(ctx, sp)
				if err != nil {
					b.Fatal(err)
				}
				d = append(d, time.Since(start))
				b.StopTimer()
				inst.close()
				b.StartTimer()
			}
			b.StopTimer()
			reportMedian(b, d, "create-µs")
		})
	}
}

// BenchmarkSnapshotFreshCall is filesystem.search of a 4 KiB file through
// the whole pipeline (plugin.Host: validation, deadline, a fresh instance,
// WASI reads through the mount, audit), back to back with no pool, so that
// every call pays for creating its instance: p50-µs is the latency of a
// fresh-instance call, calls/s the throughput of one caller.
func BenchmarkSnapshotFreshCall(b *testing.B) {
	for _, m := range snapModes {
		b.Run("mode="+m.name, func(b *testing.B) {
			h, _, _ := snapBenchHost(b, m.off, m.noRecycled, -1)
			benchReads(b, h)
		})
	}
}

// BenchmarkSnapshotSustained is BenchmarkSnapshotFreshCall with the
// default pool refilling in the background while calls run back to back:
// the sustained fresh-instance throughput of one caller on this machine.
func BenchmarkSnapshotSustained(b *testing.B) {
	for _, m := range snapModes {
		b.Run("mode="+m.name, func(b *testing.B) {
			h, _, _ := snapBenchHost(b, m.off, m.noRecycled, 0)
			benchReads(b, h)
		})
	}
}

func benchReads(b *testing.B, h *plugin.Host) {
	ctx := context.Background()
	c := plugin.Call{Name: "filesystem.search", Arguments: []byte(`{"pattern":"lazy dog","max_results":1}`)}
	check := func() {
		res, err := h.Invoke(ctx, c)
		if err != nil {
			b.Fatal(err)
		}
		if res.IsError || !strings.Contains(res.TextContent(), "4KiB.txt:1:") {
			b.Fatalf("search: %s", res.TextContent())
		}
	}
	check()
	d := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		check()
		d = append(d, time.Since(t0))
	}
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/el.Seconds(), "calls/s")
	reportMedian(b, d, "p50-µs")
	// The process's CPU time per call (refills included) bounds the
	// throughput of a host with idle cores; on a shared machine it is
	// steadier than wall time.
	if c := cpuTime() - cpu0; c > 0 {
		b.ReportMetric(float64(c.Microseconds())/float64(b.N), "cpu-µs/call")
	}
}

func reportMedian(b *testing.B, d []time.Duration, unit string) {
	if len(d) == 0 {
		return
	}
	s := append([]time.Duration(nil), d...)
	slices.Sort(s)
	b.ReportMetric(float64(s[len(s)/2].Nanoseconds())/1e3, unit)
}

// BenchmarkSnapshotLoad is loading the built-in filesystem plugin until it
// is compiled: with an empty cache directory (first start: transform,
// snapshot, compile) and again with the directory the previous start
// filled (a restart). module-MB is the size of the compiled module.
func BenchmarkSnapshotLoad(b *testing.B) {
	for _, m := range snapModes[:2] {
		for _, warm := range []bool{false, true} {
			name := "mode=" + m.name + "/cache=cold"
			if warm {
				name = "mode=" + m.name + "/cache=warm"
			}
			b.Run(name, func(b *testing.B) {
				dir := filepath.Join(b.TempDir(), "cache")
				load := func(dir string) int {
					a, err := New(Config{CacheDir: dir, Builtins: builtin.LookupTool, DisableSnapshots: m.off})
					if err != nil {
						b.Fatal(err)
					}
					defer a.Close()
					sp := plugin.Spec{Name: "filesystem.search", Source: plugin.Source{Kind: Kind, Builtin: "filesystem", Tool: "filesystem.search"},
						Capabilities: plugin.Capabilities{Mounts: []plugin.Mount{{HostPath: b.TempDir(), GuestPath: "/workspace", ReadOnly: true}}},
						Limits:       plugin.Limits{Pool: -1}}
					tool, err := a.Load(context.Background(), &sp)
					if err != nil {
						b.Fatal(err)
					}
					defer tool.(*wasmTool).Close()
					code, err := os.ReadFile(filepath.Join(a.modDir, sha256Hex([]byte(tool.(*wasmTool).key))+".wasm"))
					if err != nil {
						b.Fatal(err)
					}
					return len(code)
				}
				if warm {
					load(dir)
				}
				var size int
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if !warm {
						b.StopTimer()
						dir = filepath.Join(b.TempDir(), "cache")
						b.StartTimer()
					}
					size = load(dir)
				}
				b.StopTimer()
				b.ReportMetric(float64(size)/1e6, "module-MB")
			})
		}
	}
}
