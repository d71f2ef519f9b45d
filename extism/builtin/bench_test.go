package builtin_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
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
func pacedLatency(b *testing.B, call func()) {
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		time.Sleep(20 * time.Millisecond)
		t0 := time.Now()
		call()
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
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
