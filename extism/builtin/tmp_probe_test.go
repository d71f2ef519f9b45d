package builtin_test

import (
	"os"
	"testing"
	"time"
)

func BenchmarkProbe(b *testing.B) {
	dir := searchTree(b)
	h := newHost(b, fsSpec("filesystem.search", dir, nil))
	a := os.Getenv("PROBE_ARGS")
	for range 3 {
		invoke(b, h, "filesystem.search", a)
	}
	os.WriteFile("/tmp/probe.ready", []byte("x"), 0o644)
	time.Sleep(3 * time.Second)
	start := time.Now()
	for range 5 {
		if _, err := invoke(b, h, "filesystem.search", a); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("%s: %v", a, time.Since(start)/5)
	os.WriteFile("/tmp/probe.done", []byte("x"), 0o644)
}
