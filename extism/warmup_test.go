package extism

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/plugin"
)

// TestReadyWaitsForCalls: while a call is in flight, and for the quiet
// time after it, Ready neither compiles a tool nobody has called nor fills
// its pool; then it does both and returns.
func TestReadyWaitsForCalls(t *testing.T) {
	var mu sync.Mutex
	started := map[string]time.Time{}
	hook := func(ev CompileEvent) {
		mu.Lock()
		defer mu.Unlock()
		if !ev.Done {
			started[ev.Tool] = time.Now()
		}
	}
	a, err := New(Config{CacheDir: cacheDir, OnCompile: hook})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	const quiet = 150 * time.Millisecond
	a.calls.quiet.Store(int64(quiet))
	idle := loadWith(t, a, tinySpec()).(*wasmTool)

	a.calls.begin() // a call in flight
	ready := make(chan error, 1)
	go func() { ready <- a.Ready(context.Background()) }()
	time.Sleep(3 * quiet)
	mu.Lock()
	_, early := started["tiny"]
	mu.Unlock()
	if early {
		t.Fatal("Ready compiled a tool nobody called while a call was in flight")
	}
	if a.calls.waited.Load() == 0 {
		t.Error("Ready did not wait for the call")
	}
	ended := time.Now()
	a.calls.end()
	if err := <-ready; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	began, ok := started["tiny"]
	mu.Unlock()
	switch {
	case !ok:
		t.Fatal("Ready returned without compiling the tool nobody called")
	case began.Sub(ended) < quiet-20*time.Millisecond:
		t.Errorf("the tool started compiling %v after the call ended, before the quiet time (%v)", began.Sub(ended), quiet)
	}
	waitFor(t, "the idle tool's pool to fill", idle.pool.full)

	// With no call for the quiet time, Ready does not wait.
	time.Sleep(quiet)
	waited := a.calls.waited.Load()
	if err := a.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := a.calls.waited.Load() - waited; n != 0 {
		t.Errorf("Ready waited %d times for calls with none running", n)
	}
}

// TestReadyAmongRealCalls: Ready called among calls made back to back
// returns, having compiled the tool nobody called, once they stop.
func TestReadyAmongRealCalls(t *testing.T) {
	a, err := New(Config{CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.calls.quiet.Store(int64(50 * time.Millisecond))
	echo := guestSpec("fixtures", "echo")
	busy := loadWith(t, a, echo)
	idle := loadWith(t, a, tinySpec()).(*wasmTool)
	ready := make(chan error, 1)
	for i := range 40 {
		if i == 1 {
			go func() { ready <- a.Ready(context.Background()) }()
		}
		if _, err := call(t, busy, &echo, map[string]any{"text": "hi"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-ready; err != nil {
		t.Fatal(err)
	}
	select {
	case <-idle.done:
	default:
		t.Error("Ready returned before the idle tool compiled")
	}
}

// TestReadySkipsCalledTools: a tool that has been called needs no warm-up,
// so Ready does not wait for calls before it.
func TestReadySkipsCalledTools(t *testing.T) {
	a, err := New(Config{CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	echo := guestSpec("fixtures", "echo")
	busy := loadWith(t, a, echo)
	if _, err := call(t, busy, &echo, map[string]any{"text": "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	a.calls.begin() // a call in flight that does not end before Ready
	defer a.calls.end()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	if n := a.calls.waited.Load(); n != 0 {
		t.Errorf("Ready waited %d times with only a called tool", n)
	}
}

func tinySpec() plugin.Spec {
	return plugin.Spec{Name: "tiny", Source: plugin.Source{Bytes: tinyRawModule(), Export: "run"},
		InputSchema: []byte(`{"type":"object"}`)}
}

// TestReadyEndsWithItsContext: a Ready waiting for calls to stop returns
// its context's error when the context ends.
func TestReadyEndsWithItsContext(t *testing.T) {
	a, err := New(Config{CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	loadWith(t, a, tinySpec())
	a.calls.begin() // a call that does not end
	defer a.calls.end()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := a.Ready(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ready = %v, want %v", err, context.DeadlineExceeded)
	}
}
