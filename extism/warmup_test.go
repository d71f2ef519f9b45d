package extism

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/plugin"
)

// TestReadyWaitsForCalls: while calls come back to back, Ready neither
// compiles a tool nobody calls nor fills its pool; once the calls have
// stopped for the quiet time, it does both and returns.
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
	echo := guestSpec("fixtures", "echo")
	busy := loadWith(t, a, echo)
	idle := loadWith(t, a, plugin.Spec{Name: "tiny", Source: plugin.Source{Bytes: tinyRawModule(), Export: "run"},
		InputSchema: []byte(`{"type":"object"}`)}).(*wasmTool)

	// The busy tool compiles at its first call; then calls come back to
	// back for a while, and Ready is called among them.
	if _, err := call(t, busy, &echo, map[string]any{"text": "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	ready := make(chan error, 1)
	var returned time.Time
	burst := time.Now().Add(600 * time.Millisecond)
	go func() {
		time.Sleep(50 * time.Millisecond)
		err := a.Ready(context.Background())
		returned = time.Now()
		ready <- err
	}()
	calls := 0
	for time.Now().Before(burst) {
		if _, err := call(t, busy, &echo, map[string]any{"text": "hi"}, nil); err != nil {
			t.Fatal(err)
		}
		calls++
	}
	ended := time.Now()
	if err := <-ready; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	began, ok := started["tiny"]
	mu.Unlock()
	switch {
	case !ok:
		t.Fatal("Ready returned without compiling the tool nobody called")
	case began.Before(ended):
		t.Errorf("the idle tool started compiling %v before the burst of %d calls ended", ended.Sub(began), calls)
	case began.Sub(ended) < quiet-20*time.Millisecond:
		t.Errorf("the idle tool started compiling %v after the last call, before the quiet time (%v)", began.Sub(ended), quiet)
	}
	if returned.Before(began) {
		t.Error("Ready returned before compiling")
	}
	if a.calls.waited.Load() == 0 {
		t.Error("Ready never waited for calls")
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

// TestReadyEndsWithItsContext: a Ready waiting for calls to stop returns
// its context's error when the context ends.
func TestReadyEndsWithItsContext(t *testing.T) {
	a, err := New(Config{CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	loadWith(t, a, plugin.Spec{Name: "tiny", Source: plugin.Source{Bytes: tinyRawModule(), Export: "run"},
		InputSchema: []byte(`{"type":"object"}`)})
	a.calls.begin() // a call that does not end
	defer a.calls.end()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := a.Ready(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ready = %v, want %v", err, context.DeadlineExceeded)
	}
}
