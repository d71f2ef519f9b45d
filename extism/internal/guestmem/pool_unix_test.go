//go:build unix

package guestmem

import (
	"bytes"
	"testing"
)

// TestMemPool checks that a recycled guest memory comes back cleared, only
// to a memory of the same reservation, and that a closed pool keeps none.
func TestMemPool(t *testing.T) {
	var p Pool
	lim := &Allocator{Pool: &p}
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
	p.Drain()
	m2 := lim.Allocate(0, 1<<24)
	m2.Reallocate(4096)
	m2.Free()
	if len(p.free) != 0 {
		t.Fatal("a drained pool kept a memory")
	}
}
