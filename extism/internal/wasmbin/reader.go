package wasmbin

import (
	"unicode/utf8"
)

// Reader decodes primitive values from a byte slice.
type Reader struct {
	b   []byte
	pos int
}

// NewReader returns a reader over b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Pos is the offset of the next byte.
func (r *Reader) Pos() int { return r.pos }

// EOF reports whether all bytes were read.
func (r *Reader) EOF() bool { return r.pos >= len(r.b) }

// End returns an error unless all bytes were read.
func (r *Reader) End() error {
	if r.pos != len(r.b) {
		return malformed("%d trailing bytes", len(r.b)-r.pos)
	}
	return nil
}

// Byte reads one byte.
func (r *Reader) Byte() (byte, error) {
	if r.pos >= len(r.b) {
		return 0, malformed("truncated: unexpected end at byte %d", r.pos)
	}
	c := r.b[r.pos]
	r.pos++
	return c, nil
}

// Bytes reads n bytes, aliasing the input.
func (r *Reader) Bytes(n int) ([]byte, error) {
	if n < 0 || n > len(r.b)-r.pos {
		return nil, malformed("truncated: need %d bytes at %d, have %d", n, r.pos, len(r.b)-r.pos)
	}
	s := r.b[r.pos : r.pos+n]
	r.pos += n
	return s, nil
}

// U32 reads an unsigned LEB128 u32.
func (r *Reader) U32() (uint32, error) {
	v, err := r.uleb(32)
	return uint32(v), err
}

// U64 reads an unsigned LEB128 u64.
func (r *Reader) U64() (uint64, error) { return r.uleb(64) }

func (r *Reader) uleb(bits uint) (uint64, error) {
	var v uint64
	var shift uint
	for {
		c, err := r.Byte()
		if err != nil {
			return 0, err
		}
		if shift >= bits || (shift+7 > bits && uint64(c&0x7f)>>(bits-shift) != 0) {
			return 0, malformed("integer too large")
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, nil
		}
		shift += 7
	}
}

// S64 reads a signed LEB128 value of at most bits bits (33 or 64 in practice,
// 32 for i32.const).
func (r *Reader) S64(bits uint) (int64, error) {
	var v int64
	var shift uint
	var c byte
	for {
		var err error
		c, err = r.Byte()
		if err != nil {
			return 0, err
		}
		if shift >= bits {
			return 0, malformed("integer too large")
		}
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			break
		}
	}
	if shift < 64 && c&0x40 != 0 {
		v |= -1 << shift
	}
	return v, nil
}

// Name reads a length-prefixed UTF-8 name.
func (r *Reader) Name() (string, error) {
	n, err := r.U32()
	if err != nil {
		return "", err
	}
	b, err := r.Bytes(int(n))
	if err != nil {
		return "", err
	}
	if !utf8.Valid(b) {
		return "", malformed("name is not UTF-8")
	}
	return string(b), nil
}

// ValTypes reads a vector of value types.
func (r *Reader) ValTypes() ([]byte, error) {
	n, err := r.U32()
	if err != nil {
		return nil, err
	}
	b, err := r.Bytes(int(n))
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), b...), nil
}

func (r *Reader) skipLimits() error {
	flags, err := r.Byte()
	if err != nil {
		return err
	}
	if _, err := r.U64(); err != nil {
		return err
	}
	if flags&1 != 0 {
		_, err = r.U64()
	}
	return err
}

// ConstExpr reads a constant expression up to and including its end opcode
// and returns its raw bytes.
func (r *Reader) ConstExpr() ([]byte, error) {
	start := r.pos
	d := NewDecoder(r.b[r.pos:])
	for {
		in, err := d.Next()
		if err != nil {
			return nil, err
		}
		if in.Op == OpEnd {
			break
		}
	}
	r.pos += d.Pos()
	return r.b[start:r.pos], nil
}

// AppendU32 appends v as unsigned LEB128.
func AppendU32(out []byte, v uint32) []byte { return AppendU64(out, uint64(v)) }

// AppendU64 appends v as unsigned LEB128.
func AppendU64(out []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			out = append(out, c|0x80)
		} else {
			return append(out, c)
		}
	}
}

// AppendS64 appends v as signed LEB128.
func AppendS64(out []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(out, c)
		}
		out = append(out, c|0x80)
	}
}

// AppendName appends a length-prefixed name.
func AppendName(out []byte, s string) []byte {
	out = AppendU32(out, uint32(len(s)))
	return append(out, s...)
}
