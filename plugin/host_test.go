package plugin_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/toolhost/toolhost/plugin"
)

// closingTool records Close calls.
type closingTool struct {
	plugin.Tool
	mu     sync.Mutex
	closed int
	err    error
}

func (c *closingTool) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed++
	return c.err
}

func (c *closingTool) closes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// flakyTool is a tool whose backend can be down.
type flakyTool struct {
	plugin.Tool
	mu   sync.Mutex
	down string
}

func (f *flakyTool) Available() (bool, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.down == "", f.down
}

func (f *flakyTool) set(down string) {
	f.mu.Lock()
	f.down = down
	f.mu.Unlock()
}

// recordingAdapter is an Adapter over plugin.InProcess that counts Close.
type recordingAdapter struct {
	*plugin.InProcess
	kind   string
	closed int
	err    error
}

func (a *recordingAdapter) Kind() string { return a.kind }
func (a *recordingAdapter) Close() error {
	a.closed++
	return a.err
}

func TestHostLoad(t *testing.T) {
	inproc := plugin.NewInProcess()
	echo := &closingTool{Tool: echoArgs()}
	if err := inproc.Add("echo", echo); err != nil {
		t.Fatal(err)
	}
	if err := inproc.Add("echo", echoArgs()); err == nil {
		t.Error("adding a name twice succeeded")
	}
	refused := &closingTool{Tool: echoArgs()}
	inproc.Add("greedy", refused)
	adapter := &recordingAdapter{InProcess: inproc, kind: "go"}
	h := newHost(t, plugin.Options{Adapters: []plugin.Adapter{adapter}})
	ctx := context.Background()

	if err := h.Load(ctx, plugin.Spec{Name: "echo", Source: plugin.Source{Kind: "go"}, Tier: plugin.TierReadOnly}); err != nil {
		t.Fatal(err)
	}
	if err := h.Load(ctx, plugin.Spec{Name: "echo2", Source: plugin.Source{Kind: "go", Tool: "echo"}}); err != nil {
		t.Fatalf("loading by Source.Tool: %v", err)
	}
	res, err := invoke(t, h, call("echo2", `{"x":1}`))
	wantOK(t, res, err, `{"x":1}`)

	tests := []struct {
		name   string
		spec   plugin.Spec
		phrase string
	}{
		{"unknown kind", plugin.Spec{Name: "w", Source: plugin.Source{Kind: "wasm"}}, `no adapter for source kind "wasm"`},
		{"adapter refuses", plugin.Spec{Name: "nope", Source: plugin.Source{Kind: "go"}}, `no in-process tool "nope"`},
		{"bad name", plugin.Spec{Name: "a b", Source: plugin.Source{Kind: "go", Tool: "echo"}}, "tool name"},
		{"capability", plugin.Spec{Name: "greedy", Source: plugin.Source{Kind: "go"}, Capabilities: plugin.Capabilities{Subprocess: true}}, "CAPABILITY_DENIED"},
		{"twice", plugin.Spec{Name: "echo", Source: plugin.Source{Kind: "go"}}, "registered twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := h.Load(ctx, tc.spec)
			if err == nil || !strings.Contains(err.Error(), tc.phrase) {
				t.Fatalf("Load: %v; want an error containing %q", err, tc.phrase)
			}
		})
	}
	if refused.closes() != 0 {
		t.Error("a tool refused before loading was closed")
	}
	if n := echo.closes(); n != 0 {
		// "twice": the adapter handed out the tool registered as "echo"
		// and "echo2"; refusing the duplicate must not close it.
		t.Errorf("a registered tool was closed %d times when a duplicate was refused", n)
	}
	res, err = invoke(t, h, call("echo", `{}`))
	wantOK(t, res, err, "{}")
	if len(h.Tools()) != 2 {
		t.Errorf("%d tools listed, want 2", len(h.Tools()))
	}

	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if n := echo.closes(); n != 1 {
		t.Errorf("a tool registered under two names was closed %d times, want once", n)
	}
	if adapter.closed != 1 {
		t.Errorf("adapter closed %d times", adapter.closed)
	}
	if err := h.Close(); err != nil || adapter.closed != 1 {
		t.Errorf("second Close: %v, adapter closed %d times", err, adapter.closed)
	}
}

func TestHostOptions(t *testing.T) {
	a := &recordingAdapter{InProcess: plugin.NewInProcess(), kind: "go"}
	b := &recordingAdapter{InProcess: plugin.NewInProcess(), kind: "go"}
	if _, err := plugin.NewHost(plugin.Options{Adapters: []plugin.Adapter{a, b}}); err == nil || !strings.Contains(err.Error(), `two adapters of kind "go"`) {
		t.Errorf("NewHost with two adapters of one kind: %v", err)
	}
}

func TestHostCloseErrors(t *testing.T) {
	boom := errors.New("boom")
	adapter := &recordingAdapter{InProcess: plugin.NewInProcess(), kind: "x", err: errors.New("adapter boom")}
	h, err := plugin.NewHost(plugin.Options{Adapters: []plugin.Adapter{adapter}})
	if err != nil {
		t.Fatal(err)
	}
	mustRegister(t, h, plugin.Spec{Name: "a"}, &closingTool{Tool: echoArgs(), err: boom})
	mustRegister(t, h, plugin.Spec{Name: "b"}, echoArgs())
	err = h.Close()
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), `tool "a"`) || !strings.Contains(err.Error(), `adapter "x": adapter boom`) {
		t.Errorf("Close = %v", err)
	}
}

func TestAvailability(t *testing.T) {
	tool := &flakyTool{Tool: echoArgs()}
	h := newHost(t, plugin.Options{})
	mustRegister(t, h, plugin.Spec{Name: "remote", Tier: plugin.TierReadOnly}, tool)

	res, err := invoke(t, h, call("remote", `{}`))
	wantOK(t, res, err, "{}")
	if info, _ := h.Tool("remote"); !info.Available {
		t.Error("listed unavailable")
	}

	tool.set("server unreachable: connection refused")
	res, err = invoke(t, h, call("remote", `{}`))
	wantErr(t, res, err, plugin.CodeToolUnavailable, "", `tool "remote" is unavailable: server unreachable`)
	info, ok := h.Tool("remote")
	if !ok || info.Available || info.Unavailable != "server unreachable: connection refused" {
		t.Errorf("listing = %+v", info)
	}

	tool.set("")
	res, err = invoke(t, h, call("remote", `{}`))
	wantOK(t, res, err, "{}")
}

// causedTool is a flakyTool whose unavailability has a cause.
type causedTool struct {
	*flakyTool
	cause error
}

func (c *causedTool) AvailableCause() (bool, string, error) {
	ok, why := c.Available()
	if ok {
		return true, "", nil
	}
	return false, why, c.cause
}

// A tool's unavailability cause is wrapped by the TOOL_UNAVAILABLE error,
// for errors.Is and errors.As (an embedder tells "needs a login" apart).
func TestUnavailableCause(t *testing.T) {
	errLogin := errors.New("needs a login")
	tool := &causedTool{flakyTool: &flakyTool{Tool: echoArgs()}, cause: errLogin}
	h := newHost(t, plugin.Options{})
	mustRegister(t, h, plugin.Spec{Name: "remote", Tier: plugin.TierReadOnly}, tool)
	tool.set("MCP server needs a login")
	_, err := invoke(t, h, call("remote", `{}`))
	if !errors.Is(err, errLogin) || !errors.Is(err, plugin.ErrToolUnavailable) {
		t.Errorf("err = %v: want TOOL_UNAVAILABLE wrapping its cause", err)
	}
}

// freshAdapter loads a new tool for every spec, as the wasm and subprocess
// adapters do.
type freshAdapter struct {
	mu     sync.Mutex
	loaded []*closingTool
}

func (a *freshAdapter) Kind() string { return "fresh" }
func (a *freshAdapter) Close() error { return nil }
func (a *freshAdapter) Load(context.Context, *plugin.Spec) (plugin.Tool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := &closingTool{Tool: echoArgs()}
	a.loaded = append(a.loaded, t)
	return t, nil
}

func TestHostLoadReleasesRefusedTools(t *testing.T) {
	a := &freshAdapter{}
	h := newHost(t, plugin.Options{Adapters: []plugin.Adapter{a}})
	ctx := context.Background()
	if err := h.Load(ctx, plugin.Spec{Name: "x", Source: plugin.Source{Kind: "fresh"}}); err != nil {
		t.Fatal(err)
	}
	if err := h.Load(ctx, plugin.Spec{Name: "x", Source: plugin.Source{Kind: "fresh"}}); err == nil {
		t.Fatal("duplicate loaded")
	}
	if len(a.loaded) != 2 || a.loaded[0].closes() != 0 || a.loaded[1].closes() != 1 {
		t.Fatalf("after a refused load: %d loaded, closes %d and %d; want the refused one closed", len(a.loaded), a.loaded[0].closes(), a.loaded[1].closes())
	}
	h.Close()
	if a.loaded[0].closes() != 1 {
		t.Errorf("registered tool closed %d times by Host.Close", a.loaded[0].closes())
	}
}

// valueTool is a tool of a type that cannot be compared (it holds a slice),
// used by value.
type valueTool struct {
	plugin.Tool
	tags []string
}

func TestHostCloseWithIncomparableTools(t *testing.T) {
	h := newHost(t, plugin.Options{})
	mustRegister(t, h, plugin.Spec{Name: "a"}, valueTool{Tool: echoArgs(), tags: []string{"x"}})
	mustRegister(t, h, plugin.Spec{Name: "b"}, valueTool{Tool: echoArgs()})
	if err := h.Register(plugin.Spec{Name: "a"}, valueTool{Tool: echoArgs()}); err == nil {
		t.Fatal("duplicate registered")
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestPolicyIsCopied: the host keeps its own copy of a tool's policy, so
// neither the Spec a caller registered nor a listing it was given can
// change what a registered tool may do.
func TestPolicyIsCopied(t *testing.T) {
	h := newHost(t, plugin.Options{Grants: plugin.Capabilities{Invoke: []string{"*"}}})
	mustRegister(t, h, plugin.Spec{Name: "echo"}, echoArgs())
	mustRegister(t, h, plugin.Spec{Name: "admin"}, echoArgs())
	spec := plugin.Spec{Name: "caller", Capabilities: plugin.Capabilities{Invoke: []string{"echo"}}}
	mustRegister(t, h, spec, fn(`{"type":"object","properties":{"to":{"type":"string"}}}`, func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
		var in struct{ To string }
		req.DecodeArguments(&in)
		_, err := req.Invoker.Invoke(ctx, plugin.Call{Name: in.To})
		return textResult("called"), err
	}))

	spec.Capabilities.Invoke[0] = "admin" // the caller's slice
	info, _ := h.Tool("caller")
	info.Capabilities.Invoke[0] = "admin" // the listing's slice

	res, err := invoke(t, h, call("caller", `{"to":"admin"}`))
	wantErr(t, res, err, plugin.CodeCapabilityDenied, "", `may not invoke "admin"`)
	res, err = invoke(t, h, call("caller", `{"to":"echo"}`))
	wantOK(t, res, err, "called")
	if info, _ := h.Tool("caller"); info.Capabilities.Invoke[0] != "echo" {
		t.Errorf("listing shows invoke %v", info.Capabilities.Invoke)
	}
}
