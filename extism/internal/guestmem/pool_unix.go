//go:build unix

package guestmem

import (
	"sync"
	"syscall"
)

// Pool keeps the address-space reservations of closed instances' guest
// memories for the next instances of any tool of the adapter. With a
// snapshot, creating an instance is mostly copying the snapshot's memory
// image into a new memory; into a fresh reservation every page of it is a
// page fault (~2 ms for a Go guest here), into a recycled one it is a plain
// copy. A recycled memory is cleared as the new instance takes it into use
// (mappedMemory.Reallocate: its initial size at instantiation, the rest as
// it grows), before the guest runs, so nothing passes from one instance to
// the next; clearing it then rather than when it is returned leaves it in
// the CPU caches for the instance's first call, which otherwise reads the
// whole of its memory image from DRAM. Where instantiation is about to
// write a data segment anyway, it is not cleared first (Plan).
type Pool struct {
	mu     sync.Mutex
	free   [][]byte // len = the bytes that may hold data (not yet cleared), cap = the reservation
	held   int      // sum of len(free[i]): resident memory kept
	closed bool
	misses int // get calls that found nothing to reuse
}

const (
	// poolBytes bounds the memory the pool keeps resident, counted as
	// the bytes the kept memories had used (a Go guest instance has two
	// memories, its own and the Extism kernel's, ~3 MiB on average). It
	// must cover the memories released in a burst when a tool's retired
	// instances are closed together, or the next instances miss.
	poolBytes = 64 << 20
	// poolMaxUsed is the most a memory may have used to be kept.
	poolMaxUsed = 16 << 20
)

// get returns a reservation of exactly size bytes, or nil, and how many of
// its first bytes may hold an earlier instance's data: the caller clears
// them before use.
func (p *Pool) get(size uint64) ([]byte, uint64) {
	if p == nil {
		return nil, 0
	}
	p.mu.Lock()
	var found []byte
	for i := len(p.free) - 1; i >= 0; i-- {
		if b := p.free[i]; uint64(cap(b)) == size {
			p.free = append(p.free[:i], p.free[i+1:]...)
			p.held -= len(b)
			found = b
			break
		}
	}
	if found == nil {
		p.misses++
	}
	p.mu.Unlock()
	if found == nil {
		return nil, 0
	}
	return found[:0], uint64(len(found))
}

// put takes back a reservation whose first len(b) bytes may hold data;
// false means the caller unmaps it.
func (p *Pool) put(b []byte) bool {
	if p == nil || len(b) > poolMaxUsed {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held+len(b) > poolBytes || p.closed {
		return false
	}
	p.free = append(p.free, b)
	p.held += len(b)
	return true
}

// Misses is how many memories were asked for that the pool could not
// give: each was reserved afresh, and costs a page fault per page.
func (p *Pool) Misses() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.misses
}

// Len is the number of memories kept.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free)
}

// Drain unmaps the kept reservations; the pool keeps nothing from then on.
func (p *Pool) Drain() {
	p.mu.Lock()
	free := p.free
	p.free, p.held, p.closed = nil, 0, true
	p.mu.Unlock()
	for _, b := range free {
		_ = syscall.Munmap(b[:cap(b)])
	}
}
