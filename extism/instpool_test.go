package extism

import (
	"testing"
	"time"

	"github.com/toolhost/toolhost/plugin"
)

// TestInstPool checks the pool's order (newest first), its size and that a
// closed pool hands back what it held and takes nothing more.
func TestInstPool(t *testing.T) {
	p := newInstPool(2)
	a, b, c := &instance{}, &instance{}, &instance{}
	if p.pop() != nil || p.full() {
		t.Fatal("a new pool is not empty")
	}
	p.push(a)
	p.push(b)
	if !p.full() {
		t.Fatal("a pool of 2 holding 2 is not full")
	}
	if got := p.pop(); got != b {
		t.Fatal("pop did not return the newest instance")
	}
	p.push(c)
	if got := p.pop(); got != c {
		t.Fatal("pop did not return the newest instance")
	}
	held := p.close()
	if len(held) != 1 || held[0] != a {
		t.Fatalf("close returned %d instances, want the one left", len(held))
	}
	if p.push(b) || p.pop() != nil {
		t.Fatal("a closed pool took an instance")
	}
}

// TestRetiredClosedWithFullPool: an instance used by a call that did not
// take it from the pool (its spec mounts something else) is closed soon
// after the call, although the pool is still full.
func TestRetiredClosedWithFullPool(t *testing.T) {
	a, err := New(Config{CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	sp := guestSpec("fixtures", "echo")
	sp.Limits.Pool = 1
	wt := loadWith(t, a, sp).(*wasmTool)
	if _, err := call(t, wt, &sp, map[string]any{"text": "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pool to refill", func() bool { return wt.pool.full() && wt.live.Load() == 1 })
	other := sp
	other.Capabilities.Mounts = []plugin.Mount{{HostPath: t.TempDir(), GuestPath: "/data", ReadOnly: true}}
	if _, err := call(t, wt, &other, map[string]any{"text": "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the used instance to be closed", func() bool { return wt.live.Load() == 1 })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
