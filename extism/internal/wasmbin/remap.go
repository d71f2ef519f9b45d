package wasmbin

// RemapConstExpr rewrites the function indices of ref.func in a constant
// expression (including its end opcode).
func RemapConstExpr(expr []byte, remap func(uint32) uint32) ([]byte, error) {
	d := NewDecoder(expr)
	var out []byte
	for !d.EOF() {
		in, err := d.Next()
		if err != nil {
			return nil, err
		}
		out = AppendInstr(out, expr, &in, remap)
	}
	return out, nil
}

// AppendInstr appends the instruction in of src, rewriting the function index
// of call, return_call and ref.func with remap.
func AppendInstr(out, src []byte, in *Instr, remap func(uint32) uint32) []byte {
	switch in.Op {
	case OpCall, OpReturnCall, OpRefFunc:
		out = append(out, src[in.Start:in.IndexStart]...)
		out = AppendU32(out, remap(in.Index))
		return append(out, src[in.IndexEnd:in.End]...)
	}
	return append(out, src[in.Start:in.End]...)
}

// RemapElements rewrites the function indices of an element section.
func RemapElements(b []byte, remap func(uint32) uint32) ([]byte, error) {
	r := NewReader(b)
	n, err := r.U32()
	if err != nil {
		return nil, err
	}
	out := AppendU32(nil, n)
	for i := uint32(0); i < n; i++ {
		flags, err := r.U32()
		if err != nil {
			return nil, err
		}
		if flags > 7 {
			return nil, malformed("element segment flags %d", flags)
		}
		out = AppendU32(out, flags)
		if flags&3 == 2 { // explicit table index
			t, err := r.U32()
			if err != nil {
				return nil, err
			}
			out = AppendU32(out, t)
		}
		if flags&1 == 0 { // active: offset expression
			e, err := r.ConstExpr()
			if err != nil {
				return nil, err
			}
			out = append(out, e...)
		}
		if flags&3 != 0 { // element kind or reference type
			k, err := r.Byte()
			if err != nil {
				return nil, err
			}
			out = append(out, k)
		}
		cnt, err := r.U32()
		if err != nil {
			return nil, err
		}
		out = AppendU32(out, cnt)
		for j := uint32(0); j < cnt; j++ {
			if flags&4 == 0 {
				f, err := r.U32()
				if err != nil {
					return nil, err
				}
				out = AppendU32(out, remap(f))
				continue
			}
			e, err := r.ConstExpr()
			if err != nil {
				return nil, err
			}
			e, err = RemapConstExpr(e, remap)
			if err != nil {
				return nil, err
			}
			out = append(out, e...)
		}
	}
	return out, r.End()
}

// RemapNames rewrites the function indices of a "name" custom section's
// payload (after the section name): function names, local names and label
// names. Other subsections are kept as they are.
func RemapNames(b []byte, remap func(uint32) uint32) ([]byte, error) {
	r := NewReader(b)
	var out []byte
	for !r.EOF() {
		id, err := r.Byte()
		if err != nil {
			return nil, err
		}
		size, err := r.U32()
		if err != nil {
			return nil, err
		}
		sub, err := r.Bytes(int(size))
		if err != nil {
			return nil, err
		}
		switch id {
		case 1:
			sub, err = remapNameMap(sub, remap, false)
		case 2, 3:
			sub, err = remapNameMap(sub, remap, true)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, id)
		out = AppendU32(out, uint32(len(sub)))
		out = append(out, sub...)
	}
	return out, nil
}

func remapNameMap(b []byte, remap func(uint32) uint32, indirect bool) ([]byte, error) {
	r := NewReader(b)
	n, err := r.U32()
	if err != nil {
		return nil, err
	}
	out := AppendU32(nil, n)
	for i := uint32(0); i < n; i++ {
		idx, err := r.U32()
		if err != nil {
			return nil, err
		}
		out = AppendU32(out, remap(idx))
		start := r.Pos()
		if indirect {
			m, err := r.U32()
			if err != nil {
				return nil, err
			}
			for j := uint32(0); j < m; j++ {
				if _, err := r.U32(); err != nil {
					return nil, err
				}
				if _, err := r.Name(); err != nil {
					return nil, err
				}
			}
		} else if _, err := r.Name(); err != nil {
			return nil, err
		}
		out = append(out, b[start:r.Pos()]...)
	}
	return out, r.End()
}
