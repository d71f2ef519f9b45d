//go:build unix

package extism

import (
	"bytes"
	"testing"
)

// TestMemPool checks that a recycled guest memory comes back cleared, only
// to a memory of the same reservation, and that a closed pool keeps none.
func TestMemPool(t *testing.T) {
	var p memPool
	lim := &memLimiter{pool: &p}
	lim.limit.Store(1 << 24)
	alloc := func(max uint64) []byte {
		lm := lim.Allocate(0, max)
		t.Cleanup(lm.Free)
		return lm.Reallocate(1 << 20)
	}
	m1 := lim.Allocate(0, 1<<24)
	b := m1.Reallocate(1 << 20)
	for i := range b {
		b[i] = 0xa5
	}
	first := &b[0]
	m1.Free()
	if len(p.free) != 1 {
		t.Fatalf("pool holds %d memories after a free, want 1", len(p.free))
	}
	if other := alloc(1 << 23); &other[0] == first {
		t.Fatal("a reservation of another size was reused")
	}
	again := alloc(1 << 24)
	if &again[0] != first {
		t.Fatal("the freed reservation was not reused")
	}
	if !bytes.Equal(again, make([]byte, len(again))) {
		t.Fatal("a recycled memory holds the previous instance's bytes")
	}
	p.drain()
	m2 := lim.Allocate(0, 1<<24)
	m2.Reallocate(4096)
	m2.Free()
	if len(p.free) != 0 {
		t.Fatal("a drained pool kept a memory")
	}
}

// TestSustainedCallsRecycleMemories: back-to-back calls, with the pool
// refilling as they go, reuse the memories of the instances they used
// rather than reserving new ones (which costs a page fault per page of the
// memory image): used instances are closed before new ones are made.
func TestSustainedCallsRecycleMemories(t *testing.T) {
	a, err := New(Config{CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	sp := guestSpec("fixtures", "echo")
	tool := loadWith(t, a, sp)
	misses := func() int {
		a.mem.mu.Lock()
		defer a.mem.mu.Unlock()
		return a.mem.misses
	}
	for range 20 { // the memories in circulation settle
		if _, err := call(t, tool, &sp, map[string]any{"text": "hi"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	before := misses()
	const n = 300
	for range n {
		if _, err := call(t, tool, &sp, map[string]any{"text": "hi"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Two memories per instance: the module's and the Extism kernel's.
	m := misses() - before
	t.Logf("%d of %d memories reserved afresh", m, 2*n)
	if m > n/20 {
		t.Errorf("%d of %d memories for %d calls were reserved afresh", m, 2*n, n)
	}
}
