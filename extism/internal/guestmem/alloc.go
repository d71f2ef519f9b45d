package guestmem

import (
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// Allocator is the wazero memory allocator of one instance (install it
// with experimental.WithMemoryAllocator for the instantiation). It refuses
// to grow a memory past the limit and remembers that it did, so that the
// failure is reported as a limit hit rather than as a guest crash; it
// takes memories from Pool where it can, and spares clearing what a Plan
// says instantiation is about to write.
//
// An Extism instance has two memories, made in this order: the Extism
// kernel's, then the module's own. The Allocator records both (Memories),
// and the plan given to Expect applies to the second only.
type Allocator struct {
	// Pool, if set, recycles the reservations of closed instances' memories.
	Pool *Pool
	// OnHit, if set, is called when a memory is refused growth past the
	// limit, from the guest's goroutine.
	OnHit func()

	limit atomic.Uint64
	hit   atomic.Bool

	// Instantiation bookkeeping: the plan of the module's own memory,
	// every memory made (in order), where the first one starts if it is
	// mapped, and whether a plan was used.
	plan    *Plan
	made    []experimental.LinearMemory
	first   *byte
	planned bool
}

// SetLimit sets the most bytes any memory of the instance may hold; it
// applies to growth from then on.
func (m *Allocator) SetLimit(n uint64) { m.limit.Store(n) }

// Hit reports whether a memory was refused growth past the limit.
func (m *Allocator) Hit() bool { return m.hit.Load() }

// Expect sets the plan of the module's own memory, the second memory made
// by the next instantiation, or nil for none. Call Expect(nil) once the
// instantiation is done.
func (m *Allocator) Expect(p *Plan) { m.plan = p }

// Planned reports whether a memory was cleared according to a plan, that is
// only in the gaps between the data segments.
func (m *Allocator) Planned() bool { return m.planned }

// PlanWentToModule reports whether the plan was used for the module's own
// memory: exactly two memories were made, and the first, spared nothing,
// is the one that starts at kernel (the Extism kernel's). When it reports
// false after Planned, the instance must be discarded: a memory was not
// cleared under the segments that were written into another.
func (m *Allocator) PlanWentToModule(kernel *byte) bool {
	return len(m.made) == 2 && m.first != nil && kernel == m.first
}

// Memories returns the memories made, in order.
func (m *Allocator) Memories() []experimental.LinearMemory { return m.made }

// ModuleMemory returns the module's own memory as it is now, given where
// the Extism kernel's starts, or nil when the two cannot be told apart.
func (m *Allocator) ModuleMemory(kernel *byte) []byte {
	if len(m.made) != 2 || kernel == nil {
		return nil
	}
	k, mod := Bytes(m.made[0]), Bytes(m.made[1])
	if cap(k) == 0 || &k[:1][0] != kernel {
		return nil
	}
	return mod
}

// Allocate implements experimental.MemoryAllocator.
func (m *Allocator) Allocate(capacity, max uint64) experimental.LinearMemory {
	limit := m.limit.Load()
	if max > limit {
		max = limit
	}
	var lm experimental.LinearMemory
	if mm := mapMemory(m, max); mm != nil {
		lm = mm
	} else {
		lm = &linearMemory{lim: m, buf: make([]byte, 0, min(capacity, limit))}
	}
	m.made = append(m.made, lm)
	return lm
}

// refuse records that a memory was asked to grow past the limit.
func (m *Allocator) refuse() {
	m.hit.Store(true)
	if m.OnHit != nil {
		m.OnHit()
	}
}

// Bytes returns the current contents of a memory made by an Allocator, or
// nil for any other.
func Bytes(lm experimental.LinearMemory) []byte {
	if b, ok := lm.(interface{ bytes() []byte }); ok {
		return b.bytes()
	}
	return nil
}

// Mapped reports whether lm is a memory made by an Allocator in address
// space reserved outside the Go heap (unix), rather than on the heap.
func Mapped(lm experimental.LinearMemory) bool { return isMapped(lm) }

// linearMemory is a guest memory on the Go heap, grown by copying. It is
// the fallback where address space cannot be reserved (see mappedMemory).
type linearMemory struct {
	lim *Allocator
	buf []byte
}

func (l *linearMemory) bytes() []byte { return l.buf }

// Reallocate implements experimental.LinearMemory.
func (l *linearMemory) Reallocate(size uint64) []byte {
	limit := l.lim.limit.Load()
	if size > limit {
		l.lim.refuse()
		return nil
	}
	if size <= uint64(cap(l.buf)) {
		l.buf = l.buf[:size]
		return l.buf
	}
	newCap := uint64(cap(l.buf)) * 2
	if newCap < size {
		newCap = size
	}
	if newCap > limit {
		newCap = limit
	}
	nb := make([]byte, size, newCap)
	copy(nb, l.buf)
	l.buf = nb
	return nb
}

// Free implements experimental.LinearMemory.
func (l *linearMemory) Free() { l.buf = nil }
