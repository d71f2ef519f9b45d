package extism

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolhost/toolhost/plugin"
)

// The pool of pre-instantiated instances, and the goroutine that refills it.
//
// Waking a sleeping thread costs the waker 18-26 µs on the 2-vCPU
// development machine (an inter-processor interrupt in a VM; measured with
// a channel send, a timer reset and a raw eventfd write alike), which was a
// sixth of a small call. So a call does not wake the refill goroutine: it
// notes that it used an instance (refillState.want), and the goroutine,
// which polls while calls are coming, picks that up on its next tick. A
// call wakes it only when it finds it parked (no call for refillPark) or
// finds the pool empty (a burst: the call builds its own instance); during
// a burst the goroutine polls every refillBurstPoll.

const (
	// refillDelay is how long after a call the pool starts refilling at
	// the earliest:
	// long enough for the call's answer to reach its client. Refilling at
	// once (several hundred microseconds of CPU at nice 19) ran while the
	// host wrote the answer and the client woke to read it; over MCP on
	// two CPUs a paced listing took 1,000-1,071 µs at p50 with the
	// immediate refill and 856-927 µs with this delay (two runs each,
	// alternating builds). It is also the shortest poll interval.
	refillDelay = 2 * time.Millisecond
	// refillPollMax is the longest poll interval. Between the two, the
	// goroutine polls at half the time since the last call: calls paced
	// P apart find their instance replaced within P/2, and a pool of two
	// covers a call that comes sooner; polling costs about 15 wakes of
	// the refill thread per call at a pace of a second.
	refillPollMax = time.Second
	// refillPark is how long after the last call the refill goroutine
	// stops polling and sleeps until a call wakes it.
	refillPark = time.Minute
	// refillBurstPoll is the poll interval during a burst, from a call
	// that found the pool empty until refillBurstSpan after the last such
	// call; the answer delay is skipped then, as there is always an answer
	// on its way. Back-to-back calls come a few hundred microseconds
	// apart, faster than a pool of two lasts between polls refillDelay
	// apart: over MCP on two CPUs, 38 % of 3,000 listings back to back
	// found the pool empty and built their own instance, 15 % with these
	// polls.
	refillBurstPoll = 400 * time.Microsecond
	refillBurstSpan = 50 * time.Millisecond
	// refillBurstExtra is how many instances the pool holds beyond its
	// size during a burst, so that it lasts from one poll to the next
	// while the refill, at nice 19, gets what the calls leave of the
	// CPUs: with it, 3-5 % of the 3,000 listings above built their own
	// instance rather than 15 %. The extra instances are closed when the
	// goroutine parks if no call has used them. A pool of one gets one.
	refillBurstExtra = 2
)

// refillState is what calls and the refill goroutine share.
type refillState struct {
	kick chan struct{} // wakes the goroutine (capacity 1)
	// want is set by a call that used an instance, cleared by the
	// goroutine when it refills.
	want atomic.Bool
	// parked is set while the goroutine sleeps without polling.
	parked atomic.Bool
	// missed is when a call last found the pool empty within
	// refillBurstSpan of the call before, as time since epoch: calls are
	// coming back to back (a burst).
	missed atomic.Int64
	// last is when the last call ended, as time since epoch.
	last  atomic.Int64
	epoch time.Time
	// park is refillPark (shorter in tests), in nanoseconds.
	park atomic.Int64
	// filled is set once the pool has been full: before that, a call
	// that finds it empty does not start a burst.
	filled atomic.Bool
	// burstExtra is the pool's extra instances during a burst:
	// refillBurstExtra, at most the pool's size.
	burstExtra int
	// Counters, for tests and benchmarks: calls that woke the goroutine,
	// and instances built on a call's own time because the pool was
	// empty.
	wakes, misses atomic.Int64
}

func (r *refillState) init() {
	r.kick, r.epoch = make(chan struct{}, 1), time.Now()
	r.park.Store(int64(refillPark))
	r.parked.Store(true) // until the goroutine has run once
	r.missed.Store(-int64(refillBurstSpan))
	r.last.Store(-int64(refillPark)) // no call yet
}

// burst reports whether a call found the pool empty within the burst span.
func (r *refillState) burst() bool {
	return time.Since(r.epoch)-time.Duration(r.missed.Load()) < refillBurstSpan
}

// extra is how many instances the pool holds beyond its size now.
func (r *refillState) extra() int {
	if r.burst() {
		return r.burstExtra
	}
	return 0
}

// sinceLast returns how long ago the last call ended.
func (r *refillState) sinceLast() time.Duration {
	return time.Since(r.epoch) - time.Duration(r.last.Load())
}

// interval returns how long to sleep before the next poll.
func (r *refillState) interval() time.Duration {
	if r.burst() {
		return refillBurstPoll
	}
	return min(max(r.sinceLast()/2, refillDelay), refillPollMax)
}

// refill keeps the pool full until the tool closes.
//
// The pool starts filling on first use (the first call, or Adapter.Ready),
// not when compilation ends: a one-shot host (host call) would only build
// instances it never uses, competing with its one call.
func (t *wasmTool) refill() {
	defer t.wg.Done()
	background() // after the calls and their clients (background_linux.go)
	r := &t.refills
	poll := time.NewTimer(time.Hour)
	poll.Stop()
	defer poll.Stop()
	for {
		select {
		case <-r.kick:
		case <-poll.C:
		case <-t.quit:
			return
		}
		r.parked.Store(false)
		if !r.want.Load() && t.pool.full() && len(t.retired) == 0 {
			if r.sinceLast() < time.Duration(r.park.Load()) {
				poll.Reset(r.interval())
				continue
			}
			// Calls have stopped: sleep until one wakes the goroutine,
			// holding no more than the pool's size.
			for _, inst := range t.pool.trim() {
				inst.close()
			}
			r.parked.Store(true)
			if !r.want.Load() {
				continue
			}
			// A call ended as the goroutine parked and, seeing it
			// awake, did not wake it: refill for that call.
			r.parked.Store(false)
		}
		r.want.Store(false)
		// Let the last call's answer reach its client first, unless
		// calls found the pool empty: they come back to back, build their
		// own instances meanwhile, and there is always an answer on its
		// way. (An empty pool alone says nothing: a pool of one is empty
		// after every call.)
		if d := refillDelay - r.sinceLast(); d > 0 && !r.burst() {
			poll.Reset(d)
			select {
			case <-poll.C:
			case <-t.quit:
				return
			}
		}
		if !t.fill() {
			return
		}
		poll.Reset(r.interval())
	}
}

// fill closes used instances and builds new ones until the pool is full.
// It returns false when the tool is closing.
func (t *wasmTool) fill() bool {
	backoff := 10 * time.Millisecond
	for {
		// Used instances are closed first, and again before each new one
		// is made, so that their memories go back to the adapter's pool
		// before new ones are taken from it.
		t.closeRetired()
		if t.pool.full() {
			t.refills.filled.Store(true)
			return true
		}
		ctx, cancel := context.WithTimeout(context.Background(), t.limits.Timeout)
		inst, err := t.newInstance(ctx, t.spec)
		if err == nil && t.direct() {
			inst.prepareDirect(ctx)
		}
		cancel()
		if err != nil {
			t.log.Warn("pre-instantiating", "error", err)
			select {
			case <-time.After(backoff):
			case <-t.quit:
				return false
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 10 * time.Millisecond
		if !t.pool.push(inst) {
			inst.close() // closed meanwhile
			return false
		}
	}
}

// take returns a fresh instance: from the pool if one is ready, else built
// now. Pooled instances carry the Load spec's mounts; a call whose spec
// mounts something else gets an instance built for it.
func (t *wasmTool) take(ctx context.Context, spec *plugin.Spec) (*instance, error) {
	if spec != t.spec && !slices.Equal(spec.Capabilities.Mounts, t.spec.Capabilities.Mounts) {
		return t.newInstance(ctx, spec)
	}
	if t.pool != nil {
		if inst := t.pool.pop(); inst != nil {
			return inst, nil
		}
		r := &t.refills
		r.misses.Add(1)
		if r.filled.Load() && r.sinceLast() < refillBurstSpan {
			// Calls are coming back to back: a burst. (Calls before the
			// pool was first filled are not one.)
			r.missed.Store(int64(time.Since(r.epoch)))
		}
		t.wake()
		// The refill lags (a burst, or a busy machine). Close the used
		// instances before making this one, as the refill does: a
		// recycled memory spares the new instance a page fault for every
		// page of its memory image, more than the closing costs.
		t.closeRetired()
	}
	return t.newInstance(ctx, t.spec)
}

// used tells the refill goroutine that a call has ended, after using an
// instance or handing one to retire. It wakes the goroutine only if it is
// parked; polling, the goroutine replaces the instance at its next tick,
// within half the time since the call before.
func (t *wasmTool) used() {
	if t.pool == nil {
		return
	}
	r := &t.refills
	r.last.Store(int64(time.Since(r.epoch)))
	r.want.Store(true)
	if r.parked.Load() {
		t.wake()
	}
}

// wake wakes the refill goroutine (or leaves it a kick if it is busy).
func (t *wasmTool) wake() {
	if t.pool == nil {
		return
	}
	select {
	case t.refills.kick <- struct{}{}:
		t.refills.wakes.Add(1)
	default:
	}
}

// retire disposes of a used instance. Closing one (freeing its memory,
// removing its /tmp) takes a few hundred microseconds, so it is left to the
// background goroutine when there is one; the instance is never used again
// either way.
func (t *wasmTool) retire(inst *instance) {
	inst.stopBatch() // the call is over: no file is read for it after this
	if t.pool != nil {
		select {
		case <-t.quit:
		case t.retired <- inst:
			return
		default:
		}
	}
	inst.close()
}

func (t *wasmTool) closeRetired() {
	for {
		select {
		case inst := <-t.retired:
			inst.close()
		default:
			return
		}
	}
}

// instPool holds a tool's pre-instantiated instances. It hands out the one
// made last: its memory was written most recently and is the most likely
// to be in the CPU caches, which a fresh instance's first call depends on.
type instPool struct {
	mu     sync.Mutex
	insts  []*instance
	max    int
	extra  func() int // how many more it holds now; nil for none
	closed bool
}

func newInstPool(max int, extra func() int) *instPool {
	return &instPool{max: max, extra: extra}
}

// pop returns the newest instance, or nil if there is none.
func (p *instPool) pop() *instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.insts)
	if n == 0 {
		return nil
	}
	inst := p.insts[n-1]
	p.insts[n-1] = nil
	p.insts = p.insts[:n-1]
	return inst
}

// push adds an instance; false if the pool is closed (the caller closes
// the instance). A full pool takes it all the same: only refill pushes,
// after checking full.
func (p *instPool) push(inst *instance) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.insts = append(p.insts, inst)
	return true
}

// full reports whether the pool holds its size, and the extra instances
// of a burst during one.
func (p *instPool) full() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.max
	if p.extra != nil {
		n += p.extra()
	}
	return len(p.insts) >= n
}

// trim takes out and returns the oldest instances beyond the pool's size.
func (p *instPool) trim() []*instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.insts) - p.max
	if n <= 0 {
		return nil
	}
	old := slices.Clone(p.insts[:n])
	p.insts = slices.Delete(p.insts, 0, n) // clears the vacated tail
	return old
}

// close empties the pool for good and returns what it held.
func (p *instPool) close() []*instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	insts := p.insts
	p.insts, p.closed = nil, true
	return insts
}
