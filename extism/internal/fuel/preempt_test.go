package fuel

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// Compiled wasm code cannot be preempted by the Go runtime. Before fuel was
// handed out in slices, a guest spinning with a large budget held its
// thread until the budget ran out: a garbage collection waited for it (and
// with it every goroutine of the host), and a cancelled call went on.
// These tests spin the Go guest with a budget of minutes.

const spinForever = 1 << 62 // iterations: the budget or the context ends it

func TestSpinningGuestStopsAtItsDeadline(t *testing.T) {
	wasm, err := Instrument(goGuest(t))
	if err != nil {
		t.Fatal(err)
	}
	r := newRuntime(t, nil)
	mod := instantiate(t, context.Background(), r, wasm)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	m := NewMeter(1 << 62)
	start := time.Now()
	_, err = mod.ExportedFunction("spin").Call(WithMeter(ctx, m), spinForever)
	late := time.Since(start) - 100*time.Millisecond
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	if m.Exhausted() {
		t.Fatal("meter reports exhaustion; the deadline stopped the call")
	}
	// A slice lasts about a millisecond; a generous bound for a busy machine.
	if late > time.Second {
		t.Fatalf("the guest stopped %v after its deadline", late)
	}
	if m.Used() < Slice {
		t.Fatalf("Used = %d: the guest ran for 100 ms and must have spent more than a slice", m.Used())
	}
	t.Logf("stopped %v after the deadline, %d units used", late, m.Used())
}

func TestSpinningGuestsDoNotStallGarbageCollection(t *testing.T) {
	wasm, err := Instrument(goGuest(t))
	if err != nil {
		t.Fatal(err)
	}
	r := newRuntime(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	started := make(chan struct{}, 4)
	for range 4 { // more spinners than Ps
		mod := instantiate(t, context.Background(), r, wasm)
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := NewMeter(1 << 62)
			cctx := WithMeter(ctx, m)
			started <- struct{}{}
			_, err := mod.ExportedFunction("spin").Call(cctx, spinForever)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("spin: err = %v, want context.Canceled", err)
			}
		}()
	}
	for range 4 {
		<-started
	}
	time.Sleep(50 * time.Millisecond) // every spinner is in guest code
	var worst time.Duration
	for range 5 {
		start := time.Now()
		runtime.GC()
		worst = max(worst, time.Since(start))
	}
	cancel()
	wg.Wait()
	// Before slices, runtime.GC waited until the spinners' budgets ran out
	// (minutes here). Now it waits at most for every spinner's current slice.
	if worst > time.Second {
		t.Fatalf("runtime.GC took %v beside spinning guests", worst)
	}
	t.Logf("slowest runtime.GC beside 4 spinning guests: %v", worst)
}

func TestGateSharesLanesAmongLongCalls(t *testing.T) {
	wasm, err := Instrument(goGuest(t))
	if err != nil {
		t.Fatal(err)
	}
	r := newRuntime(t, nil)
	g := NewGate(1, 0) // one lane, every call counts as long at once
	mods := make([]api.Module, 3)
	for i := range mods {
		mods[i] = instantiate(t, context.Background(), r, wasm)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	meters := make([]*Meter, len(mods))
	for i, mod := range mods {
		m := NewMeter(1 << 62)
		m.Share(g)
		meters[i] = m
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer m.Release()
			_, err := mod.ExportedFunction("spin").Call(WithMeter(ctx, m), spinForever)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("spin: err = %v, want context.DeadlineExceeded", err)
			}
		}()
	}
	wg.Wait()
	if n := len(g.lanes); n != 0 {
		t.Fatalf("%d lanes still held after every call ended", n)
	}
	// Each call got turns: none was starved behind the others.
	var total int64
	for _, m := range meters {
		total += m.Used()
	}
	for i, m := range meters {
		if m.Used() < total/10 {
			t.Errorf("call %d used %d of %d units: starved", i, m.Used(), total)
		}
	}
}

func TestPauseGivesUpTheLane(t *testing.T) {
	g := NewGate(1, 0)
	a, b := NewMeter(0), NewMeter(0)
	a.Share(g)
	b.Share(g)
	ctx := context.Background()
	if err := g.turn(ctx, a); err != nil || !a.held {
		t.Fatalf("a: err %v, held %v", err, a.held)
	}
	a.Pause()
	if a.held {
		t.Fatal("a still holds its lane after Pause")
	}
	if err := g.turn(ctx, b); err != nil || !b.held {
		t.Fatalf("b did not get the lane a gave up: err %v", err)
	}
	// The lane is taken: a waits, and its context ends the wait.
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := g.turn(cctx, a); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a waiting for the lane: err %v, want DeadlineExceeded", err)
	}
	b.Release()
	b.Release() // twice is harmless
	if n := len(g.lanes); n != 0 {
		t.Fatalf("%d lanes held after release", n)
	}
}
