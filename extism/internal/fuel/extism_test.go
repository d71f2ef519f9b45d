package fuel

import (
	"context"
	"errors"
	"testing"

	extism "github.com/extism/go-sdk"

	"github.com/toolhost/toolhost/extism/internal/wasmbin"
)

// TestExtismPluginRunsOutOfFuel runs a spinning guest through go-sdk, as the
// extism adapter does, without any timeout: fuel alone stops it, the error
// is ErrExhausted, and the compiled plugin keeps serving new instances.
func TestExtismPluginRunsOutOfFuel(t *testing.T) {
	ctx := context.Background()
	spin := asm{}.op(wasmbin.OpLoop, wasmbin.BlockTypeEmpty).incr(0).idx(wasmbin.OpBr, 0).op(wasmbin.OpEnd)
	tm := &testModule{
		types:   []wasmbin.FuncType{voidType, {Results: []byte{wasmbin.I32}}},
		funcs:   []testFunc{{typ: 0, body: spin}, {typ: 1, body: asm{}.i32(0)}},
		globals: []wasmbin.Global{counterGlobal()},
		exports: []wasmbin.Export{{Name: "spin", Kind: wasmbin.KindFunc}, {Name: "ok", Kind: wasmbin.KindFunc, Index: 1}},
	}
	wasm, err := Instrument(tm.encode())
	if err != nil {
		t.Fatal(err)
	}
	cp, err := extism.NewCompiledPlugin(ctx, extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: wasm}}},
		extism.PluginConfig{}, HostFunctions())
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close(ctx)
	var used []int64
	for range 2 {
		p, err := cp.Instance(ctx, extism.PluginInstanceConfig{})
		if err != nil {
			t.Fatal(err)
		}
		m := NewMeter(1_000_000)
		_, _, err = p.CallWithContext(WithMeter(ctx, m), "spin", nil)
		if !errors.Is(err, ErrExhausted) || !m.Exhausted() {
			t.Fatalf("err = %v, want ErrExhausted", err)
		}
		used = append(used, m.Used())
		p.Close(ctx)
	}
	if used[0] != used[1] {
		t.Fatalf("fuel used %d then %d", used[0], used[1])
	}
	p, err := cp.Instance(ctx, extism.PluginInstanceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	m := NewMeter(0)
	if rc, _, err := p.CallWithContext(WithMeter(ctx, m), "ok", nil); err != nil || rc != 0 {
		t.Fatalf("ok after exhaustion: rc %d err %v", rc, err)
	}
	if m.Used() != 1 {
		t.Fatalf("ok used %d fuel, want 1", m.Used())
	}
}
