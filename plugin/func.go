package plugin

import (
	"context"
	"fmt"
	"sync"
)

// Func returns an in-process tool: desc describes it and fn runs it. It is
// how a host application offers its own Go code as a tool; the call still
// goes through the whole pipeline (policy, validation, limits, truncation,
// audit). fn must honour ctx.
func Func(desc Descriptor, fn func(ctx context.Context, req *Request) (*Result, error)) Tool {
	return &funcTool{desc: desc, fn: fn}
}

type funcTool struct {
	desc Descriptor
	fn   func(context.Context, *Request) (*Result, error)
}

var _ Tool = (*funcTool)(nil)

func (f *funcTool) Descriptor() Descriptor { return f.desc }

func (f *funcTool) Call(ctx context.Context, req *Request) (*Result, error) {
	return f.fn(ctx, req)
}

// InProcess is the adapter of kind "go": it serves tools the host
// application registered in Go, so that a configuration file can give them
// a policy (tier, limits, capabilities) like any other tool. A spec selects
// a registered tool by Source.Tool, or else by its own name.
type InProcess struct {
	mu    sync.RWMutex
	tools map[string]Tool
}

var _ Adapter = (*InProcess)(nil)

// NewInProcess returns an empty in-process adapter.
func NewInProcess() *InProcess { return &InProcess{tools: map[string]Tool{}} }

// Add makes t loadable under name. Adding a name twice is an error.
func (p *InProcess) Add(name string, t Tool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, dup := p.tools[name]; dup {
		return fmt.Errorf("in-process tool %q added twice", name)
	}
	p.tools[name] = t
	return nil
}

// Kind implements Adapter.
func (p *InProcess) Kind() string { return "go" }

// Load implements Adapter.
func (p *InProcess) Load(_ context.Context, spec *Spec) (Tool, error) {
	name := spec.Source.Tool
	if name == "" {
		name = spec.Name
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	t, ok := p.tools[name]
	if !ok {
		return nil, fmt.Errorf("no in-process tool %q is registered by the host application", name)
	}
	return t, nil
}

// Close implements Adapter.
func (p *InProcess) Close() error { return nil }
