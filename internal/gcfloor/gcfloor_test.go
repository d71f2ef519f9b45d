package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// percent returns the GOGC in force (briefly setting it to 100).
func percent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func read(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestFloor: after a collection, GOGC is set from the live heap so that
// the heap target is at least the floor above it; stop restores GOGC, and
// a stopped tuner changes nothing more.
func TestFloor(t *testing.T) {
	before := percent()
	runtime.GC()
	const floor = 64 << 20
	tu, stop := start(floor)
	if p := percent(); p < maxPercent*9/10 {
		t.Fatalf("GOGC %d for a test's small heap, want about %d", p, maxPercent)
	}
	// 16 MiB live: the target for a 64 MiB floor is about 400, which the
	// tuner must move to after a collection.
	ballast := make([]byte, 16<<20)
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		tu.mu.Lock()
		runs, set := tu.runs, tu.percent
		tu.mu.Unlock()
		live := read(liveMetric)
		want := int(min(max(floor*100/live, 100), maxPercent))
		if runs > 0 && percent() == set && set*10 >= want*9 && set*10 <= want*11 {
			if want >= maxPercent || want <= 100 {
				t.Fatalf("live heap %d: the test wants a target strictly between 100 and %d, got %d", live, maxPercent, want)
			}
			if goal := read("/gc/heap/goal:bytes"); goal < live+floor*8/10 {
				t.Errorf("heap goal %d with %d live, want about live + %d", goal, live, floor)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d collections: GOGC %d with %d bytes live, want %d±10%%", runs, percent(), live, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	runtime.KeepAlive(ballast)
	stop()
	if p := percent(); p != before {
		t.Errorf("GOGC %d after stop, want %d", p, before)
	}
	// Stopped, the tuner leaves GOGC alone although the live heap has
	// changed, and sees no more collections.
	tu.mu.Lock()
	runs := tu.runs
	tu.mu.Unlock()
	debug.SetGCPercent(150)
	defer debug.SetGCPercent(before)
	for range 3 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if p := percent(); p != 150 {
		t.Errorf("GOGC %d after stop and collections, want 150 (left alone)", p)
	}
	tu.mu.Lock()
	defer tu.mu.Unlock()
	if tu.runs != runs {
		t.Errorf("a stopped tuner ran %d more times", tu.runs-runs)
	}
}

// TestGOGCSet: with GOGC in the environment, Start changes nothing.
func TestGOGCSet(t *testing.T) {
	t.Setenv("GOGC", "100")
	before := percent()
	stop := Start(64 << 20)
	defer stop()
	runtime.GC()
	if p := percent(); p != before {
		t.Errorf("GOGC %d with GOGC set in the environment, want %d", p, before)
	}
}

// TestTarget: the computed GOGC puts the next collection floor bytes
// above the live heap, between 100 and maxPercent.
func TestTarget(t *testing.T) {
	tu := &tuner{floor: 32 << 20}
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, maxPercent},
		{1 << 20, maxPercent},
		{4 << 20, 800},
		{16 << 20, 200},
		{32 << 20, 100},
		{1 << 30, 100},
	} {
		if got := tu.target(c.live); got != c.want {
			t.Errorf("target(%d) = %d, want %d", c.live, got, c.want)
		}
	}
}
