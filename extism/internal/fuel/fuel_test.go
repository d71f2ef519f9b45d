package fuel

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/toolhost/toolhost/extism/internal/wasmbin"
)

var voidType = wasmbin.FuncType{}

// runaway returns modules whose export "run" never finishes, one per way of
// repeating code, each bumping the exported i64 global "count" on every
// round.
func runaway() map[string]*testModule {
	one := func(body asm) *testModule {
		return &testModule{
			types:   []wasmbin.FuncType{voidType},
			funcs:   []testFunc{{typ: 0, body: body}},
			globals: []wasmbin.Global{counterGlobal()},
			exports: []wasmbin.Export{{Name: "run", Kind: wasmbin.KindFunc}, {Name: "count", Kind: wasmbin.KindGlobal}},
		}
	}
	mods := map[string]*testModule{
		"loop br": one(asm{}.op(wasmbin.OpLoop, wasmbin.BlockTypeEmpty).incr(0).idx(wasmbin.OpBr, 0).op(wasmbin.OpEnd)),
		"loop br_if": one(asm{}.op(wasmbin.OpLoop, wasmbin.BlockTypeEmpty).incr(0).
			i32(1).idx(wasmbin.OpBrIf, 0).op(wasmbin.OpEnd)),
		"loop br_table": one(asm{}.op(wasmbin.OpLoop, wasmbin.BlockTypeEmpty).incr(0).
			i32(3).brTable(0, 0).op(wasmbin.OpEnd)),
		"br out of nested block to loop": one(asm{}.op(wasmbin.OpLoop, wasmbin.BlockTypeEmpty).
			op(wasmbin.OpBlock, wasmbin.BlockTypeEmpty).incr(0).idx(wasmbin.OpBr, 1).op(wasmbin.OpEnd).
			op(wasmbin.OpEnd)),
		"loop in else branch": one(asm{}.i32(0).op(wasmbin.OpIf, wasmbin.BlockTypeEmpty).op(wasmbin.OpElse).
			op(wasmbin.OpLoop, wasmbin.BlockTypeEmpty).incr(0).idx(wasmbin.OpBr, 0).op(wasmbin.OpEnd).
			op(wasmbin.OpEnd)),
		"loop with zero-cost body": one(asm{}.op(wasmbin.OpLoop, wasmbin.BlockTypeEmpty).
			op(wasmbin.OpBlock, wasmbin.BlockTypeEmpty).op(wasmbin.OpEnd).incr(0).idx(wasmbin.OpBr, 0).op(wasmbin.OpEnd)),
		"recursion": one(asm{}.incr(0).idx(wasmbin.OpCall, 0)),
	}
	m := one(asm{}.incr(0).i32(0).callIndirect(0))
	m.table = []uint32{0}
	mods["call_indirect"] = m
	mods["mutual recursion"] = &testModule{
		types: []wasmbin.FuncType{voidType},
		funcs: []testFunc{
			{typ: 0, body: asm{}.incr(0).idx(wasmbin.OpCall, 1)},
			{typ: 0, body: asm{}.idx(wasmbin.OpCall, 0)},
		},
		globals: []wasmbin.Global{counterGlobal()},
		exports: []wasmbin.Export{{Name: "run", Kind: wasmbin.KindFunc}, {Name: "count", Kind: wasmbin.KindGlobal}},
	}
	return mods
}

func TestRunawayGuestsRunOutOfFuel(t *testing.T) {
	ctx := context.Background()
	const budget = 20_000
	for name, tm := range runaway() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			wasm, err := Instrument(tm.encode())
			if err != nil {
				t.Fatal(err)
			}
			r := newRuntime(t, nil)
			var counts, used []int64
			for range 3 {
				mod := instantiate(t, ctx, r, wasm)
				m := NewMeter(budget)
				_, err := mod.ExportedFunction("run").Call(WithMeter(ctx, m), nil...)
				if !errors.Is(err, ErrExhausted) || !m.Exhausted() {
					t.Fatalf("err = %v, exhausted = %v; want ErrExhausted", err, m.Exhausted())
				}
				counts = append(counts, int64(mod.ExportedGlobal("count").Get()))
				used = append(used, m.Used())
				mod.Close(ctx)
			}
			if counts[0] == 0 {
				t.Fatal("the guest made no progress before running out")
			}
			for i := range counts {
				if counts[i] != counts[0] || used[i] != used[0] {
					t.Fatalf("run %d: count %d used %d, run 0: count %d used %d", i, counts[i], used[i], counts[0], used[0])
				}
			}
			if used[0] <= budget || used[0] > budget+100 {
				t.Fatalf("used %d, want just over the budget %d", used[0], budget)
			}
			// Twice the budget gets at least twice as far: fuel, not time, stops it.
			mod := instantiate(t, ctx, r, wasm)
			m := NewMeter(2 * budget)
			if _, err := mod.ExportedFunction("run").Call(WithMeter(ctx, m)); !errors.Is(err, ErrExhausted) {
				t.Fatalf("err = %v", err)
			}
			if c := int64(mod.ExportedGlobal("count").Get()); c < 2*counts[0]-1 {
				t.Fatalf("count with twice the budget = %d, with the budget = %d", c, counts[0])
			}
		})
	}
}

func TestTailCallsAreCharged(t *testing.T) {
	ctx := context.Background()
	cfg := wazero.NewRuntimeConfig().WithCoreFeatures(api.CoreFeaturesV2 | experimental.CoreFeaturesTailCall)
	direct := &testModule{
		types:   []wasmbin.FuncType{voidType},
		funcs:   []testFunc{{typ: 0, body: asm{}.incr(0).idx(wasmbin.OpReturnCall, 0)}},
		globals: []wasmbin.Global{counterGlobal()},
		exports: []wasmbin.Export{{Name: "run", Kind: wasmbin.KindFunc}, {Name: "count", Kind: wasmbin.KindGlobal}},
	}
	indirect := &testModule{
		types:   []wasmbin.FuncType{voidType},
		funcs:   []testFunc{{typ: 0, body: asm{}.incr(0).i32(0).op(wasmbin.OpReturnCallIndirect, 0, 0)}},
		globals: []wasmbin.Global{counterGlobal()},
		exports: []wasmbin.Export{{Name: "run", Kind: wasmbin.KindFunc}, {Name: "count", Kind: wasmbin.KindGlobal}},
		table:   []uint32{0},
	}
	for name, tm := range map[string]*testModule{"return_call": direct, "return_call_indirect": indirect} {
		t.Run(name, func(t *testing.T) {
			wasm, err := Instrument(tm.encode())
			if err != nil {
				t.Fatal(err)
			}
			r := newRuntime(t, cfg)
			mod := instantiate(t, ctx, r, wasm)
			m := NewMeter(10_000)
			if _, err := mod.ExportedFunction("run").Call(WithMeter(ctx, m)); !errors.Is(err, ErrExhausted) {
				t.Fatalf("err = %v, want ErrExhausted", err)
			}
			if c := mod.ExportedGlobal("count").Get(); c < 100 {
				t.Fatalf("count = %d", c)
			}
		})
	}
}

// TestCostModel pins the cost model: one unit per instruction except
// block, loop, else, end and nop; a loop head or function entry costs at
// least one.
func TestCostModel(t *testing.T) {
	ctx := context.Background()
	i32v := wasmbin.FuncType{Params: []byte{wasmbin.I32}}
	// for (i = n; i != 0; i--) {}  -- per iteration: local.get, i32.const,
	// i32.sub, local.tee, br_if = 5; entry: block, loop free.
	loop := asm{}.op(wasmbin.OpBlock, wasmbin.BlockTypeEmpty).op(wasmbin.OpLoop, wasmbin.BlockTypeEmpty).
		idx(wasmbin.OpLocalGet, 0).i32(1).op(opI32Sub).idx(wasmbin.OpLocalTee, 0).idx(wasmbin.OpBrIf, 0).
		op(wasmbin.OpEnd).op(wasmbin.OpEnd)
	tm := &testModule{
		types: []wasmbin.FuncType{voidType, i32v},
		funcs: []testFunc{
			{typ: 0, body: asm{}.i32(1).op(wasmbin.OpDrop).op(wasmbin.OpNop)},
			{typ: 1, body: loop},
			{typ: 0, body: asm{}},
		},
		exports: []wasmbin.Export{
			{Name: "straight", Kind: wasmbin.KindFunc, Index: 0},
			{Name: "loop", Kind: wasmbin.KindFunc, Index: 1},
			{Name: "empty", Kind: wasmbin.KindFunc, Index: 2},
		},
	}
	wasm, err := Instrument(tm.encode())
	if err != nil {
		t.Fatal(err)
	}
	r := newRuntime(t, nil)
	mod := instantiate(t, ctx, r, wasm)
	for _, tc := range []struct {
		fn   string
		arg  []uint64
		want int64
	}{
		{"straight", nil, 2},
		{"empty", nil, 1},
		{"loop", []uint64{1}, 1 + 5},
		{"loop", []uint64{10}, 1 + 10*5},
		{"loop", []uint64{1000}, 1 + 1000*5},
	} {
		m := NewMeter(1 << 40)
		if _, err := mod.ExportedFunction(tc.fn).Call(WithMeter(ctx, m), tc.arg...); err != nil {
			t.Fatal(err)
		}
		if m.Used() != tc.want {
			t.Errorf("%s%v used %d, want %d", tc.fn, tc.arg, m.Used(), tc.want)
		}
	}
}

// TestOverrunAfterLastCheckFails checks that a call cannot finish over
// budget: straight-line code after the last check is settled on return.
func TestOverrunAfterLastCheckFails(t *testing.T) {
	ctx := context.Background()
	body := asm{}.i32(1).op(wasmbin.OpDrop).op(wasmbin.OpBlock, wasmbin.BlockTypeEmpty).op(wasmbin.OpEnd)
	for range 100 {
		body = body.i32(1).op(wasmbin.OpDrop)
	}
	tm := &testModule{types: []wasmbin.FuncType{voidType}, funcs: []testFunc{{body: body}},
		exports: []wasmbin.Export{{Name: "run", Kind: wasmbin.KindFunc}}}
	wasm, err := Instrument(tm.encode())
	if err != nil {
		t.Fatal(err)
	}
	mod := instantiate(t, ctx, newRuntime(t, nil), wasm)
	m := NewMeter(100)
	if _, err := mod.ExportedFunction("run").Call(WithMeter(ctx, m)); !errors.Is(err, ErrExhausted) {
		t.Fatalf("err = %v, want ErrExhausted", err)
	}
	if m.Used() != 202 {
		t.Fatalf("used %d, want 202", m.Used())
	}
	m = NewMeter(202)
	if _, err := mod.ExportedFunction("run").Call(WithMeter(ctx, m)); err != nil {
		t.Fatalf("with exactly enough fuel: %v", err)
	}
}

func TestGoGuestSameResultsUnderBudget(t *testing.T) {
	ctx := context.Background()
	orig := goGuest(t)
	wasm, err := Instrument(orig)
	if err != nil {
		t.Fatal(err)
	}
	r := newRuntime(t, nil)
	plain := instantiate(t, ctx, r, orig)
	for _, tc := range []struct {
		fn  string
		arg uint64
	}{{"spin", 100000}, {"fib", 20}, {"jsonwork", 50}, {"dispatch", 1000}} {
		want, err := plain.ExportedFunction(tc.fn).Call(ctx, tc.arg)
		if err != nil {
			t.Fatal(err)
		}
		var firstUsed int64
		for i := range 2 {
			m := NewMeter(DefaultBudget)
			mod := instantiate(t, WithMeter(ctx, m), r, wasm)
			initUsed := m.Used()
			got, err := mod.ExportedFunction(tc.fn).Call(WithMeter(ctx, m), tc.arg)
			if err != nil {
				t.Fatalf("%s: %v", tc.fn, err)
			}
			if got[0] != want[0] {
				t.Fatalf("%s(%d) = %d instrumented, %d plain", tc.fn, tc.arg, got[0], want[0])
			}
			used := m.Used() - initUsed
			if used <= 0 {
				t.Fatalf("%s used no fuel", tc.fn)
			}
			if i == 0 {
				firstUsed = used
			} else if used != firstUsed {
				t.Fatalf("%s used %d then %d", tc.fn, firstUsed, used)
			}
			mod.Close(ctx)
		}
	}
}

func TestGoGuestRunsOutDeterministicallyAndHostKeepsServing(t *testing.T) {
	ctx := context.Background()
	wasm, err := Instrument(goGuest(t))
	if err != nil {
		t.Fatal(err)
	}
	r := newRuntime(t, nil)
	var used []int64
	for _, fn := range []string{"spin", "spin", "jsonwork", "jsonwork"} {
		mod := instantiate(t, ctx, r, wasm)
		m := NewMeter(5_000_000)
		_, err := mod.ExportedFunction(fn).Call(WithMeter(ctx, m), 1<<30)
		if !errors.Is(err, ErrExhausted) {
			t.Fatalf("%s: err = %v, want ErrExhausted", fn, err)
		}
		used = append(used, m.Used())
		mod.Close(ctx)
	}
	if used[0] != used[1] || used[2] != used[3] {
		t.Fatalf("fuel used differs between identical runs: %v", used)
	}
	// The host keeps serving: a fresh instance from the same compiled module
	// answers normally.
	mod := instantiate(t, ctx, r, wasm)
	got, err := mod.ExportedFunction("fib").Call(WithMeter(ctx, NewMeter(0)), 10)
	if err != nil || got[0] != 55 {
		t.Fatalf("fib(10) after exhaustion = %v, %v", got, err)
	}
}

func TestInstrumentIsDeterministicAndRefusesTwice(t *testing.T) {
	orig := goGuest(t)
	a, err := Instrument(orig)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Instrument(orig)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two instrumentations of the same module differ")
	}
	if _, err := Instrument(a); !errors.Is(err, ErrInstrumented) {
		t.Fatalf("instrumenting twice: err = %v, want ErrInstrumented", err)
	}
}

func TestInstrumentRejectsBadInput(t *testing.T) {
	good := (&testModule{types: []wasmbin.FuncType{voidType}, funcs: []testFunc{{body: asm{}}}}).encode()
	for name, wasm := range map[string][]byte{
		"empty":          nil,
		"not wasm":       []byte("\x7fELF\x02\x01\x01"),
		"truncated":      good[:len(good)-2],
		"exceptions":     (&testModule{types: []wasmbin.FuncType{voidType}, funcs: []testFunc{{body: asm{}.op(0x08, 0)}}}).encode(),
		"unbalanced end": (&testModule{types: []wasmbin.FuncType{voidType}, funcs: []testFunc{{body: asm{}.op(wasmbin.OpEnd, wasmbin.OpNop)}}}).encode(),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Instrument(wasm); err == nil {
				t.Fatal("no error")
			}
		})
	}
	var unsupported *wasmbin.UnsupportedError
	_, err := Instrument((&testModule{types: []wasmbin.FuncType{voidType}, funcs: []testFunc{{body: asm{}.op(0x08, 0)}}}).encode())
	if !errors.As(err, &unsupported) {
		t.Fatalf("exception handling: err = %v, want UnsupportedError", err)
	}
}

// TestSameFuelInInterpreterAndCompiler checks that fuel does not depend on
// how the module is executed: wazero's interpreter and its optimising
// compiler charge exactly the same amount, and run out at the same point.
func TestSameFuelInInterpreterAndCompiler(t *testing.T) {
	ctx := context.Background()
	wasm, err := Instrument(goGuest(t))
	if err != nil {
		t.Fatal(err)
	}
	measure := func(cfg wazero.RuntimeConfig, fn string, arg uint64, budget int64) (int64, bool) {
		r := newRuntime(t, cfg)
		mod := instantiate(t, ctx, r, wasm)
		m := NewMeter(budget)
		_, err := mod.ExportedFunction(fn).Call(WithMeter(ctx, m), arg)
		if err != nil && !errors.Is(err, ErrExhausted) {
			t.Fatal(err)
		}
		return m.Used(), m.Exhausted()
	}
	for _, tc := range []struct {
		fn     string
		arg    uint64
		budget int64
	}{{"jsonwork", 3, 0}, {"fib", 15, 0}, {"jsonwork", 1 << 20, 2_000_000}} {
		ui, ei := measure(wazero.NewRuntimeConfigInterpreter(), tc.fn, tc.arg, tc.budget)
		uc, ec := measure(wazero.NewRuntimeConfigCompiler(), tc.fn, tc.arg, tc.budget)
		if ui != uc || ei != ec {
			t.Errorf("%s(%d): interpreter used %d (exhausted %v), compiler %d (exhausted %v)", tc.fn, tc.arg, ui, ei, uc, ec)
		}
	}
}

// TestBulkInstructionsPayForTheirLength checks that memory.fill, memory.copy
// and memory.grow are charged by size, so a loop of large bulk operations
// cannot run for long on little fuel.
func TestBulkInstructionsPayForTheirLength(t *testing.T) {
	ctx := context.Background()
	i32v := wasmbin.FuncType{Params: []byte{wasmbin.I32}}
	fill := asm{}.i32(0).i32(7).idx(wasmbin.OpLocalGet, 0).op(wasmbin.OpPrefixFC, 11, 0)    // memory.fill
	cp := asm{}.i32(100).i32(0).idx(wasmbin.OpLocalGet, 0).op(wasmbin.OpPrefixFC, 10, 0, 0) // memory.copy
	grow := asm{}.idx(wasmbin.OpLocalGet, 0).op(0x40, 0, wasmbin.OpDrop)                    // memory.grow
	spin := asm{}.op(wasmbin.OpLoop, wasmbin.BlockTypeEmpty).incr(0).
		i32(0).i32(1).i32(60000).op(wasmbin.OpPrefixFC, 11, 0).idx(wasmbin.OpBr, 0).op(wasmbin.OpEnd)
	tm := &testModule{
		types:   []wasmbin.FuncType{voidType, i32v},
		funcs:   []testFunc{{typ: 1, body: fill}, {typ: 1, body: cp}, {typ: 1, body: grow}, {typ: 0, body: spin}},
		memory:  true,
		globals: []wasmbin.Global{counterGlobal()},
		exports: []wasmbin.Export{
			{Name: "fill", Kind: wasmbin.KindFunc, Index: 0}, {Name: "copy", Kind: wasmbin.KindFunc, Index: 1},
			{Name: "grow", Kind: wasmbin.KindFunc, Index: 2}, {Name: "spin", Kind: wasmbin.KindFunc, Index: 3},
			{Name: "count", Kind: wasmbin.KindGlobal},
		},
	}
	wasm, err := Instrument(tm.encode())
	if err != nil {
		t.Fatal(err)
	}
	r := newRuntime(t, nil)
	mod := instantiate(t, ctx, r, wasm)
	for _, tc := range []struct {
		fn   string
		arg  uint64
		want int64
	}{
		{"fill", 0, 4}, {"fill", 6400, 4 + 100}, {"copy", 6400, 4 + 100}, {"grow", 2, 3 + 2*1024},
	} {
		m := NewMeter(1 << 40)
		if _, err := mod.ExportedFunction(tc.fn).Call(WithMeter(ctx, m), tc.arg); err != nil {
			t.Fatal(err)
		}
		if m.Used() != tc.want {
			t.Errorf("%s(%d) used %d, want %d", tc.fn, tc.arg, m.Used(), tc.want)
		}
	}
	m := NewMeter(1_000_000)
	if _, err := mod.ExportedFunction("spin").Call(WithMeter(ctx, m)); !errors.Is(err, ErrExhausted) {
		t.Fatalf("spin: err = %v", err)
	}
	if n := mod.ExportedGlobal("count").Get(); n > 1_000_000/937 {
		t.Fatalf("%d fills of 60000 bytes on 10^6 fuel", n)
	}
}
