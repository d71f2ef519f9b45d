package fuel

import (
	"context"
	"errors"

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

// Meter carries the fuel budget of one call into an instrumented module and
// the fuel used out of it. Attach it to the call's context with WithMeter.
//
// A Meter belongs to one call on one instance at a time; it is not safe for
// concurrent use. Fuel spent by every entry into the module under the same
// Meter (go-sdk's implicit _initialize, then the export) is drawn from the
// same budget.
type Meter struct {
	budget    int64
	remaining int64
	depth     int
	started   bool
	exhausted bool
}

// NewMeter returns a meter with the given budget; budget <= 0 means
// DefaultBudget.
func NewMeter(budget int64) *Meter {
	if budget <= 0 {
		budget = DefaultBudget
	}
	return &Meter{budget: budget, remaining: budget}
}

// Budget is the fuel the meter started with.
func (m *Meter) Budget() int64 { return m.budget }

// Used is the fuel charged so far. After exhaustion it can exceed the budget
// by the cost of the code charged since the last check.
func (m *Meter) Used() int64 { return m.budget - m.remaining }

// Exhausted reports whether a call under this meter ran out of fuel.
func (m *Meter) Exhausted() bool { return m.exhausted }

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
	m.started = true
	return m.remaining
}

// end is called when an entry returns normally. Overrunning the budget in the
// code after the last check still counts as exhaustion, so a call either
// finishes within its budget or fails.
func end(ctx context.Context, remaining int64) {
	m := MeterFrom(ctx)
	if m != nil {
		m.depth--
		m.remaining = remaining
	}
	if remaining < 0 {
		if m != nil {
			m.exhausted = true
		}
		panic(ErrExhausted)
	}
}

// exhausted is called by the module when a check finds no fuel left.
func exhausted(ctx context.Context, remaining int64) {
	if m := MeterFrom(ctx); m != nil {
		m.remaining = remaining
		m.exhausted = true
	}
	panic(ErrExhausted)
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
		extism.NewHostFunctionWithStack(importExhausted, func(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
			exhausted(ctx, int64(stack[0]))
		}, i64, nil),
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
		exhausted(ctx, int64(stack[0]))
	}), i64, nil).Export(importExhausted).
		Instantiate(ctx)
}
