package wasmbin

import "fmt"

// Opcodes the rewriters look at or emit.
const (
	OpUnreachable        byte = 0x00
	OpNop                byte = 0x01
	OpBlock              byte = 0x02
	OpLoop               byte = 0x03
	OpIf                 byte = 0x04
	OpElse               byte = 0x05
	OpEnd                byte = 0x0b
	OpBr                 byte = 0x0c
	OpBrIf               byte = 0x0d
	OpBrTable            byte = 0x0e
	OpReturn             byte = 0x0f
	OpCall               byte = 0x10
	OpCallIndirect       byte = 0x11
	OpReturnCall         byte = 0x12
	OpReturnCallIndirect byte = 0x13
	OpDrop               byte = 0x1a
	OpLocalGet           byte = 0x20
	OpLocalSet           byte = 0x21
	OpLocalTee           byte = 0x22
	OpGlobalGet          byte = 0x23
	OpGlobalSet          byte = 0x24
	OpI32Const           byte = 0x41
	OpI64Const           byte = 0x42
	OpF32Const           byte = 0x43
	OpF64Const           byte = 0x44
	OpI64LtS             byte = 0x53
	OpI64Sub             byte = 0x7d
	OpRefNull            byte = 0xd0
	OpRefFunc            byte = 0xd2
	OpPrefixFC           byte = 0xfc
	OpPrefixSIMD         byte = 0xfd
	OpPrefixAtomic       byte = 0xfe
	BlockTypeEmpty       byte = 0x40
)

// Instr is one decoded instruction. Offsets are relative to the decoder's
// input.
type Instr struct {
	// Op is the first opcode byte; Sub is the sub-opcode of prefixed
	// instructions (0xfc, 0xfd, 0xfe).
	Op  byte
	Sub uint32
	// Start and End delimit the whole instruction.
	Start, End int
	// Index is the first index immediate: the function of call, return_call
	// and ref.func, the label of br and br_if, the local or global of
	// local.* and global.*, the type of call_indirect.
	Index uint32
	// IndexStart and IndexEnd delimit Index's encoding (both 0 if none).
	IndexStart, IndexEnd int
	// Labels holds br_table's targets, default last. It is only valid until
	// the next call to Next.
	Labels []uint32
}

// Decoder walks an instruction sequence.
type Decoder struct {
	r      Reader
	labels []uint32
}

// NewDecoder returns a decoder over an instruction sequence.
func NewDecoder(b []byte) *Decoder { return &Decoder{r: Reader{b: b}} }

// Pos is the offset of the next instruction.
func (d *Decoder) Pos() int { return d.r.pos }

// EOF reports whether the input is exhausted.
func (d *Decoder) EOF() bool { return d.r.EOF() }

// Next decodes the next instruction.
func (d *Decoder) Next() (Instr, error) {
	r := &d.r
	in := Instr{Start: r.pos}
	op, err := r.Byte()
	if err != nil {
		return in, err
	}
	in.Op = op
	index := func() error {
		in.IndexStart = r.pos
		v, err := r.U32()
		in.Index = v
		in.IndexEnd = r.pos
		return err
	}
	switch {
	case op == OpUnreachable, op == OpNop, op == OpElse, op == OpEnd, op == OpReturn,
		op == OpDrop, op == 0x1b, op >= 0x45 && op <= 0xc4, op == 0xd1:
	case op == OpBlock, op == OpLoop, op == OpIf:
		err = d.blockType()
	case op == OpBr, op == OpBrIf, op == OpCall, op == OpReturnCall, op == OpRefFunc,
		op >= OpLocalGet && op <= 0x26:
		err = index()
	case op == OpBrTable:
		err = d.brTable(&in)
	case op == OpCallIndirect, op == OpReturnCallIndirect:
		if err = index(); err == nil {
			_, err = r.U32()
		}
	case op == 0x1c:
		_, err = r.ValTypes()
	case op >= 0x28 && op <= 0x3e:
		err = d.memarg()
	case op == 0x3f, op == 0x40:
		_, err = r.U32()
	case op == OpI32Const:
		_, err = r.S64(32)
	case op == OpI64Const:
		_, err = r.S64(64)
	case op == OpF32Const:
		_, err = r.Bytes(4)
	case op == OpF64Const:
		_, err = r.Bytes(8)
	case op == OpRefNull:
		_, err = r.Byte()
	case op == OpPrefixFC:
		err = d.prefixFC(&in)
	case op == OpPrefixSIMD:
		err = d.prefixSIMD(&in)
	case op == OpPrefixAtomic:
		err = d.prefixAtomic(&in)
	default:
		return in, &UnsupportedError{What: fmt.Sprintf("opcode 0x%02x at offset %d", op, in.Start)}
	}
	in.End = r.pos
	return in, err
}

func (d *Decoder) blockType() error {
	r := &d.r
	if r.pos >= len(r.b) {
		return malformed("unexpected end")
	}
	switch c := r.b[r.pos]; c {
	case BlockTypeEmpty, I32, I64, F32, F64, V128, FuncRef, ExternRef:
		r.pos++
		return nil
	}
	v, err := r.S64(33)
	if err == nil && v < 0 {
		return &UnsupportedError{What: fmt.Sprintf("block type %d", v)}
	}
	return err
}

func (d *Decoder) brTable(in *Instr) error {
	r := &d.r
	n, err := r.U32()
	if err != nil {
		return err
	}
	if int(n) > len(r.b)-r.pos {
		return malformed("br_table too long")
	}
	d.labels = d.labels[:0]
	for i := uint32(0); i <= n; i++ {
		l, err := r.U32()
		if err != nil {
			return err
		}
		d.labels = append(d.labels, l)
	}
	in.Labels = d.labels
	return nil
}

func (d *Decoder) memarg() error {
	r := &d.r
	align, err := r.U32()
	if err != nil {
		return err
	}
	if align&0x40 != 0 {
		if _, err := r.U32(); err != nil {
			return err
		}
	}
	_, err = r.U64()
	return err
}

func (d *Decoder) prefixFC(in *Instr) error {
	r := &d.r
	sub, err := r.U32()
	if err != nil {
		return err
	}
	in.Sub = sub
	n := 0
	switch {
	case sub <= 7:
	case sub == 8, sub == 10, sub == 12, sub == 14:
		n = 2
	case sub == 9, sub == 11, sub == 13, sub == 15, sub == 16, sub == 17:
		n = 1
	default:
		return &UnsupportedError{What: fmt.Sprintf("opcode 0xfc %d", sub)}
	}
	for i := 0; i < n; i++ {
		if _, err := r.U32(); err != nil {
			return err
		}
	}
	return nil
}

func (d *Decoder) prefixSIMD(in *Instr) error {
	r := &d.r
	sub, err := r.U32()
	if err != nil {
		return err
	}
	in.Sub = sub
	switch {
	case sub <= 11, sub == 92, sub == 93:
		return d.memarg()
	case sub == 12, sub == 13:
		_, err = r.Bytes(16)
	case sub >= 21 && sub <= 34:
		_, err = r.Byte()
	case sub >= 84 && sub <= 91:
		if err = d.memarg(); err == nil {
			_, err = r.Byte()
		}
	case sub <= 255:
	default:
		return &UnsupportedError{What: fmt.Sprintf("opcode 0xfd %d", sub)}
	}
	return err
}

func (d *Decoder) prefixAtomic(in *Instr) error {
	r := &d.r
	sub, err := r.U32()
	if err != nil {
		return err
	}
	in.Sub = sub
	switch {
	case sub == 3:
		_, err = r.Byte()
		return err
	case sub <= 2, sub >= 0x10 && sub <= 0x4e:
		return d.memarg()
	}
	return &UnsupportedError{What: fmt.Sprintf("opcode 0xfe %d", sub)}
}
