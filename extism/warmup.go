package extism

import (
	"context"
	"sync/atomic"
	"time"
)

// Warm-up: what Ready does for tools nobody has called yet (compiling
// them, filling their pools) waits for a moment without calls.
//
// A host's configuration names tools of several modules, and compiling
// one from the cache takes 5-100 ms (a cold cache: seconds), filling its
// pool more. Done at once when `host serve` starts, that work ran beside
// the first calls of a client that called at once: on the 2-vCPU
// development machine, 1,000 reads back to back right after the start
// had a p99 of 4.5-5.4 ms, against 1.9-2.1 ms once warm-up waited for
// them (mcp BenchmarkFilesystem, docs/wasm.md). Calls come
// first: warm-up goes on when none has run for warmQuiet, between two
// tools, and a call of a tool not yet compiled compiles it on the spot as
// it would without Ready.

// warmQuiet is how long without a call Ready waits for before each piece
// of warm-up. An agent's calls come a model turn apart, hundreds of
// milliseconds at least, so its host warms up between them; calls closer
// together are a burst, and warm-up waits for its end.
const warmQuiet = 100 * time.Millisecond

// callActivity tracks an adapter's calls in flight and when the last one
// ended.
type callActivity struct {
	running atomic.Int64
	last    atomic.Int64 // when the last call ended, as time since epoch
	epoch   time.Time
	quiet   atomic.Int64 // warmQuiet (shorter in tests), in nanoseconds
	// waited counts Ready's pauses for calls, for tests.
	waited atomic.Int64
}

func (c *callActivity) init() {
	c.epoch = time.Now()
	c.quiet.Store(int64(warmQuiet))
	c.last.Store(-int64(time.Hour)) // no call yet: quiet from the start
}

func (c *callActivity) begin() { c.running.Add(1) }

func (c *callActivity) end() {
	c.last.Store(int64(time.Since(c.epoch)))
	c.running.Add(-1)
}

// untilQuiet returns how long warm-up must still wait: zero once no call
// is running and none has ended within the quiet time.
func (c *callActivity) untilQuiet() time.Duration {
	quiet := time.Duration(c.quiet.Load())
	if c.running.Load() > 0 {
		return quiet
	}
	return quiet - (time.Since(c.epoch) - time.Duration(c.last.Load()))
}

// waitQuiet returns once the adapter has had no call for the quiet time,
// or with ctx's error. A call in flight, however long, counts as a call:
// a host busy with one minutes-long call warms up when it ends (a tool
// called meanwhile compiles at once).
func (c *callActivity) waitQuiet(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d := c.untilQuiet()
	if d <= 0 {
		return nil
	}
	c.waited.Add(1)
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if d = c.untilQuiet(); d <= 0 {
			return nil
		}
		t.Reset(d)
	}
}

// called reports whether the tool has been called: it compiled then, and
// its pool refills after its calls.
func (t *wasmTool) called() bool { return t.wasCalled.Load() }
