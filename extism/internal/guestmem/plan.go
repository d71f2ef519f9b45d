package guestmem

import (
	"bytes"
	"slices"

	"github.com/toolhost/toolhost/extism/internal/wasmbin"
)

// span is a byte range [off, end) of a guest memory.
type span struct{ off, end uint64 }

// Plan describes what instantiating a module writes into its memory:
// the active data segments, each copied in whole (zero bytes included) over
// whatever the memory held. A recycled memory given to that module need
// not be cleared where a segment will overwrite it, only in the gaps
// (pool_unix.go). For a snapshot of a Go guest the segments cover about
// half of the initial memory.
type Plan struct {
	size   uint64 // the memory's initial size
	ranges []span // sorted, merged, within [0, size)
}

// NewPlan reads the data segments of code's memory 0; nil when the
// module has none worth the trouble or any segment is not at a constant
// offset.
func NewPlan(code []byte, size uint64) *Plan {
	m, err := wasmbin.Parse(code)
	if err != nil || size == 0 {
		return nil
	}
	sec, ok := m.Find(wasmbin.SectionData)
	if !ok {
		return nil
	}
	r := wasmbin.NewReader(sec)
	n, err := r.U32()
	if err != nil {
		return nil
	}
	var ranges []span
	for range n {
		flags, err := r.U32()
		if err != nil {
			return nil
		}
		active := true
		switch flags {
		case 0:
		case 1:
			active = false
		case 2:
			if mem, err := r.U32(); err != nil || mem != 0 {
				return nil
			}
		default:
			return nil
		}
		var off uint64
		if active {
			expr, err := r.ConstExpr()
			if err != nil {
				return nil
			}
			er := wasmbin.NewReader(expr)
			if op, err := er.Byte(); err != nil || op != wasmbin.OpI32Const {
				return nil // an offset read from a global: not known here
			}
			v, err := er.S64(32)
			if err != nil {
				return nil
			}
			if end, err := er.Byte(); err != nil || end != wasmbin.OpEnd {
				return nil
			}
			off = uint64(uint32(v))
		}
		length, err := r.U32()
		if err != nil {
			return nil
		}
		if _, err := r.Bytes(int(length)); err != nil {
			return nil
		}
		if !active || length == 0 {
			continue
		}
		end := off + uint64(length)
		if end > size {
			return nil // instantiation fails; nothing to plan
		}
		ranges = append(ranges, span{off, end})
	}
	if len(ranges) == 0 {
		return nil
	}
	slices.SortFunc(ranges, func(a, b span) int {
		switch {
		case a.off < b.off:
			return -1
		case a.off > b.off:
			return 1
		}
		return 0
	})
	merged := ranges[:1]
	for _, x := range ranges[1:] {
		last := &merged[len(merged)-1]
		if x.off <= last.end {
			last.end = max(last.end, x.end)
			continue
		}
		merged = append(merged, x)
	}
	return &Plan{size: size, ranges: merged}
}

// clearExcept zeroes b[lo:hi] except where p's segments will be written.
func (p *Plan) clearExcept(b []byte, lo, hi uint64) {
	pos := lo
	for _, x := range p.ranges {
		if x.end <= pos {
			continue
		}
		if x.off >= hi {
			break
		}
		if x.off > pos {
			clearDirty(b[pos:x.off])
		}
		pos = max(pos, x.end)
		if pos >= hi {
			return
		}
	}
	if pos < hi {
		clearDirty(b[pos:hi])
	}
}

// zeroChunk is what clearDirty compares with; it is never written.
var zeroChunk [4096]byte

// clearDirty zeroes b, writing only the 4 KiB chunks that are not zero
// already. Most of a recycled memory is (a call changes a few dozen pages
// of a Go guest's 4.5 MiB), and reading a chunk costs about half of
// clearing it, which reads the cache lines in as well and writes them back.
func clearDirty(b []byte) {
	for len(b) > 0 {
		n := min(len(b), len(zeroChunk))
		if !bytes.Equal(b[:n], zeroChunk[:n]) {
			clear(b[:n])
		}
		b = b[n:]
	}
}
