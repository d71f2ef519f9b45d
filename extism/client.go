package extism

import (
	"context"
	"encoding/json"

	extism "github.com/extism/go-sdk"

	"github.com/toolhost/toolhost/plugin"
)

// A guest asks its caller's client — through the call's plugin.Client,
// which checks the tool's grant, bounds, redacts and audits — for a
// completion from the client's LLM or its user's input. The request and
// the answer are JSON in Extism memory, like toolhost_http_request's.

// Host function names.
const (
	hostSample = "toolhost_sample"
	hostElicit = "toolhost_elicit"
)

// maxClientInput bounds the JSON a guest may pass: the pipeline's cap on a
// request, with room for the JSON around it. A larger block is refused
// before it is read.
const maxClientInput = plugin.MaxClientMessage + 64<<10

func clientFunctions() []extism.HostFunction {
	i64 := []extism.ValueType{extism.ValueTypeI64}
	return []extism.HostFunction{
		extism.NewHostFunctionWithStack(hostSample, clientHostFunc(func(ctx context.Context, c plugin.Client, in *plugin.SampleRequest) (any, error) {
			return c.Sample(ctx, in)
		}), i64, i64),
		extism.NewHostFunctionWithStack(hostElicit, clientHostFunc(func(ctx context.Context, c plugin.Client, in *plugin.ElicitRequest) (any, error) {
			return c.Elicit(ctx, in)
		}), i64, i64),
	}
}

// clientHostFunc adapts a request to the call's client to a host function
// (offset: i64) -> i64: the offset of an Extism memory block holding the
// request's JSON in, the offset of a block holding a clientResponse out (0
// only when the guest has no memory left for it). Every failure is an
// answer for the guest, never a trap.
func clientHostFunc[In any](ask func(ctx context.Context, c plugin.Client, in *In) (any, error)) extism.HostFunctionStackCallback {
	return func(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
		inst := instanceFrom(ctx)
		b := clientCall(ctx, inst, p, stack[0], ask)
		off, err := p.WriteBytes(b)
		if err != nil {
			off = 0 // no room left: the memory limit stops the call
		}
		stack[0] = off
	}
}

// clientCall returns the JSON answer (plugin.ClientAnswer) to the request
// at offset.
func clientCall[In any](ctx context.Context, inst *instance, p *extism.CurrentPlugin, offset uint64, ask func(ctx context.Context, c plugin.Client, in *In) (any, error)) []byte {
	refuse := func(code plugin.Code, format string, args ...any) []byte {
		b, _ := plugin.ClientAnswer(nil, plugin.Errorf(code, format, args...))
		return b
	}
	if inst == nil || inst.req == nil {
		return refuse(plugin.CodeCapabilityDenied, "the caller's client can only be asked during a call")
	}
	if inst.req.Client == nil {
		// A Request built outside the pipeline, which gives every call one.
		return refuse(plugin.CodeCapabilityDenied, "this call has no client to ask")
	}
	inst.stopIfOver()
	n, err := p.Length(offset)
	if err != nil || n == 0 {
		return refuse(plugin.CodeInvalidRequest, "the request is not an Extism memory block")
	}
	if n > maxClientInput {
		return refuse(plugin.CodeInvalidRequest, "the request is %s; at most %s may go to the client", plugin.FormatSize(int64(n)), plugin.FormatSize(plugin.MaxClientMessage))
	}
	raw, err := p.ReadBytes(offset)
	if err != nil {
		return refuse(plugin.CodeInvalidRequest, "reading the request: %v", err)
	}
	_ = p.Free(offset)
	in := new(In)
	if err := json.Unmarshal(raw, in); err != nil {
		return refuse(plugin.CodeInvalidRequest, "malformed request: %v", err)
	}
	inst.meter.Pause() // a guest waiting for the client (or a person) needs no lane
	res, err := ask(ctx, inst.req.Client, in)
	b, stop := plugin.ClientAnswer(res, err)
	if stop != nil {
		inst.abort(stop) // like every other per-call counter: the call stops
	}
	return b
}
