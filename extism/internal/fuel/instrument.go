package fuel

import (
	"errors"
	"fmt"
	"strings"

	"github.com/toolhost/toolhost/extism/internal/wasmbin"
)

// ImportModule is the import module name of the host functions an
// instrumented module calls (see HostFunctions and InstantiateHostModule).
const ImportModule = "toolhost:fuel"

// Names of the imported host functions, in ImportModule.
const (
	importBegin     = "begin"     // (i64 current) -> i64 fuel to run with
	importEnd       = "end"       // (i64 remaining)
	importExhausted = "exhausted" // (i64 remaining), never returns
)

// Version names the output format of Instrument. Hosts that cache compiled
// instrumented modules under their own keys include it, so that a change to
// the rewriter does not reuse stale code.
const Version = "fuel-v2"

// ErrInstrumented is returned by Instrument for a module that already imports
// from ImportModule.
var ErrInstrumented = errors.New("fuel: module is already instrumented")

// Instrument rewrites a WebAssembly module so that it charges fuel as it runs
// and traps when the fuel of the current call runs out.
//
// Every defined function gets a fuel counter in a new local; each straight-line
// stretch of code subtracts its instruction count from that counter when it is
// entered, and the counter is tested at function entry and at the head of every
// loop, which is where execution can repeat. The counter is written back to a
// module-private global around calls and on exit, so fuel flows across
// recursion and indirect calls. Every exported function and the start function
// are wrapped so that entering the module from the host asks the host for the
// call's fuel (import "begin") and hands back what is left on return (import
// "end"). When the counter goes negative at a test, the module calls the
// import "exhausted", which makes the call fail with ErrExhausted.
//
// Instrument adds three function imports from ImportModule, so the host must
// provide them (HostFunctions for go-sdk, InstantiateHostModule for wazero).
// Debug-info custom sections (".debug_*", "sourceMappingURL") are dropped
// because code offsets change; the "name" section is kept and renumbered.
//
// The result is deterministic: the same input gives the same bytes. Instrument
// does not validate the module beyond what it needs to decode; compile the
// result with wazero as usual.
func Instrument(wasm []byte) ([]byte, error) {
	m, err := wasmbin.Parse(wasm)
	if err != nil {
		return nil, fmt.Errorf("fuel: %w", err)
	}
	out, err := instrument(m)
	if err != nil {
		return nil, fmt.Errorf("fuel: %w", err)
	}
	return out, nil
}

func instrument(m *wasmbin.Module) ([]byte, error) {
	var (
		types   []wasmbin.FuncType
		imports []wasmbin.Import
		funcs   []uint32
		globals []wasmbin.Global
		exports []wasmbin.Export
		codes   []wasmbin.Code
		err     error
	)
	if b, ok := m.Find(wasmbin.SectionType); ok {
		if types, err = wasmbin.DecodeTypes(b); err != nil {
			return nil, fmt.Errorf("type section: %w", err)
		}
	}
	if b, ok := m.Find(wasmbin.SectionImport); ok {
		if imports, err = wasmbin.DecodeImports(b); err != nil {
			return nil, fmt.Errorf("import section: %w", err)
		}
	}
	for _, im := range imports {
		if im.Module == ImportModule {
			return nil, ErrInstrumented
		}
	}
	if b, ok := m.Find(wasmbin.SectionFunction); ok {
		if funcs, err = wasmbin.DecodeU32Vec(b); err != nil {
			return nil, fmt.Errorf("function section: %w", err)
		}
	}
	if b, ok := m.Find(wasmbin.SectionGlobal); ok {
		if globals, err = wasmbin.DecodeGlobals(b); err != nil {
			return nil, fmt.Errorf("global section: %w", err)
		}
	}
	if b, ok := m.Find(wasmbin.SectionExport); ok {
		if exports, err = wasmbin.DecodeExports(b); err != nil {
			return nil, fmt.Errorf("export section: %w", err)
		}
	}
	if b, ok := m.Find(wasmbin.SectionCode); ok {
		if codes, err = wasmbin.DecodeCode(b); err != nil {
			return nil, fmt.Errorf("code section: %w", err)
		}
	}
	if len(codes) != len(funcs) {
		return nil, fmt.Errorf("%w: %d functions but %d bodies", wasmbin.ErrMalformed, len(funcs), len(codes))
	}

	// New types and imports. Imports go after the existing ones, so every
	// defined function's index moves up by len(newImports).
	tBegin := uint32(len(types))
	tReport := tBegin + 1
	types = append(types,
		wasmbin.FuncType{Params: []byte{wasmbin.I64}, Results: []byte{wasmbin.I64}},
		wasmbin.FuncType{Params: []byte{wasmbin.I64}})
	nImported := wasmbin.FuncImportCount(imports)
	const added = 3
	fBegin, fEnd, fExhausted := nImported, nImported+1, nImported+2
	imports = append(imports,
		wasmbin.Import{Module: ImportModule, Name: importBegin, Kind: wasmbin.KindFunc, TypeIndex: tBegin},
		wasmbin.Import{Module: ImportModule, Name: importEnd, Kind: wasmbin.KindFunc, TypeIndex: tReport},
		wasmbin.Import{Module: ImportModule, Name: importExhausted, Kind: wasmbin.KindFunc, TypeIndex: tReport})
	remap := func(f uint32) uint32 {
		if f < nImported {
			return f
		}
		return f + added
	}

	// The fuel global, after every existing global.
	for i := range globals {
		if globals[i].Init, err = wasmbin.RemapConstExpr(globals[i].Init, remap); err != nil {
			return nil, fmt.Errorf("global %d: %w", i, err)
		}
	}
	fuelGlobal := wasmbin.GlobalImportCount(imports) + uint32(len(globals))
	globals = append(globals, wasmbin.Global{Type: wasmbin.I64, Mutable: true, Init: []byte{wasmbin.OpI64Const, 0, wasmbin.OpEnd}})

	// Instrument every defined function.
	ins := &instrumenter{global: fuelGlobal, exhausted: fExhausted, remap: remap, types: &types}
	for i := range codes {
		ti := funcs[i]
		if int(ti) >= len(types) {
			return nil, fmt.Errorf("%w: function %d has type %d", wasmbin.ErrMalformed, i, ti)
		}
		body, err := ins.function(&codes[i], len(types[ti].Params), types[ti].Results)
		if err != nil {
			return nil, fmt.Errorf("function %d: %w", uint32(i)+nImported, err)
		}
		codes[i].Body = body
	}

	// Wrap the entry points: exported functions and the start function.
	wrappers := map[uint32]uint32{} // original index -> wrapper index (new space)
	wrap := func(f uint32) (uint32, error) {
		if w, ok := wrappers[f]; ok {
			return w, nil
		}
		di := f - nImported
		if int(di) >= len(funcs) {
			return 0, fmt.Errorf("%w: function index %d out of range", wasmbin.ErrMalformed, f)
		}
		ti := funcs[di]
		w := nImported + added + uint32(len(funcs))
		funcs = append(funcs, ti)
		codes = append(codes, wrapper(len(types[ti].Params), remap(f), fuelGlobal, fBegin, fEnd))
		wrappers[f] = w
		return w, nil
	}
	for i := range exports {
		e := &exports[i]
		if e.Kind != wasmbin.KindFunc {
			continue
		}
		if e.Index < nImported {
			continue // a re-exported import runs no guest code
		}
		if e.Index, err = wrap(e.Index); err != nil {
			return nil, err
		}
	}
	if b, ok := m.Find(wasmbin.SectionStart); ok {
		r := wasmbin.NewReader(b)
		start, err := r.U32()
		if err != nil {
			return nil, fmt.Errorf("start section: %w", err)
		}
		if start >= nImported {
			if start, err = wrap(start); err != nil {
				return nil, err
			}
		}
		m.Set(wasmbin.SectionStart, wasmbin.AppendU32(nil, start))
	}

	if b, ok := m.Find(wasmbin.SectionElement); ok {
		nb, err := wasmbin.RemapElements(b, remap)
		if err != nil {
			return nil, fmt.Errorf("element section: %w", err)
		}
		m.Set(wasmbin.SectionElement, nb)
	}
	for i, s := range m.Sections {
		if s.CustomName() != "name" {
			continue
		}
		r := wasmbin.NewReader(s.Data)
		if _, err := r.Name(); err != nil {
			return nil, err
		}
		payload, err := wasmbin.RemapNames(s.Data[r.Pos():], remap)
		if err != nil {
			// A broken name section is not worth refusing a module for.
			m.Sections[i].ID = 0xff // marked for removal below
			continue
		}
		m.Sections[i].Data = append(wasmbin.AppendName(nil, "name"), payload...)
	}
	m.Remove(func(s wasmbin.Section) bool {
		if s.ID == 0xff {
			return true
		}
		name := s.CustomName()
		return strings.HasPrefix(name, ".debug_") || name == "sourceMappingURL" || name == "external_debug_info"
	})

	m.Set(wasmbin.SectionType, wasmbin.EncodeTypes(types))
	m.Set(wasmbin.SectionImport, wasmbin.EncodeImports(imports))
	m.Set(wasmbin.SectionFunction, wasmbin.EncodeU32Vec(funcs))
	m.Set(wasmbin.SectionGlobal, wasmbin.EncodeGlobals(globals))
	if len(exports) > 0 {
		m.Set(wasmbin.SectionExport, wasmbin.EncodeExports(exports))
	}
	code := wasmbin.AppendU32(nil, uint32(len(codes)))
	for i := range codes {
		code = wasmbin.AppendCode(code, &codes[i])
	}
	m.Set(wasmbin.SectionCode, code)
	return m.Encode(), nil
}

// wrapper builds the body of an entry-point wrapper: ask the host for fuel,
// call the original function with the same arguments, report what is left.
func wrapper(nParams int, target, global, begin, end uint32) wasmbin.Code {
	var b []byte
	b = append(b, wasmbin.OpGlobalGet)
	b = wasmbin.AppendU32(b, global)
	b = append(b, wasmbin.OpCall)
	b = wasmbin.AppendU32(b, begin)
	b = append(b, wasmbin.OpGlobalSet)
	b = wasmbin.AppendU32(b, global)
	for i := 0; i < nParams; i++ {
		b = append(b, wasmbin.OpLocalGet)
		b = wasmbin.AppendU32(b, uint32(i))
	}
	b = append(b, wasmbin.OpCall)
	b = wasmbin.AppendU32(b, target)
	b = append(b, wasmbin.OpGlobalGet)
	b = wasmbin.AppendU32(b, global)
	b = append(b, wasmbin.OpCall)
	b = wasmbin.AppendU32(b, end)
	b = append(b, wasmbin.OpEnd)
	return wasmbin.Code{Body: b}
}

// instrumenter rewrites function bodies.
type instrumenter struct {
	global    uint32 // fuel global
	exhausted uint32 // imported trap function
	remap     func(uint32) uint32
	costs     []int64 // scratch: cost of each segment of the current function
	types     *[]wasmbin.FuncType
	blockType map[string]uint32 // result types -> index of a () -> results type
}

// cost is the fuel charged for one instruction: structural markers are free,
// everything else costs one unit.
func cost(op byte) int64 {
	switch op {
	case wasmbin.OpBlock, wasmbin.OpLoop, wasmbin.OpEnd, wasmbin.OpElse, wasmbin.OpNop:
		return 0
	}
	return 1
}

// endsSegment reports whether the instruction after op starts a new
// straight-line segment: op branches, is a branch target boundary, or leaves.
func endsSegment(op byte) bool {
	switch op {
	case wasmbin.OpLoop, wasmbin.OpIf, wasmbin.OpElse, wasmbin.OpEnd,
		wasmbin.OpBr, wasmbin.OpBrIf, wasmbin.OpBrTable, wasmbin.OpReturn,
		wasmbin.OpUnreachable, wasmbin.OpReturnCall, wasmbin.OpReturnCallIndirect:
		return true
	}
	return false
}

func (ins *instrumenter) function(code *wasmbin.Code, nParams int, results []byte) ([]byte, error) {
	body := code.Body
	local := uint32(uint64(nParams) + code.NumLocals())
	scratch := local + 1 // i32: the length operand of bulk instructions
	code.Locals = append(code.Locals, wasmbin.LocalRun{Count: 1, Type: wasmbin.I64}, wasmbin.LocalRun{Count: 1, Type: wasmbin.I32})

	// Pass 1: the cost of every segment, in order.
	ins.costs = append(ins.costs[:0], 0)
	d := wasmbin.NewDecoder(body)
	depth := 0
	for !d.EOF() {
		in, err := d.Next()
		if err != nil {
			return nil, err
		}
		ins.costs[len(ins.costs)-1] += cost(in.Op)
		switch in.Op {
		case wasmbin.OpBlock, wasmbin.OpLoop, wasmbin.OpIf:
			depth++
		case wasmbin.OpEnd:
			depth--
			if depth < 0 && !d.EOF() {
				return nil, fmt.Errorf("%w: code after the function's end", wasmbin.ErrMalformed)
			}
		}
		if endsSegment(in.Op) && depth >= 0 {
			ins.costs = append(ins.costs, 0)
		}
	}
	if depth != -1 {
		return nil, fmt.Errorf("%w: unbalanced blocks", wasmbin.ErrMalformed)
	}

	// Pass 2: emit
	//
	//	global.get $fuel; local.set $f
	//	block $trap
	//	  block $body (result ...)
	//	    charge + check; body with charges, checks (br_if $trap) and
	//	    flushes around calls and returns
	//	  end
	//	  flush; return
	//	end
	//	local.get $f; call $exhausted; unreachable
	//	end
	//
	// Keeping the trap call out of loops keeps it out of the register
	// allocator's way on the hot path. Branches to the function's label now
	// land at the end of $body, which has the same results, so labels need no
	// renumbering.
	out := make([]byte, 0, len(body)+len(body)/2+32)
	out = append(out, wasmbin.OpGlobalGet)
	out = wasmbin.AppendU32(out, ins.global)
	out = appendLocal(out, wasmbin.OpLocalSet, local)
	out = append(out, wasmbin.OpBlock, wasmbin.BlockTypeEmpty, wasmbin.OpBlock)
	out = ins.appendBlockType(out, results)
	seg := 0
	out = ins.charge(out, local, ins.costs[seg], 1)
	d = wasmbin.NewDecoder(body)
	depth = 0
	for !d.EOF() {
		in, err := d.Next()
		if err != nil {
			return nil, err
		}
		final := in.Op == wasmbin.OpEnd && depth == 0
		switch in.Op {
		case wasmbin.OpCall, wasmbin.OpCallIndirect, wasmbin.OpReturn,
			wasmbin.OpReturnCall, wasmbin.OpReturnCallIndirect:
			out = ins.flush(out, local)
		}
		if shift, ok := bulkCost(&in); ok {
			out = ins.chargeLength(out, local, scratch, shift, depth+1)
		}
		out = wasmbin.AppendInstr(out, body, &in, ins.remap)
		switch in.Op {
		case wasmbin.OpCall, wasmbin.OpCallIndirect:
			out = append(out, wasmbin.OpGlobalGet)
			out = wasmbin.AppendU32(out, ins.global)
			out = appendLocal(out, wasmbin.OpLocalSet, local)
		case wasmbin.OpBlock, wasmbin.OpLoop, wasmbin.OpIf:
			depth++
		case wasmbin.OpEnd:
			depth--
		}
		if final {
			break
		}
		if endsSegment(in.Op) {
			seg++
			trap := -1
			if in.Op == wasmbin.OpLoop {
				trap = depth + 1
			}
			out = ins.charge(out, local, ins.costs[seg], trap)
		}
	}
	out = ins.flush(out, local)
	out = append(out, wasmbin.OpReturn, wasmbin.OpEnd)
	out = appendLocal(out, wasmbin.OpLocalGet, local)
	out = append(out, wasmbin.OpCall)
	out = wasmbin.AppendU32(out, ins.exhausted)
	return append(out, wasmbin.OpUnreachable, wasmbin.OpEnd), nil
}

// appendBlockType appends the block type of a block with no parameters and
// the given results, adding a function type for multiple results.
func (ins *instrumenter) appendBlockType(out []byte, results []byte) []byte {
	switch len(results) {
	case 0:
		return append(out, wasmbin.BlockTypeEmpty)
	case 1:
		return append(out, results[0])
	}
	if ins.blockType == nil {
		ins.blockType = map[string]uint32{}
	}
	ti, ok := ins.blockType[string(results)]
	if !ok {
		ti = uint32(len(*ins.types))
		*ins.types = append(*ins.types, wasmbin.FuncType{Results: results})
		ins.blockType[string(results)] = ti
	}
	return wasmbin.AppendS64(out, int64(ti))
}

// bulkCost reports whether in's cost grows with its last operand (a byte,
// element or page count on top of the stack), and the scale: the charge is
// count>>shift for shift >= 0, count<<-shift otherwise.
func bulkCost(in *wasmbin.Instr) (shift int, ok bool) {
	switch {
	case in.Op == 0x40: // memory.grow: 1024 units per 64 KiB page
		return -10, true
	case in.Op == wasmbin.OpPrefixFC:
		switch in.Sub {
		case 8, 10, 11: // memory.init, memory.copy, memory.fill: 1 unit per 64 bytes
			return 6, true
		case 12, 14, 15, 17: // table.init, table.copy, table.grow, table.fill: 1 unit per 8 elements
			return 3, true
		}
	}
	return 0, false
}

// chargeLength emits code that charges for the count on top of the stack
// (kept there) and traps at once if that exhausts the fuel, so that one bulk
// instruction cannot run far past the budget.
func (ins *instrumenter) chargeLength(out []byte, local, scratch uint32, shift int, trap int) []byte {
	out = appendLocal(out, wasmbin.OpLocalTee, scratch)
	out = appendLocal(out, wasmbin.OpLocalGet, local)
	out = appendLocal(out, wasmbin.OpLocalGet, scratch)
	out = append(out, 0xad) // i64.extend_i32_u
	out = append(out, wasmbin.OpI64Const)
	if shift >= 0 {
		out = wasmbin.AppendS64(out, int64(shift))
		out = append(out, 0x88) // i64.shr_u
	} else {
		out = wasmbin.AppendS64(out, int64(-shift))
		out = append(out, 0x86) // i64.shl
	}
	out = append(out, wasmbin.OpI64Sub)
	out = appendLocal(out, wasmbin.OpLocalTee, local)
	out = append(out, wasmbin.OpI64Const, 0, wasmbin.OpI64LtS)
	return appendLocal(out, wasmbin.OpBrIf, uint32(trap))
}

func (ins *instrumenter) flush(out []byte, local uint32) []byte {
	out = appendLocal(out, wasmbin.OpLocalGet, local)
	out = append(out, wasmbin.OpGlobalSet)
	return wasmbin.AppendU32(out, ins.global)
}

func appendLocal(out []byte, op byte, local uint32) []byte {
	out = append(out, op)
	return wasmbin.AppendU32(out, local)
}

// charge emits code subtracting c from the fuel local and, when trap is a
// label (>= 0), branching to it if the local went negative. A check always
// charges at least one unit so that every loop iteration and every call
// makes progress towards exhaustion.
func (ins *instrumenter) charge(out []byte, local uint32, c int64, trap int) []byte {
	if trap >= 0 && c == 0 {
		c = 1
	}
	if c == 0 {
		return out
	}
	out = appendLocal(out, wasmbin.OpLocalGet, local)
	out = append(out, wasmbin.OpI64Const)
	out = wasmbin.AppendS64(out, c)
	out = append(out, wasmbin.OpI64Sub)
	if trap < 0 {
		return appendLocal(out, wasmbin.OpLocalSet, local)
	}
	out = appendLocal(out, wasmbin.OpLocalTee, local)
	out = append(out, wasmbin.OpI64Const, 0, wasmbin.OpI64LtS)
	return appendLocal(out, wasmbin.OpBrIf, uint32(trap))
}
