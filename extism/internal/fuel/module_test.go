package fuel

import (
	"github.com/toolhost/toolhost/extism/internal/wasmbin"
)

// testModule assembles small modules for tests without external tools.
type testModule struct {
	types   []wasmbin.FuncType
	imports []wasmbin.Import
	funcs   []testFunc
	globals []wasmbin.Global
	exports []wasmbin.Export
	memory  bool
	table   []uint32 // function indices placed in table 0 from offset 0
}

type testFunc struct {
	typ    uint32
	locals []wasmbin.LocalRun
	body   []byte // without the final end
}

func (m *testModule) encode() []byte {
	mod := &wasmbin.Module{}
	if len(m.types) > 0 {
		mod.Set(wasmbin.SectionType, wasmbin.EncodeTypes(m.types))
	}
	if len(m.imports) > 0 {
		mod.Set(wasmbin.SectionImport, wasmbin.EncodeImports(m.imports))
	}
	var fs []uint32
	code := wasmbin.AppendU32(nil, uint32(len(m.funcs)))
	for _, f := range m.funcs {
		fs = append(fs, f.typ)
		code = wasmbin.AppendCode(code, &wasmbin.Code{Locals: f.locals, Body: append(append([]byte(nil), f.body...), wasmbin.OpEnd)})
	}
	if len(fs) > 0 {
		mod.Set(wasmbin.SectionFunction, wasmbin.EncodeU32Vec(fs))
		mod.Set(wasmbin.SectionCode, code)
	}
	if len(m.table) > 0 {
		// funcref table, min = max = len(table)
		t := []byte{1, wasmbin.FuncRef, 1}
		t = wasmbin.AppendU32(t, uint32(len(m.table)))
		t = wasmbin.AppendU32(t, uint32(len(m.table)))
		mod.Set(wasmbin.SectionTable, t)
		e := []byte{1, 0, wasmbin.OpI32Const, 0, wasmbin.OpEnd}
		e = wasmbin.AppendU32(e, uint32(len(m.table)))
		for _, f := range m.table {
			e = wasmbin.AppendU32(e, f)
		}
		mod.Set(wasmbin.SectionElement, e)
	}
	if m.memory {
		mod.Set(wasmbin.SectionMemory, []byte{1, 0, 1})
	}
	if len(m.globals) > 0 {
		mod.Set(wasmbin.SectionGlobal, wasmbin.EncodeGlobals(m.globals))
	}
	if len(m.exports) > 0 {
		mod.Set(wasmbin.SectionExport, wasmbin.EncodeExports(m.exports))
	}
	return mod.Encode()
}

// asm is a tiny instruction assembler.
type asm []byte

func (a asm) op(ops ...byte) asm { return append(a, ops...) }

func (a asm) i32(v int32) asm {
	return wasmbin.AppendS64(append(a, wasmbin.OpI32Const), int64(v))
}

func (a asm) i64(v int64) asm {
	return wasmbin.AppendS64(append(a, wasmbin.OpI64Const), v)
}

func (a asm) idx(op byte, i uint32) asm { return wasmbin.AppendU32(append(a, op), i) }

func (a asm) callIndirect(typ uint32) asm {
	return append(wasmbin.AppendU32(append(a, wasmbin.OpCallIndirect), typ), 0)
}

func (a asm) brTable(labels ...uint32) asm {
	a = wasmbin.AppendU32(append(a, wasmbin.OpBrTable), uint32(len(labels)-1))
	for _, l := range labels {
		a = wasmbin.AppendU32(a, l)
	}
	return a
}

// incr adds one to the i64 global g.
func (a asm) incr(g uint32) asm {
	return a.idx(wasmbin.OpGlobalGet, g).i64(1).op(0x7c).idx(wasmbin.OpGlobalSet, g)
}

// Common value types and opcodes used by the tests.
const (
	opI32Add  = 0x6a
	opI32Sub  = 0x6b
	opI32Mul  = 0x6c
	opI32And  = 0x71
	opI32Or   = 0x72
	opI32Xor  = 0x73
	opI32Shl  = 0x74
	opI32ShrU = 0x76
	opI32Rotl = 0x77
	opI32Eqz  = 0x45
	opI32LtU  = 0x49
	opI32Load = 0x28
	opI32Stor = 0x36
	opSelect  = 0x1b
)

func counterGlobal() wasmbin.Global {
	return wasmbin.Global{Type: wasmbin.I64, Mutable: true, Init: []byte{wasmbin.OpI64Const, 0, wasmbin.OpEnd}}
}
