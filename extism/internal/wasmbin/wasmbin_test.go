package wasmbin

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

func FuzzLEB(f *testing.F) {
	for _, v := range []int64{0, 1, -1, 63, 64, -64, -65, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v int64) {
		r := NewReader(AppendS64(nil, v))
		got, err := r.S64(64)
		if err != nil || got != v || !r.EOF() {
			t.Fatalf("S64 round trip of %d: %d, %v", v, got, err)
		}
		r = NewReader(AppendU64(nil, uint64(v)))
		u, err := r.U64()
		if err != nil || u != uint64(v) || !r.EOF() {
			t.Fatalf("U64 round trip of %d: %d, %v", uint64(v), u, err)
		}
		if v >= 0 && v <= math.MaxUint32 {
			u32, err := NewReader(AppendU32(nil, uint32(v))).U32()
			if err != nil || u32 != uint32(v) {
				t.Fatalf("U32 round trip of %d: %d, %v", v, u32, err)
			}
		}
	})
}

func TestReaderRejects(t *testing.T) {
	for name, b := range map[string][]byte{
		"u32 too long":      {0x80, 0x80, 0x80, 0x80, 0x80, 0x01},
		"u32 too large":     {0xff, 0xff, 0xff, 0xff, 0x1f},
		"truncated":         {0x80},
		"empty":             {},
		"name not utf8":     {2, 0xff, 0xfe},
		"name past the end": {5, 'a'},
	} {
		t.Run(name, func(t *testing.T) {
			r := NewReader(b)
			var err error
			if name[:4] == "name" {
				_, err = r.Name()
			} else {
				_, err = r.U32()
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
		})
	}
}

func TestParseAndEncode(t *testing.T) {
	m := &Module{}
	m.Set(SectionCode, AppendU32(nil, 0))
	m.Set(SectionType, EncodeTypes(nil))
	m.Set(SectionFunction, EncodeU32Vec(nil))
	m.Sections = append(m.Sections, Section{ID: SectionCustom, Data: append(AppendName(nil, "note"), 1, 2, 3)})
	m.Set(SectionExport, EncodeExports(nil))
	var ids []byte
	for _, s := range m.Sections {
		ids = append(ids, s.ID)
	}
	if want := []byte{SectionType, SectionFunction, SectionExport, SectionCode, SectionCustom}; !bytes.Equal(ids, want) {
		t.Fatalf("section order %v, want %v", ids, want)
	}
	b := m.Encode()
	back, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.Encode(), b) {
		t.Fatal("parse/encode is not the identity")
	}
	if back.Sections[4].CustomName() != "note" {
		t.Fatalf("custom name %q", back.Sections[4].CustomName())
	}

	swapped := &Module{Sections: []Section{{ID: SectionCode, Data: AppendU32(nil, 0)}, {ID: SectionType, Data: EncodeTypes(nil)}}}
	if _, err := Parse(swapped.Encode()); !errors.Is(err, ErrMalformed) {
		t.Fatalf("out-of-order sections: err = %v", err)
	}
	if _, err := Parse([]byte("\x00asm\x02\x00\x00\x00")); !errors.Is(err, ErrMalformed) {
		t.Fatalf("wrong version: err = %v", err)
	}
}

func TestDecoderImmediates(t *testing.T) {
	// One instruction of each immediate shape, then end.
	code := []byte{
		OpBlock, 0x7f, // block (result i32)
		OpI32Const, 0x7f, // i32.const -1
		OpBrTable, 2, 0, 0, 0, // br_table 0 0 0
		OpEnd,
		OpI64Const, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f, // i64.const min
		OpDrop,
		OpF64Const, 0, 0, 0, 0, 0, 0, 0, 0, OpDrop,
		0x28, 0x02, 0x10, // i32.load align=2 offset=16
		OpPrefixSIMD, 12, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, // v128.const
		OpPrefixSIMD, 21, 3, // i8x16.extract_lane_s 3
		OpPrefixSIMD, 84, 0, 0, 1, // v128.load8_lane
		OpPrefixFC, 10, 0, 0, // memory.copy
		OpPrefixFC, 0, // i32.trunc_sat_f32_s
		OpPrefixAtomic, 3, 0, // atomic.fence
		OpPrefixAtomic, 0x10, 2, 0, // i32.atomic.load
		OpCallIndirect, 1, 0,
		0x1c, 1, I32, // select (result i32)
		OpRefFunc, 0x81, 0x01, // ref.func 129
		OpEnd,
	}
	d := NewDecoder(code)
	var ops []byte
	var refFunc Instr
	for !d.EOF() {
		in, err := d.Next()
		if err != nil {
			t.Fatalf("at %d: %v", d.Pos(), err)
		}
		ops = append(ops, in.Op)
		if in.Op == OpRefFunc {
			refFunc = in
		}
	}
	if len(ops) != 20 {
		t.Fatalf("decoded %d instructions: % x", len(ops), ops)
	}
	if refFunc.Index != 129 || code[refFunc.IndexStart] != 0x81 || refFunc.IndexEnd-refFunc.IndexStart != 2 {
		t.Fatalf("ref.func immediate: %+v", refFunc)
	}
	out := AppendInstr(nil, code, &refFunc, func(f uint32) uint32 { return f + 1 })
	if !bytes.Equal(out, []byte{OpRefFunc, 0x82, 0x01}) {
		t.Fatalf("remapped ref.func % x", out)
	}
	var unsupported *UnsupportedError
	if _, err := NewDecoder([]byte{0x1f, 0x40}).Next(); !errors.As(err, &unsupported) {
		t.Fatalf("try_table: err = %v", err)
	}
}
