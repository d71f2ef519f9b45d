// Package fuel gives WebAssembly guests a deterministic CPU budget.
//
// wazero has no fuel of its own, stopping a spinning guest by closing it on
// a deadline makes loops many times slower, and compiled wasm code cannot
// be preempted by the Go runtime: a guest that computes holds its thread,
// and a garbage collection waits for it. Instead, Instrument rewrites a
// module once, at load time, so that it counts the instructions it runs,
// comes back to the host for more fuel every Slice (where the Meter checks
// the call's context, yields to the scheduler and, with a Gate, takes
// turns with other long calls), and traps when the budget of the current
// call is spent. The count is a property of the module and its input
// alone: the same call with the same input uses the same fuel and runs out
// at the same instruction on every machine, under any load, with wazero's
// compiler or interpreter.
//
// Use, with go-sdk (see docs/fuel.md for the full integration):
//
//	wasm, err := fuel.Instrument(original)            // at load, before compiling
//	cp, err := extism.NewCompiledPlugin(ctx, manifest(wasm), cfg,
//		append(hostFuncs, fuel.HostFunctions()...))
//	...
//	gate := fuel.NewGate(runtime.GOMAXPROCS(0)-1, 10*time.Millisecond) // per host
//	m := fuel.NewMeter(budget)                        // per call
//	m.Share(gate)
//	_, out, err := p.CallWithContext(fuel.WithMeter(ctx, m), export, in)
//	m.Release()
//	if errors.Is(err, fuel.ErrExhausted) { /* LIMIT_EXCEEDED, limit "fuel"; discard p */ }
//	if errors.Is(err, context.DeadlineExceeded) { /* stopped at the deadline; discard p */ }
//	used := m.Used()
//
// With wazero directly, InstantiateHostModule stands in for HostFunctions.
//
// Cost model: one unit per executed instruction, except the structural
// markers block, loop, else, end and nop, which are free; each loop
// iteration and each function call costs at least one unit. Charges are made
// per straight-line stretch of code when it is entered, so a call that traps
// for another reason has been charged for the whole stretch it was in.
// Instructions whose work grows with an operand also pay for it before they
// run: memory.fill/copy/init one unit per 64 bytes, memory.grow 1024 units per
// page, table.fill/copy/init/grow one unit per 8 elements. The wall-clock
// deadline remains the bound for time spent outside guest code.
package fuel
