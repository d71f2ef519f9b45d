package fuel

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/toolhost/toolhost/extism/internal/wasmbin"
)

// genSource hands out fuzz bytes; when they run out it returns zeros, which
// the generator reads as "stop".
type genSource struct {
	b []byte
}

func (s *genSource) intn(n int) int {
	if len(s.b) == 0 || n <= 1 {
		return 0
	}
	v := int(s.b[0])
	s.b = s.b[1:]
	return v % n
}

// generator builds a random module whose functions always terminate and
// never trap: loops are counted, calls only go to lower-numbered functions,
// memory addresses are masked into the first page. Everything the fuel
// rewriter treats specially appears: nested blocks, loops, if/else, br,
// br_if, br_table, return from inside blocks, dead code after a branch,
// direct and indirect calls, block parameters.
type generator struct {
	src      *genSource
	fn       int // index of the function being generated
	budget   int // statements left in the current function
	loops    int // open counted loops
	maxLoops int
	calls    int // calls left in the current function
}

const (
	genParams  = 2 // a, b
	genScratch = 2 // x, y
	genLoopMax = 3 // counter locals
	typeBinary = 0 // (i32, i32) -> i32
	typeUnary  = 1 // (i32) -> i32, for blocks with a parameter
)

func generateModule(data []byte) []byte {
	g := &generator{src: &genSource{b: data}, maxLoops: genLoopMax}
	n := 1 + g.src.intn(4)
	tm := &testModule{
		types: []wasmbin.FuncType{
			{Params: []byte{wasmbin.I32, wasmbin.I32}, Results: []byte{wasmbin.I32}},
			{Params: []byte{wasmbin.I32}, Results: []byte{wasmbin.I32}},
		},
		memory:  true,
		globals: []wasmbin.Global{{Type: wasmbin.I32, Mutable: true, Init: []byte{wasmbin.OpI32Const, 0, wasmbin.OpEnd}}},
		exports: []wasmbin.Export{{Name: "mem", Kind: wasmbin.KindMemory}, {Name: "g", Kind: wasmbin.KindGlobal}},
	}
	for i := 0; i < n; i++ {
		g.fn, g.budget, g.loops, g.calls = i, 24, 0, 2
		var a asm
		for k := 2 + g.src.intn(6); k > 0 && g.budget > 0; k-- {
			g.budget--
			a = g.stmt(a, 0)
		}
		a = g.expr(a, 0)
		tm.funcs = append(tm.funcs, testFunc{
			typ:    typeBinary,
			locals: []wasmbin.LocalRun{{Count: genScratch + genLoopMax, Type: wasmbin.I32}},
			body:   a,
		})
		tm.table = append(tm.table, uint32(i))
		tm.exports = append(tm.exports, wasmbin.Export{Name: fmt.Sprintf("f%d", i), Kind: wasmbin.KindFunc, Index: uint32(i)})
	}
	return tm.encode()
}

func (g *generator) stmts(a asm, depth int) asm {
	n := g.src.intn(4)
	for i := 0; i < n && g.budget > 0; i++ {
		g.budget--
		a = g.stmt(a, depth)
	}
	return a
}

func (g *generator) stmt(a asm, depth int) asm {
	scratch := uint32(genParams + g.src.intn(genScratch))
	if depth > 4 {
		return g.expr(a, 0).idx(wasmbin.OpLocalSet, scratch)
	}
	switch g.src.intn(13) {
	case 0:
		return g.expr(a, 0).idx(wasmbin.OpLocalSet, scratch)
	case 1:
		a = g.expr(a, 0).op(wasmbin.OpIf, wasmbin.BlockTypeEmpty)
		a = g.stmts(a, depth+1).op(wasmbin.OpElse)
		return g.stmts(a, depth+1).op(wasmbin.OpEnd)
	case 2:
		a = g.stmts(a.op(wasmbin.OpBlock, wasmbin.BlockTypeEmpty), depth+1)
		a = g.expr(a, 0).idx(wasmbin.OpBrIf, 0)
		return g.stmts(a, depth+1).op(wasmbin.OpEnd)
	case 3, 12:
		if g.loops >= g.maxLoops {
			return g.expr(a, 0).idx(wasmbin.OpLocalSet, scratch)
		}
		c := uint32(genParams + genScratch + g.loops)
		g.loops++
		exitEarly := g.src.intn(2) == 1
		a = a.i32(int32(1+g.src.intn(4))).idx(wasmbin.OpLocalSet, c)
		if exitEarly {
			a = a.op(wasmbin.OpBlock, wasmbin.BlockTypeEmpty)
		}
		a = g.stmts(a.op(wasmbin.OpLoop, wasmbin.BlockTypeEmpty), depth+1)
		if exitEarly {
			a = g.expr(a, 0).idx(wasmbin.OpBrIf, 1)
		}
		a = a.idx(wasmbin.OpLocalGet, c).i32(1).op(opI32Sub).idx(wasmbin.OpLocalTee, c).idx(wasmbin.OpBrIf, 0).op(wasmbin.OpEnd)
		if exitEarly {
			a = a.op(wasmbin.OpEnd)
		}
		g.loops--
		return a
	case 4:
		a = a.op(wasmbin.OpBlock, wasmbin.BlockTypeEmpty, wasmbin.OpBlock, wasmbin.BlockTypeEmpty, wasmbin.OpBlock, wasmbin.BlockTypeEmpty)
		a = g.expr(a, 0).brTable(uint32(g.src.intn(3)), uint32(g.src.intn(3)), uint32(g.src.intn(3)))
		a = g.stmts(a.op(wasmbin.OpEnd), depth+1)
		a = g.stmts(a.op(wasmbin.OpEnd), depth+1)
		return a.op(wasmbin.OpEnd)
	case 5:
		a = g.expr(a, 0).i32(0xfffc).op(opI32And)
		return g.expr(a, 0).op(opI32Stor, 2, 0)
	case 6:
		if g.fn == 0 || g.calls == 0 || g.loops > 0 {
			return a
		}
		g.calls--
		a = g.expr(g.expr(a, 0), 0).idx(wasmbin.OpCall, uint32(g.src.intn(g.fn)))
		return a.idx(wasmbin.OpLocalSet, scratch)
	case 7:
		if g.fn == 0 || g.calls == 0 || g.loops > 0 {
			return a
		}
		g.calls--
		a = g.expr(g.expr(a, 0), 0).i32(int32(g.src.intn(g.fn))).callIndirect(typeBinary)
		return a.idx(wasmbin.OpLocalSet, scratch)
	case 8:
		a = g.expr(a, 0).op(wasmbin.OpIf, wasmbin.BlockTypeEmpty)
		return g.expr(a, 0).op(wasmbin.OpReturn, wasmbin.OpEnd)
	case 9:
		a = a.op(wasmbin.OpBlock, wasmbin.BlockTypeEmpty).idx(wasmbin.OpBr, 0)
		return g.stmts(a, depth+1).op(wasmbin.OpEnd)
	case 10:
		if g.src.intn(2) == 0 {
			return a.idx(wasmbin.OpGlobalGet, 0).i32(1).op(opI32Add).idx(wasmbin.OpGlobalSet, 0)
		}
		// Bulk memory within the first page: fill or copy.
		d, n := int32(g.src.intn(256)*128), int32(g.src.intn(256)*128)
		if g.src.intn(2) == 0 {
			return g.expr(a.i32(d), 0).i32(n).op(wasmbin.OpPrefixFC, 11, 0)
		}
		return a.i32(d).i32(int32(g.src.intn(256)*128)).i32(n).op(wasmbin.OpPrefixFC, 10, 0, 0)
	default:
		a = g.expr(a, 0).op(wasmbin.OpBlock, typeUnary)
		a = g.expr(a, 0).op(opI32Xor, wasmbin.OpEnd)
		return a.idx(wasmbin.OpLocalSet, scratch)
	}
}

func (g *generator) expr(a asm, depth int) asm {
	k := g.src.intn(8)
	if depth > 3 {
		k %= 2
	}
	switch k {
	case 0:
		return a.idx(wasmbin.OpLocalGet, uint32(g.src.intn(genParams+genScratch)))
	case 1:
		return a.i32(int32(g.src.intn(256)) - 64)
	case 2, 3:
		ops := []byte{opI32Add, opI32Sub, opI32Mul, opI32And, opI32Or, opI32Xor, opI32Shl, opI32ShrU, opI32Rotl, opI32LtU}
		return g.expr(g.expr(a, depth+1), depth+1).op(ops[g.src.intn(len(ops))])
	case 4:
		return g.expr(a, depth+1).i32(0xfffc).op(opI32And, opI32Load, 2, 0)
	case 5:
		return g.expr(g.expr(g.expr(a, depth+1), depth+1), depth+1).op(opSelect)
	case 6:
		return g.expr(a, depth+1).op(opI32Eqz)
	default:
		return a.idx(wasmbin.OpGlobalGet, 0)
	}
}

// outcome is what a call leaves behind.
type outcome struct {
	result uint64
	err    bool
	global uint64
	mem    []byte
}

func run(ctx context.Context, r wazero.Runtime, cm wazero.CompiledModule, fn string, args []uint64) (outcome, error) {
	mod, err := r.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		return outcome{}, err
	}
	defer mod.Close(ctx)
	var o outcome
	res, err := mod.ExportedFunction(fn).Call(ctx, args...)
	if err != nil {
		if errors.Is(err, ErrExhausted) {
			return o, err
		}
		o.err = true
	} else {
		o.result = res[0]
	}
	o.global = mod.ExportedGlobal("g").Get()
	mem, _ := mod.ExportedMemory("mem").Read(0, mod.ExportedMemory("mem").Size())
	o.mem = bytes.Clone(mem)
	return o, nil
}

// checkSameBehaviour runs every export of the original and the instrumented
// module with ample fuel and compares results, globals and memory.
func checkSameBehaviour(t *testing.T, orig []byte, args []uint64) {
	ctx := context.Background()
	inst, err := Instrument(orig)
	if err != nil {
		t.Fatalf("instrument: %v", err)
	}
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	if _, err := InstantiateHostModule(ctx, r); err != nil {
		t.Fatal(err)
	}
	cmOrig, err := r.CompileModule(ctx, orig)
	if err != nil {
		t.Skipf("generated module does not compile: %v", err) // generator bug, not rewriter's
	}
	cmInst, err := r.CompileModule(ctx, inst)
	if err != nil {
		t.Fatalf("instrumented module does not compile: %v", err)
	}
	for name := range cmOrig.ExportedFunctions() {
		want, err := run(ctx, r, cmOrig, name, args)
		if err != nil {
			t.Fatal(err)
		}
		m := NewMeter(1 << 50)
		got, err := run(WithMeter(ctx, m), r, cmInst, name, args)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.result != want.result || got.err != want.err || got.global != want.global || !bytes.Equal(got.mem, want.mem) {
			t.Fatalf("%s: instrumented result %d err %v global %d; original %d err %v global %d; memory equal %v",
				name, got.result, got.err, got.global, want.result, want.err, want.global, bytes.Equal(got.mem, want.mem))
		}
		if m.Used() <= 0 {
			t.Fatalf("%s used no fuel", name)
		}
	}
}

// FuzzInstrument generates terminating modules from the fuzz input and
// checks that instrumentation does not change what they compute.
func FuzzInstrument(f *testing.F) {
	f.Add([]byte{3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, uint32(7), uint32(9))
	f.Add(bytes.Repeat([]byte{3, 12, 4, 2, 9, 8, 1}, 40), uint32(1), uint32(0))
	f.Add(bytes.Repeat([]byte{6, 7, 3, 1, 2, 5, 11, 0, 255}, 60), uint32(0xffffffff), uint32(3))
	f.Fuzz(func(t *testing.T, data []byte, a, b uint32) {
		checkSameBehaviour(t, generateModule(data), []uint64{uint64(a), uint64(b)})
	})
}

// FuzzInstrumentBytes feeds arbitrary bytes to Instrument: it must never
// panic, and whenever wazero accepts the input and Instrument succeeds,
// wazero must accept the output too.
func FuzzInstrumentBytes(f *testing.F) {
	for _, tm := range runaway() {
		f.Add(tm.encode())
	}
	f.Add(tightLoopModule())
	f.Add(generateModule(bytes.Repeat([]byte{3, 12, 4, 2, 9, 8, 1}, 20)))
	f.Fuzz(func(t *testing.T, wasm []byte) {
		out, err := Instrument(wasm)
		if err != nil {
			return
		}
		ctx := context.Background()
		r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
		defer r.Close(ctx)
		if _, err := r.CompileModule(ctx, wasm); err != nil {
			return
		}
		if _, err := r.CompileModule(ctx, out); err != nil {
			t.Fatalf("input compiles, instrumented output does not: %v", err)
		}
	})
}
