package extism

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/toolhost/toolhost/plugin"
)

// TestInstPool checks the pool's order (newest first), its size and that a
// closed pool hands back what it held and takes nothing more.
func TestInstPool(t *testing.T) {
	p := newInstPool(2, nil)
	a, b, c := &instance{}, &instance{}, &instance{}
	if p.pop() != nil || p.full() {
		t.Fatal("a new pool is not empty")
	}
	p.push(a)
	p.push(b)
	if !p.full() {
		t.Fatal("a pool of 2 holding 2 is not full")
	}
	if got := p.pop(); got != b {
		t.Fatal("pop did not return the newest instance")
	}
	p.push(c)
	if got := p.pop(); got != c {
		t.Fatal("pop did not return the newest instance")
	}
	held := p.close()
	if len(held) != 1 || held[0] != a {
		t.Fatalf("close returned %d instances, want the one left", len(held))
	}
	if p.push(b) || p.pop() != nil {
		t.Fatal("a closed pool took an instance")
	}
}

// TestInstPoolBurst: during a burst the pool is full only with its extra
// instances, and trim takes out the oldest beyond its size.
func TestInstPoolBurst(t *testing.T) {
	extra := refillBurstExtra
	p := newInstPool(2, func() int { return extra })
	insts := make([]*instance, 2+refillBurstExtra)
	for i := range insts {
		if p.full() {
			t.Fatalf("a pool of 2 in a burst is full with %d", i)
		}
		insts[i] = &instance{}
		p.push(insts[i])
	}
	if !p.full() {
		t.Fatalf("a pool of 2 in a burst is not full with %d", len(insts))
	}
	extra = 0
	old := p.trim()
	if len(old) != refillBurstExtra || old[0] != insts[0] || old[len(old)-1] != insts[refillBurstExtra-1] {
		t.Fatalf("trim returned %d instances, want the %d oldest", len(old), refillBurstExtra)
	}
	if got := p.pop(); got != insts[len(insts)-1] {
		t.Fatal("after trim, pop did not return the newest instance")
	}
	if got := p.pop(); got != insts[len(insts)-2] || p.pop() != nil {
		t.Fatal("trim did not leave the newest two")
	}
	if p.trim() != nil {
		t.Fatal("trim of a pool under its size returned instances")
	}
}

// TestRetiredClosedWithFullPool: an instance used by a call that did not
// take it from the pool (its spec mounts something else) is closed soon
// after the call, although the pool is still full.
func TestRetiredClosedWithFullPool(t *testing.T) {
	a, err := New(Config{CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	sp := guestSpec("fixtures", "echo")
	sp.Limits.Pool = 1
	wt := loadWith(t, a, sp).(*wasmTool)
	if _, err := call(t, wt, &sp, map[string]any{"text": "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pool to refill", func() bool { return wt.pool.full() && wt.live.Load() == 1 })
	other := sp
	other.Capabilities.Mounts = []plugin.Mount{{HostPath: t.TempDir(), GuestPath: "/data", ReadOnly: true}}
	if _, err := call(t, wt, &other, map[string]any{"text": "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the used instance to be closed", func() bool { return wt.live.Load() == 1 })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPacedCallsDoNotWakeTheRefill: calls spaced apart, as an agent's are,
// do not wake the refill goroutine (a wake costs the call 18-26 µs on a
// 2-vCPU VM), and what they use is replaced all the same: the goroutine
// polls while calls are coming.
func TestPacedCallsDoNotWakeTheRefill(t *testing.T) {
	for _, size := range []int{1, 2} {
		t.Run(fmt.Sprintf("pool=%d", size), func(t *testing.T) {
			a, err := New(Config{CacheDir: cacheDir})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			sp := guestSpec("fixtures", "echo")
			sp.Limits.Pool = size
			wt := loadWith(t, a, sp).(*wasmTool)
			if err := a.Ready(context.Background()); err != nil {
				t.Fatal(err)
			}
			if _, err := call(t, wt, &sp, map[string]any{"text": "hi"}, nil); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the pool to refill", wt.pool.full)
			r := &wt.refills
			wakes, misses := r.wakes.Load(), r.misses.Load()
			for i := range 8 {
				time.Sleep(100 * time.Millisecond)
				if _, err := call(t, wt, &sp, map[string]any{"text": "hi"}, nil); err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				waitFor(t, "the pool to refill", wt.pool.full)
			}
			if n := r.misses.Load() - misses; n != 0 {
				t.Errorf("%d of 8 calls found the pool empty", n)
			}
			if n := r.wakes.Load() - wakes; n != 0 {
				t.Errorf("8 calls 100ms apart woke the refill goroutine %d times, want 0", n)
			}
		})
	}
}

// TestRefillParksAndWakes: once calls have stopped for the park time, the
// refill goroutine stops polling; the next call wakes it, and the pool is
// full again after the call. Back-to-back calls that empty the pool wake
// it too, and every one of them is answered.
func TestRefillParksAndWakes(t *testing.T) {
	a, err := New(Config{CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	sp := guestSpec("fixtures", "echo")
	sp.Limits.Pool = 2
	wt := loadWith(t, a, sp).(*wasmTool)
	r := &wt.refills
	r.park.Store(int64(50 * time.Millisecond))
	if _, err := call(t, wt, &sp, map[string]any{"text": "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pool to refill", wt.pool.full)
	waitFor(t, "the refill goroutine to park", r.parked.Load)
	wakes := r.wakes.Load()
	if _, err := call(t, wt, &sp, map[string]any{"text": "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	if r.wakes.Load() != wakes+1 {
		t.Errorf("a call with the refill goroutine parked woke it %d times, want 1", r.wakes.Load()-wakes)
	}
	waitFor(t, "the pool to refill after waking", wt.pool.full)

	wakes = r.wakes.Load()
	missed := r.missed.Load()
	for i := range 6 {
		res, err := call(t, wt, &sp, map[string]any{"text": "burst"}, nil)
		if err != nil || res.IsError || res.TextContent() != "burst" {
			t.Fatalf("call %d of a burst: %v, %+v", i, err, res)
		}
	}
	if r.wakes.Load() == wakes {
		t.Error("6 calls back to back emptied a pool of 2 without waking the refill goroutine")
	}
	// A call that found the pool empty put the goroutine in burst mode:
	// it polls every refillBurstPoll, without the answer delay, until
	// refillBurstSpan after the last such call (TestBurstPollInterval).
	if r.missed.Load() == missed {
		t.Error("6 calls back to back emptied a pool of 2 without starting a burst")
	}
	waitFor(t, "the pool to refill after a burst", wt.pool.full)
	waitFor(t, "the burst to end", func() bool { return !r.burst() })
	// Parked, the goroutine holds the pool's size and no more: extra
	// instances the burst had it make, if any, are closed.
	waitFor(t, "the refill goroutine to park after the burst", r.parked.Load)
	wt.pool.mu.Lock()
	n := len(wt.pool.insts)
	wt.pool.mu.Unlock()
	if n != 2 {
		t.Errorf("the parked pool of 2 holds %d instances", n)
	}
	waitFor(t, "only the pooled instances to be left", func() bool { return wt.live.Load() == 2 })
}

// TestBurstPollInterval: the refill polls every refillBurstPoll from a
// call that found the pool empty until refillBurstSpan after it, and
// otherwise at half the time since the last call, between refillDelay and
// refillPollMax.
func TestBurstPollInterval(t *testing.T) {
	var r refillState
	r.init()
	if r.burst() {
		t.Fatal("a new pool is in burst mode")
	}
	now := func() int64 { return int64(time.Since(r.epoch)) }
	r.last.Store(now())
	if d := r.interval(); d != refillDelay {
		t.Errorf("just after a call: poll in %v, want %v", d, refillDelay)
	}
	r.last.Store(now() - int64(10*time.Second))
	if d := r.interval(); d != refillPollMax {
		t.Errorf("10s after a call: poll in %v, want %v", d, refillPollMax)
	}
	r.missed.Store(now())
	if !r.burst() || r.interval() != refillBurstPoll {
		t.Errorf("just after a miss: burst %v, poll in %v; want true, %v", r.burst(), r.interval(), refillBurstPoll)
	}
	r.missed.Store(now() - int64(refillBurstSpan) - int64(time.Millisecond))
	if r.burst() || r.interval() != refillPollMax {
		t.Errorf("a burst span after a miss: burst %v, poll in %v; want false, %v", r.burst(), r.interval(), refillPollMax)
	}
}
