//go:build unix

package extism

import (
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// mappedMemory is a guest memory in address space reserved up front for
// its whole limit, outside the Go heap: growing it never copies, pages are
// backed (and zeroed) by the kernel when first touched, and the garbage
// collector never scans or moves it. Free returns it to the kernel.
type mappedMemory struct {
	lim *memLimiter
	buf []byte // len = current size, cap = reserved
}

// mapMemory reserves max bytes, or returns nil to fall back to the heap.
func mapMemory(m *memLimiter, max uint64) experimental.LinearMemory {
	if max == 0 || max > 1<<32 {
		return nil
	}
	if b := m.pool.get(max); b != nil {
		return &mappedMemory{lim: m, buf: b}
	}
	b, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|mapNoReserve)
	if err != nil {
		return nil
	}
	return &mappedMemory{lim: m, buf: b[:0]}
}

// Reallocate implements experimental.LinearMemory.
func (l *mappedMemory) Reallocate(size uint64) []byte {
	if size > l.lim.limit.Load() || size > uint64(cap(l.buf)) {
		l.lim.refuse()
		return nil
	}
	l.buf = l.buf[:size]
	return l.buf
}

// Free implements experimental.LinearMemory.
func (l *mappedMemory) Free() {
	if l.buf != nil {
		if !l.lim.pool.put(l.buf) {
			_ = syscall.Munmap(l.buf[:cap(l.buf)])
		}
		l.buf = nil
	}
}
