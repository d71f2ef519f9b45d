//go:build unix

package guestmem

import (
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// mappedMemory is a guest memory in address space reserved up front for
// its whole limit, outside the Go heap: growing it never copies, pages are
// backed (and zeroed) by the kernel when first touched, and the garbage
// collector never scans or moves it. Free returns it to the kernel.
type mappedMemory struct {
	lim *Allocator
	buf []byte // len = current size, cap = reserved
	// dirty: the bytes [len(buf), dirty) of a recycled reservation may
	// still hold an earlier instance's data; they are cleared as the
	// memory grows over them.
	dirty uint64
	// plan, when set, is what instantiation writes into this memory right
	// after its first Reallocate: that clears only the gaps between the
	// segments (Allocator.Allocate decides which memory it is for).
	plan *Plan
}

// mapMemory reserves max bytes, or returns nil to fall back to the heap.
func mapMemory(m *Allocator, max uint64) experimental.LinearMemory {
	if max == 0 || max > 1<<32 {
		return nil
	}
	mm := &mappedMemory{lim: m}
	if b, dirty := m.Pool.get(max); b != nil {
		mm.buf, mm.dirty = b, dirty
	} else {
		b, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|mapNoReserve)
		if err != nil {
			return nil
		}
		mm.buf = b[:0]
	}
	// An Extism instance has two memories, made in this order: the
	// kernel's, then the module's own, which the plan describes. the caller
	// checks afterwards that the first was indeed the kernel's
	// (Allocator.PlanWentToModule).
	switch len(m.made) {
	case 0:
		m.first = &mm.buf[:1][0]
	case 1:
		mm.plan = m.plan
	}
	return mm
}

func (l *mappedMemory) bytes() []byte { return l.buf }

func isMapped(lm experimental.LinearMemory) bool {
	_, ok := lm.(*mappedMemory)
	return ok
}

// Reallocate implements experimental.LinearMemory.
func (l *mappedMemory) Reallocate(size uint64) []byte {
	if size > l.lim.limit.Load() || size > uint64(cap(l.buf)) {
		l.lim.refuse()
		return nil
	}
	old := uint64(len(l.buf))
	l.buf = l.buf[:max(old, size)]
	if size > old && old < l.dirty {
		hi := min(size, l.dirty)
		if p := l.plan; p != nil && old == 0 && size == p.size {
			p.clearExcept(l.buf, 0, hi)
			l.lim.planned = true
		} else {
			clearDirty(l.buf[old:hi])
		}
	}
	l.plan = nil
	l.buf = l.buf[:size]
	return l.buf
}

// Free implements experimental.LinearMemory.
func (l *mappedMemory) Free() {
	if l.buf != nil {
		if !l.lim.Pool.put(l.buf[:max(uint64(len(l.buf)), l.dirty)]) {
			_ = syscall.Munmap(l.buf[:cap(l.buf)])
		}
		l.buf = nil
	}
}
