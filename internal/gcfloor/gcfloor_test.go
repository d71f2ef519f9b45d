package gcfloor

import (
	"os"
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

// TestFloor: after a collection, the heap target is at least the floor
// above the live heap, and stop restores GOGC.
func TestFloor(t *testing.T) {
	if _, set := os.LookupEnv("GOGC"); set {
		t.Skip("GOGC is set in the environment")
	}
	before := percent()
	const floor = 64 << 20
	stop := Start(floor)
	// The collector runs the sentinel's finalizer after a collection;
	// wait for one to have set GOGC from the live heap.
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		live := read(liveMetric)
		want := min(max(floor*100/live, 100), maxPercent)
		if uint64(percent()) == want {
			if goal := read("/gc/heap/goal:bytes"); want < maxPercent && goal < live+floor*9/10 {
				t.Errorf("heap goal %d with %d live, want at least live + %d", goal, live, floor)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GOGC %d with %d bytes live, want %d", percent(), live, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if p := percent(); p != before {
		t.Errorf("GOGC %d after stop, want %d", p, before)
	}
	// A stopped tuner no longer changes GOGC.
	debug.SetGCPercent(150)
	defer debug.SetGCPercent(before)
	runtime.GC()
	runtime.GC()
	time.Sleep(50 * time.Millisecond)
	if p := percent(); p != 150 {
		t.Errorf("GOGC %d after stop and a collection, want 150 (left alone)", p)
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
