package plugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/plugin"
)

// newHost returns a host closed when the test ends.
func newHost(t testing.TB, opts plugin.Options) *plugin.Host {
	t.Helper()
	h, err := plugin.NewHost(opts)
	if err != nil {
		t.Fatalf("NewHost: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// mustRegister registers tool under spec or fails the test.
func mustRegister(t testing.TB, h *plugin.Host, spec plugin.Spec, tool plugin.Tool) {
	t.Helper()
	if err := h.Register(spec, tool); err != nil {
		t.Fatalf("Register(%q): %v", spec.Name, err)
	}
}

// fn is a plugin.Func with a given input schema.
func fn(schema string, f func(ctx context.Context, req *plugin.Request) (*plugin.Result, error)) plugin.Tool {
	return plugin.Func(plugin.Descriptor{Name: "t", Description: "test tool", InputSchema: json.RawMessage(schema)}, f)
}

// textResult returns a successful result with one text item.
func textResult(s string) *plugin.Result {
	return &plugin.Result{Content: []plugin.Content{plugin.Text(s)}}
}

// echoArgs is a tool that answers with the arguments it received.
func echoArgs() plugin.Tool {
	return fn(`{"type":"object"}`, func(_ context.Context, req *plugin.Request) (*plugin.Result, error) {
		return textResult(string(req.Arguments)), nil
	})
}

// invoke calls h.Invoke and checks the pipeline's own invariants: a result
// is always returned, IsError agrees with err, Code agrees with CodeOf(err),
// and Meta names the call.
func invoke(t testing.TB, h *plugin.Host, call plugin.Call) (*plugin.Result, error) {
	t.Helper()
	return invokeCtx(t, context.Background(), h, call)
}

func invokeCtx(t testing.TB, ctx context.Context, h *plugin.Host, call plugin.Call) (*plugin.Result, error) {
	t.Helper()
	res, err := h.Invoke(ctx, call)
	checkResult(t, call, res, err)
	return res, err
}

func checkResult(t testing.TB, call plugin.Call, res *plugin.Result, err error) {
	t.Helper()
	if res == nil {
		t.Fatalf("Invoke(%q) returned a nil Result (err %v)", call.Name, err)
	}
	if (err != nil) != res.IsError {
		t.Fatalf("Invoke(%q): err = %v, Result.IsError = %v", call.Name, err, res.IsError)
	}
	if got := plugin.CodeOf(err); got != res.Code {
		t.Fatalf("Invoke(%q): CodeOf(err) = %q, Result.Code = %q", call.Name, got, res.Code)
	}
	if err != nil {
		var pe *plugin.Error
		if !errors.As(err, &pe) {
			t.Fatalf("Invoke(%q): error %T is not a *plugin.Error", call.Name, err)
		}
		if res.Limit != pe.Limit {
			t.Fatalf("Invoke(%q): Result.Limit = %q, Error.Limit = %q", call.Name, res.Limit, pe.Limit)
		}
		if res.TextContent() != err.Error() {
			t.Fatalf("Invoke(%q): error result text %q, error %q", call.Name, res.TextContent(), err)
		}
	}
	if res.Meta == nil || res.Meta.Tool != call.Name || res.Meta.CallID == "" || (call.ID != "" && res.Meta.CallID != call.ID) {
		t.Fatalf("Invoke(%q): Meta = %+v", call.Name, res.Meta)
	}
}

// wantErr checks that err carries code (and limit, when not empty) and that
// its message contains every fragment.
func wantErr(t testing.TB, res *plugin.Result, err error, code plugin.Code, limit string, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got success %q, want %s", res.TextContent(), code)
	}
	if res.Code != code {
		t.Fatalf("code = %s, want %s (%v)", res.Code, code, err)
	}
	if limit != "" && res.Limit != limit {
		t.Errorf("limit = %q, want %q", res.Limit, limit)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not contain %q", err, f)
		}
	}
}

func wantOK(t testing.TB, res *plugin.Result, err error, text string) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	if got := res.TextContent(); got != text {
		t.Fatalf("text = %s, want %s", abbrev(got), abbrev(text))
	}
}

func call(name, args string) plugin.Call {
	return plugin.Call{Name: name, Arguments: json.RawMessage(args)}
}

// abbrev quotes s, eliding the middle of long strings.
func abbrev(s string) string {
	if len(s) <= 100 {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q...%q (%d bytes)", s[:60], s[len(s)-30:], len(s))
}
