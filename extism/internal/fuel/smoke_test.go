package fuel

import (
	"context"
	"testing"
)

func TestSmoke(t *testing.T) {
	orig := goGuest(t)
	inst, err := Instrument(orig)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("orig %d bytes, instrumented %d bytes", len(orig), len(inst))
	r := newRuntime(t, nil)
	ctx := context.Background()
	a := instantiate(t, ctx, r, orig)
	m := NewMeter(0)
	mctx := WithMeter(ctx, m)
	b := instantiate(t, mctx, r, inst)
	t.Logf("init used %d", m.Used())
	for _, fn := range []string{"spin", "fib", "jsonwork", "dispatch"} {
		m := NewMeter(0)
		ra, err := a.ExportedFunction(fn).Call(ctx, 20)
		if err != nil {
			t.Fatal(err)
		}
		rb, err := b.ExportedFunction(fn).Call(WithMeter(ctx, m), 20)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %v %v used=%d", fn, ra, rb, m.Used())
	}
}
