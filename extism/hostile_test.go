package extism

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/extism/internal/fuel"
	"github.com/toolhost/toolhost/plugin"
)

// wantLimit checks err is LIMIT_EXCEEDED for limit.
func wantLimit(t *testing.T, err error, limit string) {
	t.Helper()
	var pe *plugin.Error
	if !errors.As(err, &pe) || pe.Code != plugin.CodeLimitExceeded || pe.Limit != limit {
		t.Fatalf("err = %v, want LIMIT_EXCEEDED (%s)", err, limit)
	}
	if !errors.Is(err, plugin.ErrLimitExceeded) {
		t.Errorf("errors.Is(err, ErrLimitExceeded) = false")
	}
}

func wantCode(t *testing.T, err error, code plugin.Code) {
	t.Helper()
	if got := plugin.CodeOf(err); got != code {
		t.Fatalf("code = %s (err %v), want %s", got, err, code)
	}
}

// stillServes checks that the adapter keeps serving: the same hostile tool
// gets a fresh instance (its next call starts from scratch), and a healthy
// tool of the same module answers.
func stillServes(t *testing.T, hostile plugin.Tool, spec *plugin.Spec, args any, again func(error)) {
	t.Helper()
	_, err := call(t, hostile, spec, args, nil)
	again(err)
	es := guestSpec("hostile", "state")
	res, err := call(t, load(t, es), &es, map[string]any{}, nil)
	if err != nil {
		t.Fatalf("healthy tool after hostile call: %v", err)
	}
	if n := structured(t, res)["calls"]; n != float64(1) {
		t.Fatalf("healthy tool saw state from an earlier call: calls = %v", n)
	}
}

func TestHostileGuests(t *testing.T) {
	// Limits other than the wall clock are tested with a generous timeout,
	// so that a loaded machine cannot turn them into timeouts.
	lim := plugin.Limits{Timeout: 30 * time.Second, Memory: 32 << 20, Output: 4 << 20, LogEntries: 100, VarSize: 64 << 10}
	cases := []struct {
		tool  string
		args  map[string]any
		check func(t *testing.T, err error)
	}{
		{"loop", nil, func(t *testing.T, err error) { wantLimit(t, err, "fuel") }},
		{"recurse", nil, func(t *testing.T, err error) {
			// Go guests grow their stack on the heap: the memory cap or
			// Go's own stack limit stops them.
			var pe *plugin.Error
			if !errors.As(err, &pe) || (pe.Code != plugin.CodeLimitExceeded && pe.Code != plugin.CodeToolExecutionFailed) {
				t.Fatalf("err = %v, want LIMIT_EXCEEDED or TOOL_EXECUTION_FAILED", err)
			}
		}},
		{"grow", nil, func(t *testing.T, err error) { wantLimit(t, err, "memory") }},
		{"bigout", nil, func(t *testing.T, err error) { wantLimit(t, err, "output") }},
		{"logspam", nil, func(t *testing.T, err error) { wantLimit(t, err, "log_entries") }},
		{"stderrspam", nil, func(t *testing.T, err error) { wantLimit(t, err, "log_entries") }},
		{"setvar", map[string]any{"n": 128 << 10}, func(t *testing.T, err error) { wantLimit(t, err, "var_size") }},
		{"panic", nil, func(t *testing.T, err error) {
			wantCode(t, err, plugin.CodeToolExecutionFailed)
			if !strings.Contains(err.Error(), "guest panic on purpose") {
				t.Errorf("error %q lacks the guest's stderr", err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.tool, func(t *testing.T) {
			sp := guestSpec("hostile", tc.tool)
			sp.Limits = lim
			if tc.tool == "loop" {
				sp.Limits.Timeout = 5 * time.Second // the default fuel (10^9) runs out first
			}
			tool := load(t, sp)
			start := time.Now()
			_, err := call(t, tool, &sp, tc.args, nil)
			tc.check(t, err)
			if d := time.Since(start); tc.tool == "loop" && d > sp.Limits.Timeout+5*time.Second {
				t.Errorf("contained after %s", d)
			}
			stillServes(t, tool, &sp, tc.args, func(err error) { tc.check(t, err) })
		})
	}
}

// TestSpinPastDeadline: with more fuel than the wall clock allows, the call
// returns TOOL_EXECUTION_TIMEOUT at its deadline, and the spinning guest
// stops soon after (its fuel is capped by the timeout), its instance closed.
func TestSpinPastDeadline(t *testing.T) {
	sp := guestSpec("hostile", "loop")
	sp.Limits = plugin.Limits{Timeout: 500 * time.Millisecond, Fuel: 1_000_000_000_000, Pool: -1}
	tool := load(t, sp)
	wt := tool.(*wasmTool)
	start := time.Now()
	_, err := call(t, tool, &sp, nil, nil)
	wantCode(t, err, plugin.CodeToolExecutionTimeout)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("timed-out call returned after %s", d)
	}
	deadline := time.Now().Add(30 * time.Second)
	for wt.live.Load() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("spinning guest still running %s after its deadline", time.Since(start))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("guest stopped %s after the call started", time.Since(start))
	es := guestSpec("hostile", "state")
	if _, err := call(t, load(t, es), &es, map[string]any{}, nil); err != nil {
		t.Fatalf("after the timeout: %v", err)
	}
}

// TestCallerGoroutineDeadline: a call whose fuel ends before its deadline
// runs on the caller's goroutine; a guest sleeping there still stops at the
// deadline, and promptly when the call is cancelled.
func TestCallerGoroutineDeadline(t *testing.T) {
	sp := guestSpec("fixtures", "sleep")
	sp.Limits = plugin.Limits{Timeout: time.Second, Fuel: 100_000_000}
	tool := load(t, sp)
	ctx, cancel := context.WithTimeout(context.Background(), sp.Limits.Timeout)
	defer cancel()
	if !fuelEndsFirst(ctx, fuel.NewMeter(int64(sp.Limits.Fuel))) {
		t.Fatal("the call would not run on the caller's goroutine: nothing to test")
	}
	args := json.RawMessage(`{"ms":60000}`)
	req := func() *plugin.Request {
		return &plugin.Request{ID: "test", Name: sp.Name, Arguments: args, Spec: &sp, Secrets: plugin.NewSecrets(nil), Log: hclog.NewNullLogger()}
	}
	start := time.Now()
	_, err := tool.Call(context.Background(), req())
	wantCode(t, err, plugin.CodeToolExecutionTimeout)
	if d := time.Since(start); d < sp.Limits.Timeout || d > sp.Limits.Timeout+2*time.Second {
		t.Errorf("a sleeping guest returned after %s, timeout %s", d, sp.Limits.Timeout)
	}

	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start = time.Now()
	_, err = tool.Call(ctx, req())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: err = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("a cancelled call returned after %s", d)
	}
}

func TestFuelEndsFirst(t *testing.T) {
	at := func(d time.Duration) context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		t.Cleanup(cancel)
		return ctx
	}
	cases := []struct {
		ctx    context.Context
		budget int64
		want   bool
	}{
		{context.Background(), 1, false}, // no deadline: never assumed
		{at(30 * time.Second), 1_000_000_000, true},
		{at(5 * time.Second), 1_000_000_000, true},
		{at(3 * time.Second), 1_000_000_000, false},
		{at(100 * time.Millisecond), 1_000_000_000, false},
		{at(100 * time.Millisecond), 10_000_000, true},
	}
	for i, c := range cases {
		if got := fuelEndsFirst(c.ctx, fuel.NewMeter(c.budget)); got != c.want {
			t.Errorf("case %d: fuelEndsFirst(budget %d) = %v, want %v", i, c.budget, got, c.want)
		}
	}
}

func TestGuestErrors(t *testing.T) {
	t.Run("tool error is a result", func(t *testing.T) {
		sp := guestSpec("hostile", "fail")
		res, err := call(t, load(t, sp), &sp, map[string]any{}, nil)
		if err != nil {
			t.Fatalf("err = %v, want an IsError result", err)
		}
		if !res.IsError || res.Code != plugin.CodeToolExecutionFailed || !strings.Contains(res.TextContent(), "failing on purpose") {
			t.Fatalf("result = %+v", res)
		}
	})
}

func TestFreshInstancePerCall(t *testing.T) {
	sp := guestSpec("hostile", "state")
	sp.Limits.Pool = 2
	tool := load(t, sp)
	for i := range 5 {
		res, err := call(t, tool, &sp, map[string]any{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := structured(t, res)["calls"]; n != float64(1) {
			t.Fatalf("call %d: calls = %v, want 1 (state leaked between calls)", i, n)
		}
	}
	t.Run("tmp is per call", func(t *testing.T) {
		wsp := guestSpec("hostile", "write")
		rsp := guestSpec("hostile", "read")
		w, r := load(t, wsp), load(t, rsp)
		res, err := call(t, w, &wsp, map[string]any{"path": "/tmp/left-behind", "data": "secret state"}, nil)
		if err != nil || structured(t, res)["ok"] != "written" {
			t.Fatalf("writing /tmp: %v %s", err, res.TextContent())
		}
		res, err = call(t, r, &rsp, map[string]any{"path": "/tmp/left-behind"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := structured(t, res)["error"]; !ok {
			t.Fatalf("a later call read the earlier call's /tmp file: %s", res.TextContent())
		}
	})
	t.Run("no environment", func(t *testing.T) {
		t.Setenv("TOOLHOST_TEST_SECRET_ENV", "must-not-leak")
		sp := guestSpec("hostile", "env")
		res, err := call(t, load(t, sp), &sp, map[string]any{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if env, _ := structured(t, res)["env"].([]any); len(env) > 0 {
			t.Fatalf("guest sees environment %v", env)
		}
	})
}
