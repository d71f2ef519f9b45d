package extism

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/plugin"
)

// newHost returns a plugin.Host with its own adapter (Host.Close closes
// it) over the package's compilation cache, granting what the specs below
// need.
func newHost(t *testing.T) *plugin.Host {
	t.Helper()
	a, err := New(Config{CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	h, err := plugin.NewHost(plugin.Options{
		Adapters: []plugin.Adapter{a},
		Grants:   plugin.Capabilities{Invoke: []string{"*"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func hostLoad(t *testing.T, h *plugin.Host, sp plugin.Spec) {
	t.Helper()
	sp.Source.Kind = Kind
	if err := h.Load(context.Background(), sp); err != nil {
		t.Fatal(err)
	}
}

func invoke(t *testing.T, h *plugin.Host, name string, args any) (*plugin.Result, error) {
	t.Helper()
	b, _ := json.Marshal(args)
	return h.Invoke(context.Background(), plugin.Call{Name: name, Arguments: b})
}

func TestPipeline(t *testing.T) {
	h := newHost(t)
	hostLoad(t, h, guestSpec("hostile", "typed"))
	hostLoad(t, h, guestSpec("fixtures", "echo"))
	inv := guestSpec("hostile", "invoke")
	inv.Capabilities.Invoke = []string{"echo", "invoke"}
	inv.Limits.ToolInvocations = 3
	hostLoad(t, h, inv)
	noInv := guestSpec("hostile", "invoke")
	noInv.Name = "lonely"
	noInv.Source.Tool = "invoke"
	hostLoad(t, h, noInv)

	t.Run("output breaking the output schema", func(t *testing.T) {
		if _, err := invoke(t, h, "typed", map[string]any{}); err != nil {
			t.Fatalf("valid output refused: %v", err)
		}
		_, err := invoke(t, h, "typed", map[string]any{"break": true})
		wantCode(t, err, plugin.CodeOutputInvalid)
		if _, err := invoke(t, h, "typed", map[string]any{}); err != nil {
			t.Fatalf("after invalid output: %v", err)
		}
	})
	t.Run("nested call through the host", func(t *testing.T) {
		res, err := invoke(t, h, "invoke", map[string]any{"name": "echo", "args": map[string]string{"text": "nested ✓"}})
		if err != nil {
			t.Fatal(err)
		}
		r, _ := structured(t, res)["result"].(map[string]any)
		if !strings.Contains(mustMarshal(t, r), "nested ✓") {
			t.Fatalf("nested result %v", structured(t, res))
		}
	})
	t.Run("callee policy applies", func(t *testing.T) {
		res, err := invoke(t, h, "invoke", map[string]any{"name": "echo", "args": map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		if e, _ := structured(t, res)["error"].(string); !strings.Contains(e, "INVALID_REQUEST") {
			t.Fatalf("nested call with bad arguments: %v", structured(t, res))
		}
	})
	t.Run("not allowed to invoke", func(t *testing.T) {
		for _, name := range []string{"lonely", "invoke"} {
			target := "typed"
			res, err := invoke(t, h, name, map[string]any{"name": target, "args": map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			if e, _ := structured(t, res)["error"].(string); !strings.Contains(e, "CAPABILITY_DENIED") {
				t.Fatalf("%s invoking %s: %v", name, target, structured(t, res))
			}
		}
	})
	t.Run("tool_invocations limit", func(t *testing.T) {
		_, err := invoke(t, h, "invoke", map[string]any{"name": "echo", "args": map[string]string{"text": "x"}, "count": 10})
		wantLimit(t, err, "tool_invocations")
	})
	t.Run("depth cap", func(t *testing.T) {
		// invoke → invoke → invoke ... stops at the host's depth cap.
		args := map[string]any{"name": "echo", "args": map[string]string{"text": "bottom"}}
		for range 8 {
			args = map[string]any{"name": "invoke", "args": args}
		}
		res, err := invoke(t, h, "invoke", args)
		if err != nil {
			t.Fatal(err)
		}
		if s := mustMarshal(t, structured(t, res)); !strings.Contains(s, "depth") && !strings.Contains(s, "LIMIT_EXCEEDED") {
			t.Fatalf("deep nesting was not capped: %s", s)
		}
	})
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestNestedCallDoesNotHoldALane: a guest that has computed long enough to
// need one of the adapter's lanes (docs/fuel.md) and then waits for a
// nested tool call gives its lane up; with a single lane, the nested guest
// would otherwise wait for it until its deadline.
func TestNestedCallDoesNotHoldALane(t *testing.T) {
	a, err := New(Config{CacheDir: cacheDir, LongCallLanes: 1})
	if err != nil {
		t.Fatal(err)
	}
	h, err := plugin.NewHost(plugin.Options{Adapters: []plugin.Adapter{a}, Grants: plugin.Capabilities{Invoke: []string{"*"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	inv := guestSpec("hostile", "invoke")
	inv.Capabilities.Invoke = []string{"loop"}
	inv.Limits = plugin.Limits{Timeout: 20 * time.Second}
	hostLoad(t, h, inv)
	loop := guestSpec("hostile", "loop")
	// Enough fuel for well over the lane threshold (10 ms), far less than
	// the timeout: the nested call must end by running out of fuel.
	loop.Limits = plugin.Limits{Timeout: 3 * time.Second, Fuel: 500_000_000}
	hostLoad(t, h, loop)
	res, err := invoke(t, h, "invoke", map[string]any{"name": "loop", "args": map[string]any{}, "burn": 20_000_000})
	if err != nil {
		t.Fatal(err)
	}
	got := mustMarshal(t, structured(t, res))
	if !strings.Contains(got, "LIMIT_EXCEEDED") || strings.Contains(got, "TOOL_EXECUTION_TIMEOUT") {
		t.Fatalf("nested call: %s, want LIMIT_EXCEEDED (fuel)", got)
	}
}
