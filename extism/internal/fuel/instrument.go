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
	importBegin  = "begin"  // (i64 current) -> i64 fuel to run with
	importEnd    = "end"    // (i64 remaining)
	importRefill = "refill" // (i64 remaining, < 0) -> i64 fuel to go on with, or traps
)

// Version names the output format of Instrument. Hosts that cache compiled
// instrumented modules under their own keys include it, so that a change to
// the rewriter does not reuse stale code.
const Version = "fuel-v3"

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
// import "refill" in place: the host either hands it the next slice of the
// call's fuel, and the code goes on where it was, or makes the call fail
// (ErrExhausted when the budget is spent, the context's error when the call
// was cancelled). Because the host hands out fuel a slice at a time, a
// running guest comes back to Go code every slice, where the Go runtime can
// stop it for a garbage collection or schedule other goroutines.
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
	if b, ok := m.Find(wasmbin.SectionDataCount); ok {
		// wazero accepts an empty data count section at the end of a
		// module, but not once the code section follows it.
		r := wasmbin.NewReader(b)
		if _, err := r.U32(); err != nil || !r.EOF() {
			return nil, fmt.Errorf("%w: data count section", wasmbin.ErrMalformed)
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
	fBegin, fEnd, fRefill := nImported, nImported+1, nImported+2
	imports = append(imports,
		wasmbin.Import{Module: ImportModule, Name: importBegin, Kind: wasmbin.KindFunc, TypeIndex: tBegin},
		wasmbin.Import{Module: ImportModule, Name: importEnd, Kind: wasmbin.KindFunc, TypeIndex: tReport},
		wasmbin.Import{Module: ImportModule, Name: importRefill, Kind: wasmbin.KindFunc, TypeIndex: tBegin})
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

	// The globals where refills park locals: as many of each type as the
	// function that parks most of that type needs, after the fuel global.
	reads := make([][]parked, len(codes))
	var most [len(parkTypes)]uint32
	for i := range codes {
		ti := funcs[i]
		if int(ti) >= len(types) {
			return nil, fmt.Errorf("%w: function %d has type %d", wasmbin.ErrMalformed, i, ti)
		}
		if reads[i], err = parkedLocals(&codes[i], types[ti].Params); err != nil {
			return nil, fmt.Errorf("function %d: %w", uint32(i)+nImported, err)
		}
		var n [len(parkTypes)]uint32
		for _, p := range reads[i] {
			n[p.kind]++
		}
		for k := range most {
			most[k] = max(most[k], n[k])
		}
	}
	var parkBase [len(parkTypes)]uint32
	next := fuelGlobal + 1
	for k, t := range parkTypes {
		parkBase[k] = next
		next += most[k]
		for range most[k] {
			globals = append(globals, wasmbin.Global{Type: t, Mutable: true, Init: zeroConst(t)})
		}
	}

	// Instrument every defined function.
	ins := &instrumenter{global: fuelGlobal, refill: fRefill, remap: remap, types: &types}
	for i := range codes {
		ti := funcs[i]
		ins.park = ins.park[:0]
		var n [len(parkTypes)]uint32
		for _, p := range reads[i] {
			ins.park = append(ins.park, parked{local: p.local, kind: p.kind, global: parkBase[p.kind] + n[p.kind]})
			n[p.kind]++
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
	refill    uint32 // imported refill function
	remap     func(uint32) uint32
	costs     []int64 // scratch: cost of each segment of the current function
	types     *[]wasmbin.FuncType
	blockType map[string]uint32 // result types -> index of a () -> results type
	park      []parked          // the current function's locals to park around refill
	labels    []label           // open labels of the function being rewritten
}

// Locals are parked in globals while refill runs. wazero's register
// allocator spills a loop's variables on every iteration when their values
// live across a call, even a call on a branch that is almost never taken;
// parked, they do not (the values after the call are the globals' new
// ones), and the loop keeps its registers. Measured on the Go test guest:
// a tight loop 1.72x slower than uninstrumented code with the call alone,
// under 1.1x with parking (docs/fuel.md).
type parked struct {
	local  uint32
	kind   int    // index in parkTypes
	global uint32 // set by Instrument
}

// parkTypes are the value types parked; others (v128, references) are
// rare in loops and stay live across the call.
var parkTypes = [...]byte{wasmbin.I32, wasmbin.I64, wasmbin.F32, wasmbin.F64}

// maxParked bounds the locals parked per function: past it (large
// generated functions), the function parks none and pays the spills.
const maxParked = 64

// parkedLocals lists the numeric locals that code reads (parameters
// included): the ones whose values must survive a refill.
func parkedLocals(code *wasmbin.Code, params []byte) ([]parked, error) {
	read := map[uint32]bool{}
	d := wasmbin.NewDecoder(code.Body)
	for !d.EOF() {
		in, err := d.Next()
		if err != nil {
			return nil, err
		}
		if in.Op == wasmbin.OpLocalGet {
			read[in.Index] = true
		}
	}
	if len(read) > maxParked {
		return nil, nil
	}
	var out []parked
	local := uint32(0)
	each := func(t byte, count uint32) {
		for range count {
			if read[local] {
				for k, pt := range parkTypes {
					if pt == t {
						out = append(out, parked{local: local, kind: k})
					}
				}
			}
			local++
		}
	}
	for _, t := range params {
		each(t, 1)
	}
	for _, r := range code.Locals {
		if uint64(local)+uint64(r.Count) > 1<<20 {
			break // more locals than any read can name
		}
		each(r.Type, r.Count)
	}
	return out, nil
}

// zeroConst is the constant expression of t's zero value.
func zeroConst(t byte) []byte {
	switch t {
	case wasmbin.I32:
		return []byte{0x41, 0, wasmbin.OpEnd}
	case wasmbin.I64:
		return []byte{wasmbin.OpI64Const, 0, wasmbin.OpEnd}
	case wasmbin.F32:
		return []byte{0x43, 0, 0, 0, 0, wasmbin.OpEnd}
	}
	return []byte{0x44, 0, 0, 0, 0, 0, 0, 0, 0, wasmbin.OpEnd}
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
	//	block $done (result ...)          ┐
	//	  loop $retry                     │ the refill path,
	//	    block $slow                   │ outside the body
	//	      block $body (result ...)    ┘
	//	        charge; check: br_if $slow
	//	        body with charges, checks and flushes around calls and
	//	        returns
	//	      end
	//	      flush; br $done
	//	    end
	//	    refill; br $retry
	//	  end
	//	  unreachable
	//	end
	//
	// and every loop without parameters is wrapped the same way:
	//
	//	block $done (result ...)
	//	  loop $retry
	//	    block $slow
	//	      loop $L (result ...)  ;; the original loop
	//	        charge; check: br_if $slow
	//	        body
	//	      end
	//	      br $done
	//	    end
	//	    refill; br $retry
	//	  end
	//	  unreachable
	//	end
	//
	// The check on the hot path is a subtraction, a compare and an untaken
	// branch out of the loop, as when running out was fatal: no call sits
	// in the loop for the register allocator to spill around. The refill
	// path parks the locals in globals, asks the host for the next slice,
	// takes them back and re-enters the loop (or the function) at its head,
	// where nothing has happened yet; the head's charge, paid again there,
	// is given back with the slice. Branches out of a wrapped loop skip its
	// three new labels; branches to the function's label land at the end
	// of $body, which has the same results. Loops with parameters (whose
	// values a branch out would drop) and bulk instructions check inline
	// instead: if negative, park, refill, unpark.
	out := make([]byte, 0, len(body)+len(body)/2+32)
	out = append(out, wasmbin.OpGlobalGet)
	out = wasmbin.AppendU32(out, ins.global)
	out = appendLocal(out, wasmbin.OpLocalSet, local)
	out = ins.openRetry(out, wasmbin.OpBlock, ins.blockTypeBytes(results))
	seg := 0
	entry := max(ins.costs[seg], 1)
	out = ins.charge(out, local, entry, checkOut)
	ins.labels = ins.labels[:0]
	d = wasmbin.NewDecoder(body)
	for !d.EOF() {
		in, err := d.Next()
		if err != nil {
			return nil, err
		}
		final := in.Op == wasmbin.OpEnd && len(ins.labels) == 0
		if final {
			break
		}
		switch in.Op {
		case wasmbin.OpCall, wasmbin.OpCallIndirect, wasmbin.OpReturn,
			wasmbin.OpReturnCall, wasmbin.OpReturnCallIndirect:
			out = ins.flush(out, local)
		}
		if shift, ok := bulkCost(&in); ok {
			out = ins.chargeLength(out, local, scratch, shift)
		}
		wrapped := false
		switch in.Op {
		case wasmbin.OpLoop:
			bt := body[in.Start+1 : in.End]
			if wrapped = !ins.hasParams(bt); wrapped {
				out = ins.openRetry(out, wasmbin.OpLoop, bt)
			} else {
				out = wasmbin.AppendInstr(out, body, &in, ins.remap)
			}
		case wasmbin.OpBr, wasmbin.OpBrIf:
			out = append(out, in.Op)
			out = wasmbin.AppendU32(out, ins.label(in.Index))
		case wasmbin.OpBrTable:
			out = append(out, in.Op)
			out = wasmbin.AppendU32(out, uint32(len(in.Labels)-1))
			for _, l := range in.Labels {
				out = wasmbin.AppendU32(out, ins.label(l))
			}
		default:
			out = wasmbin.AppendInstr(out, body, &in, ins.remap)
		}
		switch in.Op {
		case wasmbin.OpCall, wasmbin.OpCallIndirect:
			out = append(out, wasmbin.OpGlobalGet)
			out = wasmbin.AppendU32(out, ins.global)
			out = appendLocal(out, wasmbin.OpLocalSet, local)
		case wasmbin.OpBlock, wasmbin.OpIf:
			ins.labels = append(ins.labels, label{})
		case wasmbin.OpLoop:
			ins.labels = append(ins.labels, label{wrapped: wrapped, head: max(ins.costs[seg+1], 1)})
		case wasmbin.OpEnd:
			l := ins.labels[len(ins.labels)-1]
			ins.labels = ins.labels[:len(ins.labels)-1]
			if l.wrapped {
				out = ins.closeRetry(out, local, l.head)
			}
		}
		if endsSegment(in.Op) {
			seg++
			switch {
			case in.Op != wasmbin.OpLoop:
				out = ins.charge(out, local, ins.costs[seg], checkNone)
			case wrapped:
				out = ins.charge(out, local, ins.costs[seg], checkOut)
			default:
				out = ins.charge(out, local, ins.costs[seg], checkInline)
			}
		}
	}
	out = append(out, wasmbin.OpEnd) // $body
	out = ins.flush(out, local)
	out = ins.closeRetry(out, local, entry)
	return append(out, wasmbin.OpEnd), nil
}

// label is an open block, loop or if of the function being rewritten.
type label struct {
	wrapped bool  // a loop with a refill path around it
	head    int64 // the charge at its head
}

// label returns the new depth of a branch to the label at depth k of the
// original code: each wrapped loop the branch leaves adds three labels.
func (ins *instrumenter) label(k uint32) uint32 {
	extra := uint32(0)
	for i := len(ins.labels) - 1; i >= 0 && uint32(len(ins.labels)-1-i) < k; i-- {
		if ins.labels[i].wrapped {
			extra += 3
		}
	}
	return k + extra
}

// openRetry opens $done (with block type bt), $retry and $slow, then op
// with bt: the original loop, or the function's $body block.
func (ins *instrumenter) openRetry(out []byte, op byte, bt []byte) []byte {
	out = append(out, wasmbin.OpBlock)
	out = append(out, bt...)
	out = append(out, wasmbin.OpLoop, wasmbin.BlockTypeEmpty, wasmbin.OpBlock, wasmbin.BlockTypeEmpty, op)
	return append(out, bt...)
}

// closeRetry follows the end of what openRetry opened: leave with its
// results, or, from $slow, refill and go round again. head is the charge
// at the head, which the retry pays a second time and the refill gives
// back.
func (ins *instrumenter) closeRetry(out []byte, local uint32, head int64) []byte {
	out = append(out, wasmbin.OpBr, 2, wasmbin.OpEnd) // br $done; end $slow
	out = ins.refillCall(out, local, head)
	return append(out, wasmbin.OpBr, 0, wasmbin.OpEnd, wasmbin.OpUnreachable, wasmbin.OpEnd)
}

// refillCall parks the locals, calls refill with the counter, adds back
// extra (see closeRetry), and takes the locals back.
func (ins *instrumenter) refillCall(out []byte, local uint32, extra int64) []byte {
	for _, p := range ins.park {
		out = appendLocal(out, wasmbin.OpLocalGet, p.local)
		out = append(out, wasmbin.OpGlobalSet)
		out = wasmbin.AppendU32(out, p.global)
	}
	out = appendLocal(out, wasmbin.OpLocalGet, local)
	out = append(out, wasmbin.OpCall)
	out = wasmbin.AppendU32(out, ins.refill)
	if extra != 0 {
		out = append(out, wasmbin.OpI64Const)
		out = wasmbin.AppendS64(out, extra)
		out = append(out, 0x7c) // i64.add
	}
	out = appendLocal(out, wasmbin.OpLocalSet, local)
	for _, p := range ins.park {
		out = append(out, wasmbin.OpGlobalGet)
		out = wasmbin.AppendU32(out, p.global)
		out = appendLocal(out, wasmbin.OpLocalSet, p.local)
	}
	return out
}

// hasParams reports whether a block type names a function type with
// parameters.
func (ins *instrumenter) hasParams(bt []byte) bool {
	if len(bt) == 1 {
		switch bt[0] {
		case wasmbin.BlockTypeEmpty, wasmbin.I32, wasmbin.I64, wasmbin.F32, wasmbin.F64, wasmbin.V128, wasmbin.FuncRef, wasmbin.ExternRef:
			return false
		}
	}
	r := wasmbin.NewReader(bt)
	ti, err := r.S64(33)
	return err != nil || ti < 0 || int(ti) >= len(*ins.types) || len((*ins.types)[ti].Params) > 0
}

// blockTypeBytes is appendBlockType's encoding on its own.
func (ins *instrumenter) blockTypeBytes(results []byte) []byte {
	return ins.appendBlockType(nil, results)
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
// (kept there) and checks the counter at once, so that one bulk instruction
// cannot run far past the budget.
func (ins *instrumenter) chargeLength(out []byte, local, scratch uint32, shift int) []byte {
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
	return ins.check(out, local)
}

// check emits the test of the counter on top of the stack (just stored in
// local) and, when it is negative, the refill that replaces it.
func (ins *instrumenter) check(out []byte, local uint32) []byte {
	out = append(out, wasmbin.OpI64Const, 0, wasmbin.OpI64LtS, wasmbin.OpIf, wasmbin.BlockTypeEmpty)
	out = ins.refillCall(out, local, 0)
	return append(out, wasmbin.OpEnd)
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

// How charge checks the counter.
const (
	checkNone   = iota // no test
	checkOut           // branch to the refill path ($slow, one label out)
	checkInline        // refill in place
)

// charge emits code subtracting c from the fuel local and checking it as
// mode says. A check always charges at least one unit so that every loop
// iteration and every call makes progress towards exhaustion.
func (ins *instrumenter) charge(out []byte, local uint32, c int64, mode int) []byte {
	if mode != checkNone && c == 0 {
		c = 1
	}
	if c == 0 {
		return out
	}
	out = appendLocal(out, wasmbin.OpLocalGet, local)
	out = append(out, wasmbin.OpI64Const)
	out = wasmbin.AppendS64(out, c)
	out = append(out, wasmbin.OpI64Sub)
	switch mode {
	case checkNone:
		return appendLocal(out, wasmbin.OpLocalSet, local)
	case checkOut:
		out = appendLocal(out, wasmbin.OpLocalTee, local)
		out = append(out, wasmbin.OpI64Const, 0, wasmbin.OpI64LtS, wasmbin.OpBrIf, 1)
		return out
	}
	out = appendLocal(out, wasmbin.OpLocalTee, local)
	return ins.check(out, local)
}
