package fuel

import (
	"context"
	"time"
)

// Gate keeps long-running guests from taking every CPU of the host.
//
// Compiled wasm code holds its thread until it comes back to Go, so a few
// guests that compute for seconds would otherwise occupy every P of the Go
// scheduler and every other call — a file read, an MCP answer — would wait
// behind them. A call whose meter shares a Gate runs freely for the gate's
// threshold; after that, each refill (every Slice of fuel) needs one of the
// gate's lanes, and lanes go round in FIFO order among the long calls that
// want one. With lanes = GOMAXPROCS-1, at least one P is always left to
// short calls and to the host itself, whatever the guests do.
//
// A Gate is safe for concurrent use by any number of meters.
type Gate struct {
	lanes chan struct{}
	after time.Duration
}

// NewGate returns a gate with the given number of lanes (at least one) for
// calls that have run longer than after.
func NewGate(lanes int, after time.Duration) *Gate {
	return &Gate{lanes: make(chan struct{}, max(lanes, 1)), after: after}
}

// turn is called at every refill of m's call. A call past the threshold
// gives up its lane, if it holds one, and queues for the next free one, so
// that long calls share the lanes a slice at a time.
func (g *Gate) turn(ctx context.Context, m *Meter) error {
	if !m.held && time.Since(m.start) < g.after {
		return nil
	}
	if m.held {
		g.leave()
		m.held = false
	}
	select {
	case g.lanes <- struct{}{}:
		m.held = true
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *Gate) leave() { <-g.lanes }
