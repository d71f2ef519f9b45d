package extism

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/extism/internal/fuel"
	"github.com/toolhost/toolhost/plugin"
)

// TestDirectCall: a fast-I/O guest's instances are prepared for the direct
// call, and it answers every kind of call as go-sdk's CallWithContext does:
// output on stdout, output in Extism memory, a tool error, an Extism error,
// and a guest that panics (a Go guest's panic exits with code 2).
func TestDirectCall(t *testing.T) {
	sp := guestSpec("hostile", "echo")
	wt := load(t, sp).(*wasmTool)
	if !wt.direct() {
		t.Fatal("the hostile guest is not a fast-I/O guest")
	}
	if err := wt.ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, stdin string }{
		{"stdout", `{"params":{"name":"echo","arguments":{"text":"hi"}}}`},
		{"extism output", `{"params":{"name":"extismout","arguments":{}}}`},
		{"tool error", `{"params":{"name":"fail","arguments":{}}}`},
		{"extism error", `{"params":{"name":"no-such-tool","arguments":{}}}`},
		{"bad input", `not json`},
		{"panic", `{"params":{"name":"panic","arguments":{}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			direct := callOnce(t, wt, &sp, tc.stdin, true)
			viaSDK := callOnce(t, wt, &sp, tc.stdin, false)
			t.Log(direct)
			if direct != viaSDK {
				t.Errorf("the direct call answered\n%s\ngo-sdk answered\n%s", direct, viaSDK)
			}
		})
	}
}

// callOnce calls call_tool in a fresh instance with stdin as its input,
// directly or through go-sdk, and describes what came back.
func callOnce(t *testing.T, wt *wasmTool, sp *plugin.Spec, stdin string, direct bool) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	inst, err := wt.newInstance(ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	defer inst.close()
	inst.prepareDirect(ctx)
	if inst.direct == nil {
		t.Fatal("the instance has no direct call")
	}
	if !direct {
		inst.direct = nil
	}
	req := &plugin.Request{Name: sp.Name, Spec: sp, Secrets: plugin.NewSecrets(nil), Log: hclog.NewNullLogger()}
	inst.begin(ctx, req, sp, wt.limits, cancel)
	inst.stdin.Reset([]byte(stdin))
	gctx := fuel.WithMeter(context.WithValue(ctx, instKey{}, inst), fuel.NewMeter(fuel.DefaultBudget))
	rc, out, err := inst.call(gctx, exportCallTool, nil)
	return fmt.Sprintf("rc %d, output %q, error %v, stdout %q", rc, out, err, inst.stdout.buf.String())
}

// TestExtismOutputFirst: a guest that answers in its Extism output is
// taken at its word there, whatever it also wrote on stdout (docs/wasm.md:
// stdout counts only when the Extism output is empty), on the direct call
// as through go-sdk.
func TestExtismOutputFirst(t *testing.T) {
	sp := guestSpec("hostile", "extismout")
	res, err := call(t, load(t, sp), &sp, map[string]any{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 || res.Content[0].Text != "from the Extism output" {
		t.Errorf("content = %+v, want the Extism output's text", res.Content)
	}
}
