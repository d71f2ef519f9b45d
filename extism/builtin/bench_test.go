package builtin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/extism"
	"github.com/toolhost/toolhost/plugin"
)

// BenchmarkRead reads a 4 KiB and a 1 MiB file end to end through the host
// pipeline (validation, a fresh wasm instance, WASI reads through the
// os.Root mount, truncation for the model), next to os.ReadFile of the same
// file: the ratio is the cost of the sandbox and the pipeline.
func BenchmarkRead(b *testing.B) {
	dir := b.TempDir()
	line := "The quick brown fox jumps over the lazy dog, again and again.\n"
	for _, size := range []int{4 << 10, 1 << 20} {
		name := fmt.Sprintf("%dKiB.txt", size>>10)
		content := strings.Repeat(line, size/len(line)+1)[:size]
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	h := newHost(b, fsSpec("filesystem.read", dir, nil))
	for _, size := range []int{4 << 10, 1 << 20} {
		name := fmt.Sprintf("%dKiB.txt", size>>10)
		args := `{"path":"` + name + `"}`
		b.Run(fmt.Sprintf("size=%dKiB/filesystem.read", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				res, err := invoke(b, h, "filesystem.read", args)
				if err != nil {
					b.Fatal(err)
				}
				if res.Truncated == nil && len(res.TextContent()) != size {
					b.Fatalf("read %d bytes", len(res.TextContent()))
				}
			}
		})
		// Latency of one call when the adapter's pool of pre-initialised
		// instances has had time to refill (the loop above measures
		// throughput, bounded by instantiating a fresh guest per call).
		b.Run(fmt.Sprintf("size=%dKiB/filesystem.read-paced", size>>10), func(b *testing.B) {
			pacedLatency(b, func() {
				if _, err := invoke(b, h, "filesystem.read", args); err != nil {
					b.Fatal(err)
				}
			})
		})
		b.Run(fmt.Sprintf("size=%dKiB/os.ReadFile", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				if _, err := os.ReadFile(filepath.Join(dir, name)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// pacedLatency makes one call every 20ms, so that the adapter's pool of
// instances has refilled before each (the latency an agent's call sees:
// the call's own work, in a fresh instance, with cold caches), and reports
// the median and 99th percentile of the calls alone; ns/op includes the
// pauses. The timer is not stopped around the pauses: testing.B reads the
// memory statistics each time it is, which stops the world and empties
// the allocator's caches, and the next call would pay for that.
func pacedLatency(b *testing.B, call func()) { pacedLatencyEvery(b, 20*time.Millisecond, call) }

// pacedLatencyEvery is pacedLatency with a pause of gap before each call.
func pacedLatencyEvery(b *testing.B, gap time.Duration, call func()) {
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		time.Sleep(gap)
		t0 := time.Now()
		call()
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// spinWasm is a raw-mode module whose one export, spin, loops forever:
//
//	(module (func (export "spin") (result i32) (loop (br 0)) (i32.const 0)))
var spinWasm = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
	0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7f, // type: () -> i32
	0x03, 0x02, 0x01, 0x00, // function 0 has type 0
	0x07, 0x08, 0x01, 0x04, 's', 'p', 'i', 'n', 0x00, 0x00, // export "spin"
	0x0a, 0x0b, 0x01, 0x09, 0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x41, 0x00, 0x0b, // loop br 0 end; i32.const 0
}

// BenchmarkReadBesideSpinners reads a 4 KiB file every 50 ms, with no
// other load and then beside four guests that spin (fuel for minutes, a 10 s timeout)
// (more guests than this machine has cores), and reports each phase's p50
// and p99 (pacedLatencyEvery): the ratio of the p99s is what a spinning
// guest costs everyone else. Compiled wasm cannot be preempted; the fuel
// meter's refills bring each spinner back to Go every slice, and spinners
// that have run long share GOMAXPROCS-1 lanes (docs/fuel.md).
func BenchmarkReadBesideSpinners(b *testing.B) {
	dir := b.TempDir()
	content := strings.Repeat("x", 4<<10)
	if err := os.WriteFile(filepath.Join(dir, "4KiB.txt"), []byte(content), 0o644); err != nil {
		b.Fatal(err)
	}
	spin := plugin.Spec{
		Name:        "spin",
		Tier:        plugin.TierReadOnly,
		Source:      plugin.Source{Kind: extism.Kind, Bytes: spinWasm, Export: "spin"},
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Limits:      plugin.Limits{Timeout: 10 * time.Second, Fuel: 1_000_000_000_000},
	}
	h := newHost(b, fsSpec("filesystem.read", dir, nil), spin)
	for _, spinners := range []int{0, 4} {
		b.Run(fmt.Sprintf("spinners=%d", spinners), func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			var calls atomic.Int64
			for range spinners {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for ctx.Err() == nil {
						calls.Add(1)
						_, _ = h.Invoke(ctx, plugin.Call{Name: "spin", Arguments: json.RawMessage(`{}`)})
					}
				}()
			}
			time.Sleep(200 * time.Millisecond) // the spinners are past their first slices
			pacedLatencyEvery(b, 50*time.Millisecond, func() {
				res, err := invoke(b, h, "filesystem.read", `{"path":"4KiB.txt"}`)
				if err != nil || len(res.TextContent()) != len(content) {
					b.Fatalf("read: %v", err)
				}
			})
			cancel()
			wg.Wait()
			if n := calls.Load(); n != int64(spinners) {
				b.Logf("%d spin calls for %d spinners", n, spinners)
			}
		})
	}
}

// BenchmarkList lists a directory of 20 files with filesystem.list, back
// to back and paced (pacedLatency), next to os.ReadDir and an Lstat of
// each entry in the same run.
func BenchmarkList(b *testing.B) {
	dir := b.TempDir()
	for i := range 20 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("entry%02d.txt", i)), []byte("x\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	h := newHost(b, fsSpec("filesystem.list", dir, nil))
	b.Run("filesystem.list", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := invoke(b, h, "filesystem.list", `{}`); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("filesystem.list-paced", func(b *testing.B) {
		pacedLatency(b, func() {
			res, err := invoke(b, h, "filesystem.list", `{}`)
			if err != nil {
				b.Fatal(err)
			}
			if n := strings.Count(res.TextContent(), "\n"); n != 19 {
				b.Fatalf("listed %d lines:\n%s", n+1, res.TextContent())
			}
		})
	})
	b.Run("os.ReadDir+Lstat-paced", func(b *testing.B) {
		pacedLatency(b, func() {
			entries, err := os.ReadDir(dir)
			if err != nil {
				b.Fatal(err)
			}
			for _, e := range entries {
				if _, err := os.Lstat(filepath.Join(dir, e.Name())); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

// searchTree writes about 10,000 source-like files of 1-2 KiB in 100
// directories; needle appears in one file of 200.
func searchTree(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	var filler strings.Builder
	for i := range 60 {
		fmt.Fprintf(&filler, "func f%d(x int) int { return x*%d + len(\"some text here\") }\n", i, i)
	}
	for d := range 100 {
		sub := filepath.Join(dir, fmt.Sprintf("pkg%03d", d))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			body := filler.String()[:1024+(d*7+f*13)%1024]
			if (d*100+f)%200 == 7 {
				body += "// the zanzibar needle is here\n"
			}
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("file%03d.go", f)), []byte(body), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	return dir
}

// BenchmarkSearch searches ~10,000 files for a literal with
// filesystem.search, end to end, and with grep -rn on the same tree in the
// same run.
func BenchmarkSearch(b *testing.B) {
	dir := searchTree(b)
	h := newHost(b, fsSpec("filesystem.search", dir, nil))
	const args = `{"pattern":"zanzibar needle","max_results":1000}`
	want := 50
	b.Run("filesystem.search", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := invoke(b, h, "filesystem.search", args)
			if err != nil {
				b.Fatal(err)
			}
			if n := strings.Count(res.TextContent(), "zanzibar"); n != want {
				b.Fatalf("%d matches, want %d:\n%s", n, want, res.TextContent())
			}
		}
	})
	// The walk alone: every directory listed and every name looked at,
	// no file opened.
	b.Run("filesystem.search-names-only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := invoke(b, h, "filesystem.search", `{"name":"*.nomatch"}`)
			if err != nil {
				b.Fatal(err)
			}
			if !strings.Contains(res.TextContent(), "no matches") {
				b.Fatalf("names-only search: %s", res.TextContent())
			}
		}
	})
	grep, err := exec.LookPath("grep")
	if err != nil {
		b.Skip("no grep")
	}
	b.Run("grep-rn", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var out bytes.Buffer
			cmd := exec.Command(grep, "-rn", "zanzibar needle", dir)
			cmd.Stdout = &out
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
			if n := bytes.Count(out.Bytes(), []byte("zanzibar")); n != want {
				b.Fatalf("grep: %d matches, want %d", n, want)
			}
		}
	})
}
