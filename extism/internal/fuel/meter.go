package fuel

import (
	"context"
	"errors"
	"runtime"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// DefaultBudget is the fuel of a call when the host sets none: about 10^9
// instructions, the design's default CPU budget.
const DefaultBudget int64 = 1_000_000_000

// ErrExhausted is the error a call fails with when its fuel runs out. It
// reaches the caller of the wasm function wrapped by wazero (and by go-sdk),
// so test for it with errors.Is. The instance that ran out must be discarded.
var ErrExhausted = errors.New("fuel exhausted")

// Slice is the most fuel the host hands a running guest at once. When a
// slice is spent the guest calls back into the host for the next one, which
// is where the Go runtime gets the goroutine back: compiled wasm code cannot
// be preempted, so a garbage collection's stop-the-world waits until the
// guest comes back to Go code. Guests burn 1–15·10⁹ units per second here,
// so a slice lasts 70 µs to 1 ms, and a refill costs well under a
// microsecond.
const Slice int64 = 1 << 20

// Meter carries the fuel budget of one call into an instrumented module and
// the fuel used out of it. Attach it to the call's context with WithMeter.
//
// The guest gets the budget a Slice at a time. At every refill the meter
// checks the call's context (a cancelled or expired call stops there, with
// the context's error), lets the Go scheduler run other goroutines, and, if
// the meter shares a Gate, waits for its turn once the call has run long.
//
// A Meter belongs to one call on one instance at a time; it is not safe for
// concurrent use. Fuel spent by every entry into the module under the same
// Meter (go-sdk's implicit _initialize, then the export) is drawn from the
// same budget. Call Release when the call is over, however it ended.
type Meter struct {
	budget      int64
	remaining   int64 // not yet handed to the guest
	outstanding int64 // handed to the guest in the current slice
	depth       int
	exhausted   bool

	gate  *Gate
	held  bool      // holds one of the gate's lanes
	start time.Time // of the outermost entry, when gated
}

// NewMeter returns a meter with the given budget; budget <= 0 means
// DefaultBudget.
func NewMeter(budget int64) *Meter {
	if budget <= 0 {
		budget = DefaultBudget
	}
	return &Meter{budget: budget, remaining: budget}
}

// Share makes the meter's call take turns through g once it has run for
// g's threshold. Set it before the call.
func (m *Meter) Share(g *Gate) { m.gate = g }

// Budget is the fuel the meter started with.
func (m *Meter) Budget() int64 { return m.budget }

// Used is the fuel charged so far. After exhaustion it can exceed the budget
// by the cost of the code charged since the last check. While a call runs,
// or after it failed for a reason other than fuel, the slice it was in is
// not counted: Used is then short by less than a Slice.
func (m *Meter) Used() int64 { return m.budget - m.remaining - m.outstanding }

// Exhausted reports whether a call under this meter ran out of fuel.
func (m *Meter) Exhausted() bool { return m.exhausted }

// Pause gives up the meter's gate lane, if it holds one, while its guest
// waits in a host function (a network request, a sleep): a waiting guest
// needs no CPU. The next refill takes a lane again. Safe to call on a nil
// meter.
func (m *Meter) Pause() {
	if m != nil && m.held {
		m.gate.leave()
		m.held = false
	}
}

// Release ends the meter's call: it gives up its gate lane, if any. The
// adapter calls it after every call, since a guest that traps never returns
// through the module's exit. Safe to call more than once, and on nil.
func (m *Meter) Release() { m.Pause() }

type meterKey struct{}

// WithMeter returns a context that makes calls into instrumented modules draw
// fuel from m.
func WithMeter(ctx context.Context, m *Meter) context.Context {
	return context.WithValue(ctx, meterKey{}, m)
}

// MeterFrom returns the meter attached by WithMeter, or nil.
func MeterFrom(ctx context.Context) *Meter {
	m, _ := ctx.Value(meterKey{}).(*Meter)
	return m
}

// grant hands the guest its next slice.
func (m *Meter) grant() int64 {
	g := min(Slice, m.remaining)
	m.remaining -= g
	m.outstanding = g
	return g
}

// settle takes back what is left of the current slice (negative: what the
// guest overspent).
func (m *Meter) settle(counter int64) {
	m.remaining += counter
	m.outstanding = 0
}

// stop ends the call with err from inside a host function: wazero turns
// the panic into the call's error, wrapped.
func (m *Meter) stop(err error) {
	m.Release()
	panic(err)
}

// begin is called when the host enters the module. Re-entrant entries (a
// host function calling back into the module) keep the fuel already there.
func begin(ctx context.Context, current int64) int64 {
	m := MeterFrom(ctx)
	if m == nil {
		return DefaultBudget
	}
	m.depth++
	if m.depth > 1 {
		return current
	}
	if m.gate != nil && m.start.IsZero() {
		m.start = time.Now()
	}
	return m.grant()
}

// end is called when an entry returns normally. Overrunning the budget in the
// code after the last check still counts as exhaustion, so a call either
// finishes within its budget or fails.
func end(ctx context.Context, remaining int64) {
	m := MeterFrom(ctx)
	if m == nil {
		if remaining < 0 {
			panic(ErrExhausted)
		}
		return
	}
	m.depth--
	if m.depth > 0 {
		return // the outer entry goes on with the counter in the global
	}
	m.settle(remaining)
	if m.remaining < 0 {
		m.exhausted = true
		m.stop(ErrExhausted)
	}
}

// refill is called by the module when a check finds its counter negative:
// the slice is spent. It settles the slice and hands out the next one, or
// stops the call: its budget is spent (ErrExhausted) or its context is done
// (the context's error, so errors.Is(err, context.DeadlineExceeded) holds
// after a timeout).
func refill(ctx context.Context, counter int64) int64 {
	m := MeterFrom(ctx)
	if m == nil {
		// Entries without a meter (tests, instantiation by other hosts) get
		// DefaultBudget in one piece.
		panic(ErrExhausted)
	}
	m.settle(counter)
	if m.remaining < 0 {
		m.exhausted = true
		m.stop(ErrExhausted)
	}
	if err := ctx.Err(); err != nil {
		m.stop(err)
	}
	if m.gate != nil {
		if err := m.gate.turn(ctx, m); err != nil {
			m.stop(err)
		}
	}
	// Let the scheduler run whatever waits for this P; if nothing does,
	// this costs ~100 ns.
	runtime.Gosched()
	return m.grant()
}

// HostFunctions returns the host functions an instrumented module imports, for
// extism.NewCompiledPlugin. They read the Meter from the context passed to
// Plugin.CallWithContext.
func HostFunctions() []extism.HostFunction {
	i64 := []extism.ValueType{extism.ValueTypeI64}
	fns := []extism.HostFunction{
		extism.NewHostFunctionWithStack(importBegin, func(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
			stack[0] = uint64(begin(ctx, int64(stack[0])))
		}, i64, i64),
		extism.NewHostFunctionWithStack(importEnd, func(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
			end(ctx, int64(stack[0]))
		}, i64, nil),
		extism.NewHostFunctionWithStack(importRefill, func(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
			stack[0] = uint64(refill(ctx, int64(stack[0])))
		}, i64, i64),
	}
	for i := range fns {
		fns[i].SetNamespace(ImportModule)
	}
	return fns
}

// InstantiateHostModule defines the host functions an instrumented module
// imports in a wazero runtime, for hosts that use wazero directly.
func InstantiateHostModule(ctx context.Context, r wazero.Runtime) (api.Module, error) {
	i64 := []api.ValueType{api.ValueTypeI64}
	return r.NewHostModuleBuilder(ImportModule).
		NewFunctionBuilder().WithGoFunction(api.GoFunc(func(ctx context.Context, stack []uint64) {
		stack[0] = uint64(begin(ctx, int64(stack[0])))
	}), i64, i64).Export(importBegin).
		NewFunctionBuilder().WithGoFunction(api.GoFunc(func(ctx context.Context, stack []uint64) {
		end(ctx, int64(stack[0]))
	}), i64, nil).Export(importEnd).
		NewFunctionBuilder().WithGoFunction(api.GoFunc(func(ctx context.Context, stack []uint64) {
		stack[0] = uint64(refill(ctx, int64(stack[0])))
	}), i64, i64).Export(importRefill).
		Instantiate(ctx)
}
