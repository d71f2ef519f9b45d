// Package gcfloor gives the Go garbage collector a heap floor: it lets the
// heap grow by at least a given number of bytes between collections, rather
// than by the live heap's size (GOGC=100).
//
// A long-running host has a small live heap (about 4 MiB for `host serve`
// on the default configuration) and allocates a few hundred kilobytes per
// tool call (the MCP SDK's JSON decoding, wazero's per-instance
// structures). With GOGC=100 the collector then ran every ~15 calls,
// 250 times in 1.5 s of back-to-back listings, and took a tenth of the
// CPU. The floor makes collections as rare as a heap of floor bytes
// would, while a heap that grows past the floor is collected as GOGC=100
// collects it.
//
// The collection target is GOGC percent of the live heap, so the package
// sets GOGC after each collection from the live heap it left:
// max(100, floor/live*100), at most maxPercent. It does nothing when the
// GOGC environment variable is set: the operator's choice stands.
package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// maxPercent bounds the GOGC the floor sets, for a live heap that is
// tiny (a process that has just started).
const maxPercent = 1000

const liveMetric = "/gc/heap/live:bytes"

// tuner re-computes GOGC after every collection.
type tuner struct {
	floor uint64

	mu      sync.Mutex
	percent int // the GOGC set last
	runs    int // collections seen, for tests
	stopped bool
	sample  []metrics.Sample
}

// sentinel is an object nobody refers to, whose finalizer runs once a
// collection has found it unreachable, and arms the next.
type sentinel struct{ t *tuner }

// Start keeps the collector's heap target at least floor bytes above the
// live heap, unless GOGC is set. stop restores GOGC to what it was.
func Start(floor uint64) (stop func()) {
	if _, set := os.LookupEnv("GOGC"); set || floor == 0 {
		return func() {}
	}
	_, stop = start(floor)
	return stop
}

func start(floor uint64) (*tuner, func()) {
	t := &tuner{floor: floor, sample: []metrics.Sample{{Name: liveMetric}}}
	t.mu.Lock()
	t.percent = t.target(t.live())
	before := debug.SetGCPercent(t.percent)
	t.mu.Unlock()
	t.arm()
	return t, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.stopped = true
		debug.SetGCPercent(before)
	}
}

// live returns the live heap the last collection left (0: none yet).
func (t *tuner) live() uint64 {
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return t.sample[0].Value.Uint64()
}

// target returns the GOGC that puts the next collection floor bytes above
// live (0: not known yet, a heap under Go's 4 MiB minimum).
func (t *tuner) target(live uint64) int {
	if live == 0 {
		return maxPercent
	}
	p := t.floor * 100 / live
	return int(min(max(p, 100), maxPercent))
}

func (t *tuner) arm() {
	runtime.SetFinalizer(&sentinel{t: t}, func(s *sentinel) { s.t.collected() })
}

// collected runs after a collection: it sets GOGC for the next one and
// arms the sentinel again.
func (t *tuner) collected() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	t.runs++
	// Move only for a change of a tenth or more: setting GOGC takes the
	// heap lock.
	if p := t.target(t.live()); p*10 < t.percent*9 || p*10 > t.percent*11 {
		debug.SetGCPercent(p)
		t.percent = p
	}
	t.arm()
}
