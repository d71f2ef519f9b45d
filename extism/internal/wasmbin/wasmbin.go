// Package wasmbin reads and writes the parts of the WebAssembly binary format
// that toolhost's load-time module rewriters (fuel metering, snapshots) need.
//
// It works at the section level: a module is a list of raw sections, and only
// the sections a rewriter changes are decoded and re-encoded. Everything else
// (custom sections, data, tables, tags, sections it does not understand) is
// carried over byte for byte, in its original position. This keeps rewriting
// faithful on modules produced by any toolchain, which a full decode/encode
// round trip (as in tetratelabs/wabin, whose encoder drops the data count
// section and cannot encode passive element segments) does not.
//
// The instruction decoder covers WebAssembly 2.0 (MVP, sign extension,
// saturating conversions, bulk memory, reference types, multi-value, SIMD)
// plus threads' atomics and tail calls. Exception handling, typed function
// references and GC are reported as unsupported.
package wasmbin

import (
	"bytes"
	"errors"
	"fmt"
)

// Section IDs of the WebAssembly binary format.
const (
	SectionCustom    byte = 0
	SectionType      byte = 1
	SectionImport    byte = 2
	SectionFunction  byte = 3
	SectionTable     byte = 4
	SectionMemory    byte = 5
	SectionGlobal    byte = 6
	SectionExport    byte = 7
	SectionStart     byte = 8
	SectionElement   byte = 9
	SectionCode      byte = 10
	SectionData      byte = 11
	SectionDataCount byte = 12
	SectionTag       byte = 13
)

// External kinds used by imports and exports.
const (
	KindFunc   byte = 0
	KindTable  byte = 1
	KindMemory byte = 2
	KindGlobal byte = 3
	KindTag    byte = 4
)

// Value types.
const (
	I32       byte = 0x7f
	I64       byte = 0x7e
	F32       byte = 0x7d
	F64       byte = 0x7c
	V128      byte = 0x7b
	FuncRef   byte = 0x70
	ExternRef byte = 0x6f
)

var header = []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("malformed wasm")

// UnsupportedError reports a construct the rewriters do not handle, such as an
// instruction from a proposal outside WebAssembly 2.0.
type UnsupportedError struct {
	What string
}

func (e *UnsupportedError) Error() string { return "unsupported wasm: " + e.What }

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// Section is one raw section. For custom sections Data includes the name.
type Section struct {
	ID   byte
	Data []byte
}

// CustomName returns the name of a custom section, or "" for other sections
// or a malformed name.
func (s Section) CustomName() string {
	if s.ID != SectionCustom {
		return ""
	}
	r := NewReader(s.Data)
	name, err := r.Name()
	if err != nil {
		return ""
	}
	return name
}

// Module is a module as an ordered list of raw sections.
type Module struct {
	Sections []Section
}

// Parse splits a binary module into sections. Section contents are not
// validated; the caller decodes the ones it needs. The returned sections alias
// b.
func Parse(b []byte) (*Module, error) {
	if len(b) < len(header) || !bytes.Equal(b[:len(header)], header) {
		return nil, malformed("bad magic or version")
	}
	r := NewReader(b[len(header):])
	m := &Module{}
	var last int
	for !r.EOF() {
		id, err := r.Byte()
		if err != nil {
			return nil, err
		}
		size, err := r.U32()
		if err != nil {
			return nil, err
		}
		data, err := r.Bytes(int(size))
		if err != nil {
			return nil, malformed("section %d: %v", id, err)
		}
		if id != SectionCustom {
			rk := rank(id)
			if rk == 0 {
				return nil, &UnsupportedError{What: fmt.Sprintf("section id %d", id)}
			}
			if rk <= last {
				return nil, malformed("section %d out of order or repeated", id)
			}
			last = rk
		}
		m.Sections = append(m.Sections, Section{ID: id, Data: data})
	}
	return m, nil
}

// rank orders non-custom sections as the binary format requires.
func rank(id byte) int {
	switch id {
	case SectionType:
		return 1
	case SectionImport:
		return 2
	case SectionFunction:
		return 3
	case SectionTable:
		return 4
	case SectionMemory:
		return 5
	case SectionTag:
		return 6
	case SectionGlobal:
		return 7
	case SectionExport:
		return 8
	case SectionStart:
		return 9
	case SectionElement:
		return 10
	case SectionDataCount:
		return 11
	case SectionCode:
		return 12
	case SectionData:
		return 13
	}
	return 0
}

// Encode writes the module in binary form.
func (m *Module) Encode() []byte {
	n := len(header)
	for _, s := range m.Sections {
		n += 1 + 5 + len(s.Data)
	}
	out := make([]byte, 0, n)
	out = append(out, header...)
	for _, s := range m.Sections {
		out = append(out, s.ID)
		out = AppendU32(out, uint32(len(s.Data)))
		out = append(out, s.Data...)
	}
	return out
}

// Find returns the data of the first non-custom section with the given ID.
func (m *Module) Find(id byte) ([]byte, bool) {
	for _, s := range m.Sections {
		if s.ID == id {
			return s.Data, true
		}
	}
	return nil, false
}

// Set replaces the section with the given ID, or inserts it at the position
// the binary format requires.
func (m *Module) Set(id byte, data []byte) {
	for i, s := range m.Sections {
		if s.ID == id {
			m.Sections[i].Data = data
			return
		}
	}
	rk := rank(id)
	at := len(m.Sections)
	for i, s := range m.Sections {
		if s.ID != SectionCustom && rank(s.ID) > rk {
			at = i
			break
		}
	}
	m.Sections = append(m.Sections, Section{})
	copy(m.Sections[at+1:], m.Sections[at:])
	m.Sections[at] = Section{ID: id, Data: data}
}

// Remove deletes every section for which drop returns true.
func (m *Module) Remove(drop func(Section) bool) {
	kept := m.Sections[:0]
	for _, s := range m.Sections {
		if !drop(s) {
			kept = append(kept, s)
		}
	}
	m.Sections = kept
}

// FuncType is a function signature.
type FuncType struct {
	Params, Results []byte
}

// Import is one entry of the import section. Desc holds the raw descriptor
// after the kind byte; for functions TypeIndex is decoded too.
type Import struct {
	Module, Name string
	Kind         byte
	TypeIndex    uint32
	Desc         []byte
}

// Export is one entry of the export section.
type Export struct {
	Name  string
	Kind  byte
	Index uint32
}

// Global is one entry of the global section; Init is the raw constant
// expression including its final end opcode.
type Global struct {
	Type    byte
	Mutable bool
	Init    []byte
}

// Code is one entry of the code section.
type Code struct {
	// Locals are the local declarations as (count, type) runs.
	Locals []LocalRun
	// Body is the instruction sequence, ending with the end opcode.
	Body []byte
}

// LocalRun declares Count locals of Type.
type LocalRun struct {
	Count uint32
	Type  byte
}

// NumLocals is the number of locals declared (parameters excluded).
func (c *Code) NumLocals() uint64 {
	var n uint64
	for _, l := range c.Locals {
		n += uint64(l.Count)
	}
	return n
}

// DecodeTypes decodes the type section.
func DecodeTypes(b []byte) ([]FuncType, error) {
	r := NewReader(b)
	n, err := r.U32()
	if err != nil {
		return nil, err
	}
	types := make([]FuncType, 0, min(n, 1<<16))
	for i := uint32(0); i < n; i++ {
		form, err := r.Byte()
		if err != nil {
			return nil, err
		}
		if form != 0x60 {
			return nil, &UnsupportedError{What: fmt.Sprintf("type form 0x%x", form)}
		}
		var ft FuncType
		if ft.Params, err = r.ValTypes(); err != nil {
			return nil, err
		}
		if ft.Results, err = r.ValTypes(); err != nil {
			return nil, err
		}
		types = append(types, ft)
	}
	return types, r.End()
}

// EncodeTypes encodes a type section.
func EncodeTypes(types []FuncType) []byte {
	out := AppendU32(nil, uint32(len(types)))
	for _, t := range types {
		out = append(out, 0x60)
		out = AppendU32(out, uint32(len(t.Params)))
		out = append(out, t.Params...)
		out = AppendU32(out, uint32(len(t.Results)))
		out = append(out, t.Results...)
	}
	return out
}

// DecodeImports decodes the import section.
func DecodeImports(b []byte) ([]Import, error) {
	r := NewReader(b)
	n, err := r.U32()
	if err != nil {
		return nil, err
	}
	imports := make([]Import, 0, min(n, 1<<16))
	for i := uint32(0); i < n; i++ {
		var im Import
		if im.Module, err = r.Name(); err != nil {
			return nil, err
		}
		if im.Name, err = r.Name(); err != nil {
			return nil, err
		}
		if im.Kind, err = r.Byte(); err != nil {
			return nil, err
		}
		start := r.Pos()
		switch im.Kind {
		case KindFunc:
			im.TypeIndex, err = r.U32()
		case KindTable:
			if _, err = r.Byte(); err == nil {
				err = r.skipLimits()
			}
		case KindMemory:
			err = r.skipLimits()
		case KindGlobal:
			_, err = r.Bytes(2)
		case KindTag:
			if _, err = r.Byte(); err == nil {
				_, err = r.U32()
			}
		default:
			err = malformed("import kind %d", im.Kind)
		}
		if err != nil {
			return nil, err
		}
		im.Desc = r.b[start:r.pos]
		imports = append(imports, im)
	}
	return imports, r.End()
}

// EncodeImports encodes an import section.
func EncodeImports(imports []Import) []byte {
	out := AppendU32(nil, uint32(len(imports)))
	for _, im := range imports {
		out = AppendName(out, im.Module)
		out = AppendName(out, im.Name)
		out = append(out, im.Kind)
		if im.Kind == KindFunc {
			out = AppendU32(out, im.TypeIndex)
		} else {
			out = append(out, im.Desc...)
		}
	}
	return out
}

// DecodeU32Vec decodes a vector of u32 (the function section).
func DecodeU32Vec(b []byte) ([]uint32, error) {
	r := NewReader(b)
	n, err := r.U32()
	if err != nil {
		return nil, err
	}
	v := make([]uint32, 0, min(n, 1<<20))
	for i := uint32(0); i < n; i++ {
		x, err := r.U32()
		if err != nil {
			return nil, err
		}
		v = append(v, x)
	}
	return v, r.End()
}

// EncodeU32Vec encodes a vector of u32.
func EncodeU32Vec(v []uint32) []byte {
	out := AppendU32(nil, uint32(len(v)))
	for _, x := range v {
		out = AppendU32(out, x)
	}
	return out
}

// DecodeExports decodes the export section.
func DecodeExports(b []byte) ([]Export, error) {
	r := NewReader(b)
	n, err := r.U32()
	if err != nil {
		return nil, err
	}
	exports := make([]Export, 0, min(n, 1<<16))
	for i := uint32(0); i < n; i++ {
		var e Export
		if e.Name, err = r.Name(); err != nil {
			return nil, err
		}
		if e.Kind, err = r.Byte(); err != nil {
			return nil, err
		}
		if e.Index, err = r.U32(); err != nil {
			return nil, err
		}
		exports = append(exports, e)
	}
	return exports, r.End()
}

// EncodeExports encodes an export section.
func EncodeExports(exports []Export) []byte {
	out := AppendU32(nil, uint32(len(exports)))
	for _, e := range exports {
		out = AppendName(out, e.Name)
		out = append(out, e.Kind)
		out = AppendU32(out, e.Index)
	}
	return out
}

// DecodeGlobals decodes the global section.
func DecodeGlobals(b []byte) ([]Global, error) {
	r := NewReader(b)
	n, err := r.U32()
	if err != nil {
		return nil, err
	}
	globals := make([]Global, 0, min(n, 1<<16))
	for i := uint32(0); i < n; i++ {
		var g Global
		if g.Type, err = r.Byte(); err != nil {
			return nil, err
		}
		mut, err := r.Byte()
		if err != nil {
			return nil, err
		}
		g.Mutable = mut == 1
		if g.Init, err = r.ConstExpr(); err != nil {
			return nil, err
		}
		globals = append(globals, g)
	}
	return globals, r.End()
}

// EncodeGlobals encodes a global section.
func EncodeGlobals(globals []Global) []byte {
	out := AppendU32(nil, uint32(len(globals)))
	for _, g := range globals {
		out = append(out, g.Type)
		if g.Mutable {
			out = append(out, 1)
		} else {
			out = append(out, 0)
		}
		out = append(out, g.Init...)
	}
	return out
}

// DecodeCode decodes the code section.
func DecodeCode(b []byte) ([]Code, error) {
	r := NewReader(b)
	n, err := r.U32()
	if err != nil {
		return nil, err
	}
	codes := make([]Code, 0, min(n, 1<<20))
	for i := uint32(0); i < n; i++ {
		size, err := r.U32()
		if err != nil {
			return nil, err
		}
		fb, err := r.Bytes(int(size))
		if err != nil {
			return nil, err
		}
		fr := NewReader(fb)
		nl, err := fr.U32()
		if err != nil {
			return nil, err
		}
		var c Code
		var total uint64
		for j := uint32(0); j < nl; j++ {
			cnt, err := fr.U32()
			if err != nil {
				return nil, err
			}
			t, err := fr.Byte()
			if err != nil {
				return nil, err
			}
			total += uint64(cnt)
			if total > 50000 {
				return nil, malformed("function %d: too many locals", i)
			}
			c.Locals = append(c.Locals, LocalRun{Count: cnt, Type: t})
		}
		c.Body = fb[fr.Pos():]
		if len(c.Body) == 0 || c.Body[len(c.Body)-1] != OpEnd {
			return nil, malformed("function %d: body does not end with end", i)
		}
		codes = append(codes, c)
	}
	return codes, r.End()
}

// AppendCode appends one encoded code entry.
func AppendCode(out []byte, c *Code) []byte {
	var head []byte
	head = AppendU32(head, uint32(len(c.Locals)))
	for _, l := range c.Locals {
		head = AppendU32(head, l.Count)
		head = append(head, l.Type)
	}
	out = AppendU32(out, uint32(len(head)+len(c.Body)))
	out = append(out, head...)
	return append(out, c.Body...)
}

// FuncImportCount counts the imported functions.
func FuncImportCount(imports []Import) uint32 {
	var n uint32
	for _, im := range imports {
		if im.Kind == KindFunc {
			n++
		}
	}
	return n
}

// GlobalImportCount counts the imported globals.
func GlobalImportCount(imports []Import) uint32 {
	var n uint32
	for _, im := range imports {
		if im.Kind == KindGlobal {
			n++
		}
	}
	return n
}
