package snapshot

import (
	"sync"

	"github.com/tetratelabs/wazero/experimental"
)

// poolAllocator recycles the linear memories of closed instances (cleared
// before reuse), so creating an instance neither allocates nor triggers the
// garbage collector for its memory. It shows what instance creation costs
// once the linear memory is no longer a fresh multi-megabyte Go allocation
// (see docs/snapshot.md); the extism adapter has its own allocator.
type poolAllocator struct{ pool sync.Pool }

func (a *poolAllocator) Allocate(capacity, max uint64) experimental.LinearMemory {
	return &poolMemory{a: a}
}

type poolMemory struct {
	a   *poolAllocator
	buf []byte
}

func (m *poolMemory) Reallocate(size uint64) []byte {
	if m.buf == nil {
		if b, ok := m.a.pool.Get().(*[]byte); ok && uint64(cap(*b)) >= size {
			m.buf = (*b)[:size]
			clear(m.buf)
			return m.buf
		}
		m.buf = make([]byte, size)
		return m.buf
	}
	if size <= uint64(cap(m.buf)) {
		old := len(m.buf)
		m.buf = m.buf[:size]
		clear(m.buf[old:])
		return m.buf
	}
	nb := make([]byte, size, size+size/2)
	copy(nb, m.buf)
	m.buf = nb
	return m.buf
}

func (m *poolMemory) Free() {
	if m.buf != nil {
		b := m.buf[:0]
		m.a.pool.Put(&b)
		m.buf = nil
	}
}

var testAllocator experimental.MemoryAllocator = &poolAllocator{}
