package plugin_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/toolhost/toolhost/plugin"
)

// The benchmarks measure the pipeline's own overhead: the tool does
// nothing, so BenchmarkInvoke minus BenchmarkRawCall is what every call
// pays for lookup, policy, validation, the deadline, output checks,
// truncation and audit. Compare runs with benchstat:
//
//	go test -run='^$' -bench=. -benchmem -count=10 ./plugin > new.txt

const benchSchema = `{"type":"object","properties":{"text":{"type":"string"},"n":{"type":"integer"}},"required":["text"]}`

var benchArgs = json.RawMessage(`{"text":"hello","n":3}`)

func noopTool() plugin.Tool {
	res := &plugin.Result{Content: []plugin.Content{plugin.Text("ok")}}
	return fn(benchSchema, func(context.Context, *plugin.Request) (*plugin.Result, error) {
		return res, nil
	})
}

func benchHost(b *testing.B, opts plugin.Options) *plugin.Host {
	h := newHost(b, opts)
	mustRegister(b, h, plugin.Spec{Name: "noop", Tier: plugin.TierReadOnly}, noopTool())
	return h
}

// BenchmarkInvoke is one call through the whole pipeline.
func BenchmarkInvoke(b *testing.B) {
	h := benchHost(b, plugin.Options{})
	ctx := context.Background()
	c := plugin.Call{Name: "noop", Arguments: benchArgs}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Invoke(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInvokeParallel is BenchmarkInvoke from GOMAXPROCS goroutines,
// to show contention in the host (the registry lock, the audit log).
func BenchmarkInvokeParallel(b *testing.B) {
	h := benchHost(b, plugin.Options{Auditor: plugin.NewAuditLog(discard{})})
	ctx := context.Background()
	c := plugin.Call{Name: "noop", Arguments: benchArgs}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := h.Invoke(ctx, c); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkInvokeAudited adds a JSON-lines audit log (to a discarding
// writer), as a configured host has.
func BenchmarkInvokeAudited(b *testing.B) {
	h := benchHost(b, plugin.Options{Auditor: plugin.NewAuditLog(discard{})})
	ctx := context.Background()
	c := plugin.Call{Name: "noop", Arguments: benchArgs}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Invoke(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInvokeTrivialSchema is BenchmarkInvoke with an input schema
// that only asks for an object: the pipeline without the cost of
// validating fields.
func BenchmarkInvokeTrivialSchema(b *testing.B) {
	h := newHost(b, plugin.Options{})
	res := &plugin.Result{Content: []plugin.Content{plugin.Text("ok")}}
	mustRegister(b, h, plugin.Spec{Name: "noop", Tier: plugin.TierReadOnly}, fn(`{"type":"object"}`, func(context.Context, *plugin.Request) (*plugin.Result, error) {
		return res, nil
	}))
	ctx := context.Background()
	c := plugin.Call{Name: "noop", Arguments: benchArgs}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Invoke(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidateArguments is the input validation alone (decode and
// validate against benchSchema), the largest part of BenchmarkInvoke.
func BenchmarkValidateArguments(b *testing.B) {
	s, err := plugin.CompileSchema(json.RawMessage(benchSchema))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.ValidateJSON(benchArgs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawCall is the baseline: the same tool's Call, directly, with a
// ready Request. BenchmarkInvoke / BenchmarkRawCall is the pipeline's cost
// relative to the call it wraps.
func BenchmarkRawCall(b *testing.B) {
	tool := noopTool()
	ctx := context.Background()
	req := &plugin.Request{ID: "call_1", Name: "noop", Arguments: benchArgs, Secrets: plugin.NewSecrets(nil)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tool.Call(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
