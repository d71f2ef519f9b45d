package extism

import (
	"context"
	"errors"
	"fmt"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/toolhost/toolhost/extism/internal/fuel"
)

// The direct call: how a call_tool call of a fast-I/O guest skips go-sdk's
// per-call work.
//
// go-sdk's Plugin.CallWithContext looks up seven functions (the export,
// and the Extism kernel's reset, alloc, input_set, error_get,
// output_offset and output_length), and wazero builds a call engine with a
// fresh 10 KiB stack for every lookup: in a CPU profile of back-to-back
// listings, a fifth of the guest call's time (docs/wasm.md, "The direct
// call"). A fast-I/O guest needs none of the input work: its Extism input
// stays empty, which tells it to read stdin.
//
// So, while the pool pre-instantiates (off any call's path), the instance
// is called once through go-sdk, on fastIOExport, an empty function. That
// call runs go-sdk's guest-runtime initialisation as a first call would,
// and a function listener on the export (compiled in for fast-I/O guests
// only) hands over the guest's module and the Extism kernel that go-sdk
// passes its host functions. The call engines a call needs are built then.
// The call itself is then what CallWithContext would do after its input
// work: the same context values for go-sdk's host functions, the same
// reading of WASI exit codes, the guest's Extism error and its Extism
// output.

// directCall holds an instance's prepared call engines.
type directCall struct {
	plugin *extism.Plugin
	kernel api.Module // the Extism kernel: error and output
	fn     api.Function
	errGet api.Function // the kernel's error_get
	outLen api.Function // the kernel's output_length
}

// directListener is the function listener compiled into fastIOExport. It
// is only ever notified of that function.
type directListener struct{}

type captureKey struct{}

func (directListener) NewFunctionListener(def api.FunctionDefinition) experimental.FunctionListener {
	for _, n := range def.ExportNames() {
		if n == fastIOExport {
			return directListener{}
		}
	}
	return nil
}

func (directListener) Before(ctx context.Context, mod api.Module, _ api.FunctionDefinition, _ []uint64, _ experimental.StackIterator) {
	c, ok := ctx.Value(captureKey{}).(*capture)
	if !ok {
		return // a call of fastIOExport by anyone else
	}
	c.main = mod
	c.kernel, _ = ctx.Value(extism.PluginCtxKey("extism")).(api.Module)
}

func (directListener) After(context.Context, api.Module, api.FunctionDefinition, []uint64) {}

func (directListener) Abort(context.Context, api.Module, api.FunctionDefinition, error) {}

type capture struct{ main, kernel api.Module }

// prepareDirect gives a pooled instance its direct call. An instance made
// for a call that found the pool empty does without: preparing costs more
// than the call saves.
func (inst *instance) prepareDirect(ctx context.Context) {
	ctx = fuel.WithMeter(context.WithValue(ctx, instKey{}, inst), fuel.NewMeter(fuel.DefaultBudget))
	if err := inst.makeDirect(ctx, exportCallTool); err != nil {
		inst.t.log.Debug("calls go through go-sdk", "reason", err)
	}
}

// makeDirect makes the instance's direct call for export, or explains why
// there is none (the call then goes through go-sdk).
func (inst *instance) makeDirect(ctx context.Context, export string) error {
	var c capture
	if _, _, err := inst.p.CallWithContext(context.WithValue(ctx, captureKey{}, &c), fastIOExport, nil); err != nil {
		return fmt.Errorf("calling %s: %w", fastIOExport, err)
	}
	if c.main == nil || c.kernel == nil {
		return errors.New("the module was not compiled with the direct call's listener")
	}
	d := &directCall{plugin: inst.p, kernel: c.kernel}
	if d.fn = c.main.ExportedFunction(export); d.fn == nil {
		return fmt.Errorf("no export %s", export)
	}
	if n := len(d.fn.Definition().ResultTypes()); n > 1 {
		return fmt.Errorf("%s has %d results", export, n)
	}
	d.errGet = c.kernel.ExportedFunction("error_get")
	d.outLen = c.kernel.ExportedFunction("output_length")
	if d.errGet == nil || d.outLen == nil {
		return errors.New("the Extism kernel lacks error_get or output_length")
	}
	inst.direct = d
	return nil
}

// call calls the prepared export with an empty Extism input and returns
// what Plugin.CallWithContext would.
func (d *directCall) call(ctx context.Context) (uint32, []byte, error) {
	ctx = context.WithValue(ctx, extism.PluginCtxKey("extism"), d.kernel)
	ctx = context.WithValue(ctx, extism.PluginCtxKey("plugin"), d.plugin)
	ctx = context.WithValue(ctx, extism.InputOffsetKey("inputOffset"), uint64(0))
	res, err := d.fn.Call(ctx)
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		if exit.ExitCode() == 0 {
			err = nil
		}
		if len(res) == 0 {
			res = []uint64{api.EncodeU32(exit.ExitCode())}
		}
	}
	var rc uint32
	switch {
	case len(res) > 0:
		rc = api.DecodeU32(res[0])
	case err != nil:
		rc = 1
	}
	if err != nil {
		return rc, nil, err
	}
	var guestErr error
	if msg := d.guestError(ctx); msg != "" {
		guestErr = errors.New(msg)
	}
	out, err := d.output(ctx)
	if err != nil {
		return rc, nil, errors.Join(guestErr, fmt.Errorf("failed to get output: %w", err))
	}
	return rc, out, guestErr
}

// guestError is the error the guest set through Extism, or "".
func (d *directCall) guestError(ctx context.Context) string {
	off, err := d.errGet.Call(ctx)
	if err != nil || off[0] == 0 {
		return ""
	}
	n, err := d.kernel.ExportedFunction("length").Call(ctx, off[0])
	if err != nil {
		return ""
	}
	b, _ := d.kernel.Memory().Read(uint32(off[0]), uint32(n[0]))
	return string(b)
}

// output returns a copy of the guest's Extism output (empty for a guest
// that answered on stdout).
func (d *directCall) output(ctx context.Context) ([]byte, error) {
	n, err := d.outLen.Call(ctx)
	if err != nil {
		return nil, err
	}
	if n[0] == 0 {
		return []byte{}, nil
	}
	off, err := d.kernel.ExportedFunction("output_offset").Call(ctx)
	if err != nil {
		return nil, err
	}
	b, ok := d.kernel.Memory().Read(uint32(off[0]), uint32(n[0]))
	if !ok {
		return nil, fmt.Errorf("output [%d, +%d) is outside the kernel's memory", off[0], n[0])
	}
	return append([]byte(nil), b...), nil
}

// call calls export with the given Extism input: directly when it can.
func (inst *instance) call(ctx context.Context, export string, input []byte) (uint32, []byte, error) {
	if inst.direct != nil && export == exportCallTool && len(input) == 0 {
		return inst.direct.call(ctx)
	}
	return inst.p.CallWithContext(ctx, export, input)
}
