package plugin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolhost/toolhost/plugin"
)

func TestApproval(t *testing.T) {
	type approverKind int
	const (
		none approverKind = iota
		yes
		no
		cannotAsk
		broken
	)
	tests := []struct {
		name     string
		tier     plugin.Tier
		approval plugin.Approval
		approver approverKind
		asked    bool        // whether the approver must be asked
		code     plugin.Code // "" when the tool runs
		phrase   string
	}{
		{"privileged without approver", plugin.TierPrivileged, plugin.ApprovalDefault, none, false, plugin.CodeApprovalRequired, "needs approval and no approver is configured"},
		{"privileged denied", plugin.TierPrivileged, plugin.ApprovalDefault, no, true, plugin.CodeApprovalDenied, `the call to "tool" was not approved`},
		{"privileged approved", plugin.TierPrivileged, plugin.ApprovalDefault, yes, true, "", ""},
		{"privileged, approver cannot ask", plugin.TierPrivileged, plugin.ApprovalDefault, cannotAsk, true, plugin.CodeApprovalRequired, "no way to ask for approval"},
		{"privileged, approver fails", plugin.TierPrivileged, plugin.ApprovalDefault, broken, true, plugin.CodeApprovalRequired, "asking failed: terminal went away"},
		{"side effecting runs unasked", plugin.TierSideEffecting, plugin.ApprovalDefault, no, false, "", ""},
		{"read only runs unasked", plugin.TierReadOnly, plugin.ApprovalDefault, no, false, "", ""},
		{"always, read only, no approver", plugin.TierReadOnly, plugin.ApprovalAlways, none, false, plugin.CodeApprovalRequired, "needs approval"},
		{"always, read only, denied", plugin.TierReadOnly, plugin.ApprovalAlways, no, true, plugin.CodeApprovalDenied, ""},
		{"always, side effecting, approved", plugin.TierSideEffecting, plugin.ApprovalAlways, yes, true, "", ""},
		{"never, privileged, no approver", plugin.TierPrivileged, plugin.ApprovalNever, none, false, "", ""},
		{"never, privileged, approver not asked", plugin.TierPrivileged, plugin.ApprovalNever, no, false, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var asked []plugin.ApprovalRequest
			var approver plugin.Approver
			decide := func(ok bool, err error) plugin.Approver {
				return plugin.ApproverFunc(func(ctx context.Context, r plugin.ApprovalRequest) (bool, error) {
					asked = append(asked, r)
					return ok, err
				})
			}
			switch tc.approver {
			case yes:
				approver = decide(true, nil)
			case no:
				approver = decide(false, nil)
			case cannotAsk:
				approver = decide(true, fmt.Errorf("stdin is not a terminal: %w", plugin.ErrCannotAsk))
			case broken:
				approver = decide(true, errors.New("terminal went away"))
			}
			var ran atomic.Int64
			h := newHost(t, plugin.Options{Approver: approver})
			mustRegister(t, h, plugin.Spec{Name: "tool", Tier: tc.tier, Approval: tc.approval, Description: "deletes things"},
				fn(`{"type":"object"}`, func(context.Context, *plugin.Request) (*plugin.Result, error) {
					ran.Add(1)
					return textResult("done"), nil
				}))
			res, err := invoke(t, h, plugin.Call{ID: "call_1", Name: "tool", Arguments: json.RawMessage(`{"path": "/tmp/x"}`)})
			if tc.code == "" {
				wantOK(t, res, err, "done")
			} else {
				wantErr(t, res, err, tc.code, "", tc.phrase)
				if ran.Load() != 0 {
					t.Error("the tool ran without approval")
				}
			}
			if got := len(asked) > 0; got != tc.asked {
				t.Fatalf("approver asked = %v, want %v", got, tc.asked)
			}
			if tc.asked {
				want := plugin.ApprovalRequest{CallID: "call_1", Tool: "tool", Description: "deletes things", Tier: tc.tier, Arguments: json.RawMessage(`{"path": "/tmp/x"}`)}
				got := asked[0]
				if got.CallID != want.CallID || got.Tool != want.Tool || got.Description != want.Description || got.Tier != want.Tier || string(got.Arguments) != string(want.Arguments) {
					t.Errorf("approver was shown %+v, want %+v", got, want)
				}
			}
		})
	}
	t.Run("malformed arguments are refused before asking", func(t *testing.T) {
		var asked atomic.Int64
		h := newHost(t, plugin.Options{Approver: plugin.ApproverFunc(func(context.Context, plugin.ApprovalRequest) (bool, error) {
			asked.Add(1)
			return true, nil
		})})
		mustRegister(t, h, plugin.Spec{Name: "tool", Tier: plugin.TierPrivileged}, echoArgs())
		res, err := invoke(t, h, call("tool", `[`))
		wantErr(t, res, err, plugin.CodeInvalidRequest, "")
		if asked.Load() != 0 {
			t.Error("the approver was asked about malformed arguments")
		}
	})
	t.Run("approver sees the caller's context", func(t *testing.T) {
		type key struct{}
		var got any
		h := newHost(t, plugin.Options{Approver: plugin.ApproverFunc(func(ctx context.Context, _ plugin.ApprovalRequest) (bool, error) {
			got = ctx.Value(key{})
			return true, nil
		})})
		mustRegister(t, h, plugin.Spec{Name: "tool", Tier: plugin.TierPrivileged}, echoArgs())
		res, err := invokeCtx(t, context.WithValue(context.Background(), key{}, "session-7"), h, call("tool", `{}`))
		wantOK(t, res, err, "{}")
		if got != "session-7" {
			t.Errorf("approver context value = %v", got)
		}
	})
	t.Run("ApproveAll", func(t *testing.T) {
		h := newHost(t, plugin.Options{Approver: plugin.ApproveAll})
		mustRegister(t, h, plugin.Spec{Name: "tool", Tier: plugin.TierPrivileged}, echoArgs())
		res, err := invoke(t, h, call("tool", `{}`))
		wantOK(t, res, err, "{}")
	})
}

func TestDeadline(t *testing.T) {
	const timeout = 50 * time.Millisecond
	// The bound on how late a timed-out call may return: a containment
	// check, generous for a loaded machine, not a performance test.
	const late = 2 * time.Second

	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	tests := []struct {
		name string
		tool func(ctx context.Context, req *plugin.Request) (*plugin.Result, error)
	}{
		{"ignores ctx", func(context.Context, *plugin.Request) (*plugin.Result, error) {
			<-release // blocks past the deadline whatever ctx says
			return textResult("too late"), nil
		}},
		{"honours ctx", func(ctx context.Context, _ *plugin.Request) (*plugin.Result, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}},
		{"wraps ctx error", func(ctx context.Context, _ *plugin.Request) (*plugin.Result, error) {
			<-ctx.Done()
			return nil, fmt.Errorf("reading from the plugin: %w", ctx.Err())
		}},
		{"returns FAILED after deadline", func(ctx context.Context, _ *plugin.Request) (*plugin.Result, error) {
			<-ctx.Done()
			return nil, plugin.Errorf(plugin.CodeToolExecutionFailed, "instance closed")
		}},
		{"returns UNAVAILABLE after deadline", func(ctx context.Context, _ *plugin.Request) (*plugin.Result, error) {
			<-ctx.Done()
			return nil, plugin.Errorf(plugin.CodeToolUnavailable, "connection reset")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHost(t, plugin.Options{})
			mustRegister(t, h, plugin.Spec{Name: "slow", Limits: plugin.Limits{Timeout: timeout}}, fn(`{"type":"object"}`, tc.tool))
			mustRegister(t, h, plugin.Spec{Name: "echo"}, echoArgs())
			start := time.Now()
			res, err := invoke(t, h, call("slow", `{}`))
			elapsed := time.Since(start)
			wantErr(t, res, err, plugin.CodeToolExecutionTimeout, "", `tool "slow" did not finish within 50ms`)
			if !errors.Is(err, plugin.ErrToolExecutionTimeout) {
				t.Error("errors.Is(err, ErrToolExecutionTimeout) = false")
			}
			// Whatever the tool answered, the cause is visible.
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("errors.Is(err, context.DeadlineExceeded) = false for %v", err)
			}
			if elapsed < timeout || elapsed > timeout+late {
				t.Errorf("returned after %s with a %s timeout", elapsed, timeout)
			}
			res, err = invoke(t, h, call("echo", `{"next":1}`))
			wantOK(t, res, err, `{"next":1}`)
		})
	}
	t.Run("deadline error wraps context.DeadlineExceeded", func(t *testing.T) {
		h := newHost(t, plugin.Options{})
		mustRegister(t, h, plugin.Spec{Name: "slow", Limits: plugin.Limits{Timeout: timeout}}, fn(`{"type":"object"}`, tests[1].tool))
		_, err := invoke(t, h, call("slow", `{}`))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("errors.Is(err, context.DeadlineExceeded) = false for %v", err)
		}
	})
	t.Run("tool sees the deadline", func(t *testing.T) {
		h := newHost(t, plugin.Options{})
		var deadline time.Time
		start := time.Now()
		mustRegister(t, h, plugin.Spec{Name: "t", Limits: plugin.Limits{Timeout: 3 * time.Second}}, fn(`{"type":"object"}`, func(ctx context.Context, _ *plugin.Request) (*plugin.Result, error) {
			deadline, _ = ctx.Deadline()
			return textResult("ok"), nil
		}))
		invoke(t, h, call("t", `{}`))
		end := time.Now()
		if deadline.Before(start.Add(3*time.Second)) || deadline.After(end.Add(3*time.Second)) {
			t.Errorf("tool's deadline is %s after the call started, want 3s", deadline.Sub(start))
		}
	})
	t.Run("tool error with deadline cause is a timeout", func(t *testing.T) {
		h := newHost(t, plugin.Options{})
		mustRegister(t, h, plugin.Spec{Name: "t"}, fn(`{"type":"object"}`, func(context.Context, *plugin.Request) (*plugin.Result, error) {
			return nil, &os.PathError{Op: "read", Path: "pipe", Err: os.ErrDeadlineExceeded}
		}))
		res, err := invoke(t, h, call("t", `{}`))
		wantErr(t, res, err, plugin.CodeToolExecutionTimeout, "")
	})
}

func TestCallerCancellation(t *testing.T) {
	// However the tool reacts to its context being cancelled, the caller
	// gets an error result that is not a timeout and that satisfies
	// errors.Is(err, context.Canceled).
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	tests := []struct {
		name string
		tool func(ctx context.Context) (*plugin.Result, error)
	}{
		{"returns ctx.Err()", func(ctx context.Context) (*plugin.Result, error) { <-ctx.Done(); return nil, ctx.Err() }},
		{"returns its own error", func(ctx context.Context) (*plugin.Result, error) {
			<-ctx.Done()
			return nil, errors.New("instance closed")
		}},
		{"returns an *Error", func(ctx context.Context) (*plugin.Result, error) {
			<-ctx.Done()
			return nil, plugin.Errorf(plugin.CodeToolUnavailable, "plugin process killed")
		}},
		{"returns an error result", func(ctx context.Context) (*plugin.Result, error) {
			<-ctx.Done()
			return &plugin.Result{Content: []plugin.Content{plugin.Text("interrupted")}, IsError: true}, nil
		}},
		{"ignores ctx", func(ctx context.Context) (*plugin.Result, error) {
			<-release // abandoned by the pipeline until the test ends
			return nil, nil
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, plugin.Options{})
			started := make(chan struct{})
			mustRegister(t, h, plugin.Spec{Name: "wait"}, fn(`{"type":"object"}`, func(ctx context.Context, _ *plugin.Request) (*plugin.Result, error) {
				close(started)
				return tc.tool(ctx)
			}))
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				<-started
				cancel()
			}()
			res, err := invokeCtx(t, ctx, h, call("wait", `{}`))
			if err == nil || res.Code == plugin.CodeToolExecutionTimeout {
				t.Fatalf("cancelled call: code %s, err %v", res.Code, err)
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("errors.Is(err, context.Canceled) = false for %v", err)
			}
		})
	}
}

func TestPanic(t *testing.T) {
	h := newHost(t, plugin.Options{})
	var calls atomic.Int64
	mustRegister(t, h, plugin.Spec{Name: "crash"}, fn(`{"type":"object"}`, func(context.Context, *plugin.Request) (*plugin.Result, error) {
		calls.Add(1)
		var m map[string]int
		m["x"] = 1 // a real runtime panic, not a string
		return nil, nil
	}))
	mustRegister(t, h, plugin.Spec{Name: "echo", Tier: plugin.TierReadOnly}, echoArgs())
	for i := range 3 {
		res, err := invoke(t, h, call("crash", `{}`))
		wantErr(t, res, err, plugin.CodeToolExecutionFailed, "", `tool "crash" crashed`, "assignment to entry in nil map")
		res, err = invoke(t, h, call("echo", fmt.Sprintf(`{"i":%d}`, i)))
		wantOK(t, res, err, fmt.Sprintf(`{"i":%d}`, i))
	}
	if calls.Load() != 3 {
		t.Errorf("crash ran %d times, want 3", calls.Load())
	}
}

func TestToolErrors(t *testing.T) {
	cause := errors.New("disk on fire")
	tests := []struct {
		name   string
		result *plugin.Result
		err    error
		code   plugin.Code
		limit  string
		phrase string
	}{
		{name: "*Error keeps its code", err: plugin.Errorf(plugin.CodeFileNotFound, "no such file %q", "a.txt"), code: plugin.CodeFileNotFound, phrase: `FILE_NOT_FOUND: no such file "a.txt"`},
		{name: "wrapped *Error keeps its code", err: fmt.Errorf("reading: %w", plugin.Errorf(plugin.CodePermissionDenied, "mode 000")), code: plugin.CodePermissionDenied, phrase: "mode 000"},
		{name: "limit error keeps its limit", err: plugin.LimitError("memory", "guest grew past 256MiB"), code: plugin.CodeLimitExceeded, limit: "memory", phrase: "guest grew past 256MiB"},
		{name: "plain error", err: cause, code: plugin.CodeToolExecutionFailed, phrase: "disk on fire"},
		{name: "IsError without code", result: &plugin.Result{Content: []plugin.Content{plugin.Text("bad input file")}, IsError: true}, code: plugin.CodeToolExecutionFailed, phrase: "TOOL_EXECUTION_FAILED: bad input file"},
		{name: "IsError with code", result: &plugin.Result{Content: []plugin.Content{plugin.Text("too big")}, IsError: true, Code: plugin.CodeFileTooLarge}, code: plugin.CodeFileTooLarge, phrase: "too big"},
		{name: "IsError with limit", result: &plugin.Result{Content: []plugin.Content{plugin.Text("fuel")}, IsError: true, Code: plugin.CodeLimitExceeded, Limit: "fuel"}, code: plugin.CodeLimitExceeded, limit: "fuel"},
		{name: "nil result, nil error", code: plugin.CodeOutputInvalid, phrase: "returned no result"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, plugin.Options{})
			mustRegister(t, h, plugin.Spec{Name: "t"}, fn(`{"type":"object"}`, func(context.Context, *plugin.Request) (*plugin.Result, error) {
				return tc.result, tc.err
			}))
			res, err := invoke(t, h, call("t", `{}`))
			wantErr(t, res, err, tc.code, tc.limit, tc.phrase)
			var pe *plugin.Error
			if errors.As(err, &pe) && pe.Tool != "t" {
				t.Errorf("Error.Tool = %q, want %q", pe.Tool, "t")
			}
			var inner *plugin.Error
			if tc.err != nil && errors.As(tc.err, &inner) && !errors.Is(err, inner) {
				t.Errorf("errors.Is(err, the tool's *Error) = false")
			}
			if tc.err == cause && !errors.Is(err, cause) {
				t.Error("the cause is lost")
			}
		})
	}
}

func TestOutputSchema(t *testing.T) {
	const schema = `{"type":"object","properties":{"sum":{"type":"integer"}},"required":["sum"]}`
	tests := []struct {
		name       string
		result     *plugin.Result
		code       plugin.Code
		structured string // on success
		text       string // on success
	}{
		{name: "structured valid", result: &plugin.Result{StructuredContent: json.RawMessage(`{"sum":3}`)}, structured: `{"sum":3}`, text: `{"sum":3}`},
		{name: "structured with own text", result: &plugin.Result{Content: []plugin.Content{plugin.Text("3")}, StructuredContent: json.RawMessage(`{"sum":3}`)}, structured: `{"sum":3}`, text: "3"},
		{name: "structured wrong type", result: &plugin.Result{StructuredContent: json.RawMessage(`{"sum":"3"}`)}, code: plugin.CodeOutputInvalid},
		{name: "structured missing field", result: &plugin.Result{StructuredContent: json.RawMessage(`{}`)}, code: plugin.CodeOutputInvalid},
		{name: "structured not JSON", result: &plugin.Result{StructuredContent: json.RawMessage(`{sum`)}, code: plugin.CodeOutputInvalid},
		{name: "text JSON fallback", result: textResult(`{"sum":4}`), structured: `{"sum":4}`, text: `{"sum":4}`},
		{name: "text JSON invalid", result: textResult(`{"sum":4.5}`), code: plugin.CodeOutputInvalid},
		{name: "text not JSON", result: textResult("the sum is 4"), code: plugin.CodeOutputInvalid},
		{name: "two texts", result: &plugin.Result{Content: []plugin.Content{plugin.Text(`{"sum":4}`), plugin.Text(`{"sum":4}`)}}, code: plugin.CodeOutputInvalid},
		{name: "nothing", result: &plugin.Result{}, code: plugin.CodeOutputInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, plugin.Options{})
			mustRegister(t, h, plugin.Spec{Name: "sum", OutputSchema: json.RawMessage(schema)}, fn(`{"type":"object"}`, func(context.Context, *plugin.Request) (*plugin.Result, error) {
				return tc.result, nil
			}))
			res, err := invoke(t, h, call("sum", `{}`))
			if tc.code != "" {
				wantErr(t, res, err, tc.code, "", `tool "sum"`)
				return
			}
			wantOK(t, res, err, tc.text)
			if string(res.StructuredContent) != tc.structured {
				t.Errorf("structuredContent = %s, want %s", res.StructuredContent, tc.structured)
			}
		})
	}
	t.Run("tool's own output schema", func(t *testing.T) {
		h := newHost(t, plugin.Options{})
		tool := plugin.Func(plugin.Descriptor{Name: "x", InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage(schema)},
			func(context.Context, *plugin.Request) (*plugin.Result, error) { return textResult(`{"total":1}`), nil })
		mustRegister(t, h, plugin.Spec{Name: "x"}, tool)
		res, err := invoke(t, h, call("x", `{}`))
		wantErr(t, res, err, plugin.CodeOutputInvalid, "", "does not match its output schema")
	})
}

func TestOutputCap(t *testing.T) {
	tests := []struct {
		name   string
		result *plugin.Result
		ok     bool
	}{
		{"text at cap", textResult(strings.Repeat("a", 1024)), true},
		{"text over cap", textResult(strings.Repeat("a", 1025)), false},
		{"split over items", &plugin.Result{Content: []plugin.Content{plugin.Text(strings.Repeat("a", 600)), plugin.Text(strings.Repeat("b", 600))}}, false},
		{"binary counts", &plugin.Result{Content: []plugin.Content{{Type: "image", MIMEType: "image/png", Data: make([]byte, 2048)}}}, false},
		{"structured counts", &plugin.Result{Content: []plugin.Content{plugin.Text("x")}, StructuredContent: json.RawMessage(`"` + strings.Repeat("s", 1100) + `"`)}, false},
		{"error text counts", &plugin.Result{Content: []plugin.Content{plugin.Text(strings.Repeat("e", 2000))}, IsError: true}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, plugin.Options{})
			mustRegister(t, h, plugin.Spec{Name: "out", Limits: plugin.Limits{Output: 1024, Preview: 4096}}, fn(`{"type":"object"}`, func(context.Context, *plugin.Request) (*plugin.Result, error) {
				return tc.result, nil
			}))
			res, err := invoke(t, h, call("out", `{}`))
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantErr(t, res, err, plugin.CodeLimitExceeded, "output", "over the 1KiB limit")
			if !errors.Is(err, &plugin.Error{Code: plugin.CodeLimitExceeded, Limit: "output"}) {
				t.Error("errors.Is(err, LIMIT_EXCEEDED/output) = false")
			}
			if errors.Is(err, &plugin.Error{Code: plugin.CodeLimitExceeded, Limit: "memory"}) {
				t.Error("errors.Is(err, LIMIT_EXCEEDED/memory) = true")
			}
		})
	}
}

func TestRedaction(t *testing.T) {
	const (
		key  = "sk-live-4242-abcd"
		pass = `p<a>ss&"w\rd` // changes under JSON escaping
	)
	secrets := plugin.SecretFunc(func(_ context.Context, name string) (string, error) {
		switch name {
		case "API_KEY":
			return key, nil
		case "DB_PASSWORD":
			return pass, nil
		}
		return "", fmt.Errorf("secret %q: %w", name, plugin.ErrSecretNotFound)
	})
	grants := plugin.Capabilities{Secrets: []string{"API_KEY", "DB_PASSWORD", "MISSING"}}
	structured := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name       string
		result     *plugin.Result
		err        error
		text       string // want, success or error text
		structured string
	}{
		{name: "text", result: textResult("key=" + key + " twice " + key), text: "key=[REDACTED:API_KEY] twice [REDACTED:API_KEY]"},
		{name: "two secrets", result: textResult(key + "/" + pass), text: "[REDACTED:API_KEY]/[REDACTED:DB_PASSWORD]"},
		{name: "structured", result: &plugin.Result{Content: []plugin.Content{plugin.Text("ok")}, StructuredContent: structured(map[string]string{"auth": "Bearer " + key})},
			text: "ok", structured: `{"auth":"Bearer [REDACTED:API_KEY]"}`},
		{name: "structured, escaped secret", result: &plugin.Result{Content: []plugin.Content{plugin.Text("ok")}, StructuredContent: structured(map[string]any{"db": map[string]string{"password": pass}, "list": []string{pass}})},
			text: "ok", structured: `{"db":{"password":"[REDACTED:DB_PASSWORD]"},"list":["[REDACTED:DB_PASSWORD]"]}`},
		{name: "structured, secret as a key", result: &plugin.Result{Content: []plugin.Content{plugin.Text("ok")}, StructuredContent: structured(map[string]int{key: 1})},
			text: "ok", structured: `{"[REDACTED:API_KEY]":1}`},
		{name: "text holding JSON", result: textResult(string(structured(map[string]string{"password": pass}))), text: `{"password":"[REDACTED:DB_PASSWORD]"}`},
		{name: "error result", result: &plugin.Result{Content: []plugin.Content{plugin.Text("401 for " + key)}, IsError: true}, text: "TOOL_EXECUTION_FAILED: 401 for [REDACTED:API_KEY]"},
		{name: "error", err: fmt.Errorf("auth with %s failed", key), text: "TOOL_EXECUTION_FAILED: auth with [REDACTED:API_KEY] failed"},
		{name: "*Error", err: plugin.Errorf(plugin.CodePermissionDenied, "password %s rejected", pass), text: "PERMISSION_DENIED: password [REDACTED:DB_PASSWORD] rejected"},
		{name: "question", result: &plugin.Result{NeedsInput: &plugin.Question{ID: "q", Type: plugin.AnswerText, Text: "use " + key + "?"}}, text: "Input needed (q): use [REDACTED:API_KEY]?\nCall the tool again with answers: {\"q\": <answer>}."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var audit bytes.Buffer
			h := newHost(t, plugin.Options{Grants: grants, Secrets: secrets, Auditor: plugin.NewAuditLog(&audit)})
			mustRegister(t, h, plugin.Spec{Name: "api", Capabilities: plugin.Capabilities{Secrets: []string{"API_KEY", "DB_PASSWORD"}}},
				fn(`{"type":"object"}`, func(_ context.Context, req *plugin.Request) (*plugin.Result, error) {
					if v, _ := req.Secrets.Value("API_KEY"); v != key {
						return nil, fmt.Errorf("secret not resolved: %q", v)
					}
					return tc.result, tc.err
				}))
			res, err := invoke(t, h, call("api", `{}`))
			if got := res.TextContent(); got != tc.text {
				t.Errorf("text = %q, want %q (err %v)", got, tc.text, err)
			}
			if err != nil && err.Error() != tc.text {
				t.Errorf("err = %q, want %q", err, tc.text)
			}
			if string(res.StructuredContent) != tc.structured {
				t.Errorf("structured = %s, want %s", res.StructuredContent, tc.structured)
			}
			if q := res.NeedsInput; q != nil && strings.Contains(q.Text, key) {
				t.Errorf("question text leaks the secret: %q", q.Text)
			}
			out, _ := json.Marshal(res)
			for _, secret := range []string{key, pass, string(structured(pass))} {
				if bytes.Contains(out, []byte(secret)) {
					t.Errorf("the result still holds a secret: %s", out)
				}
				if bytes.Contains(audit.Bytes(), []byte(secret)) {
					t.Errorf("the audit log holds a secret: %s", audit.Bytes())
				}
			}
			if audit.Len() == 0 {
				t.Error("no audit line")
			}
		})
	}
	t.Run("missing secret", func(t *testing.T) {
		h := newHost(t, plugin.Options{Grants: grants, Secrets: secrets})
		mustRegister(t, h, plugin.Spec{Name: "api", Capabilities: plugin.Capabilities{Secrets: []string{"API_KEY", "MISSING"}}}, echoArgs())
		res, err := invoke(t, h, call("api", `{}`))
		wantErr(t, res, err, plugin.CodeToolUnavailable, "", `secret "MISSING"`)
		if strings.Contains(err.Error(), key) {
			t.Error("the error holds a secret value")
		}
	})
	t.Run("no secret source", func(t *testing.T) {
		h := newHost(t, plugin.Options{Grants: grants})
		mustRegister(t, h, plugin.Spec{Name: "api", Capabilities: plugin.Capabilities{Secrets: []string{"API_KEY"}}}, echoArgs())
		res, err := invoke(t, h, call("api", `{}`))
		wantErr(t, res, err, plugin.CodeToolUnavailable, "", "no secret source")
	})
	t.Run("tools without secrets get an empty set", func(t *testing.T) {
		h := newHost(t, plugin.Options{Grants: grants, Secrets: secrets})
		mustRegister(t, h, plugin.Spec{Name: "plain"}, fn(`{"type":"object"}`, func(_ context.Context, req *plugin.Request) (*plugin.Result, error) {
			if req.Secrets == nil || len(req.Secrets.Names()) != 0 {
				return nil, errors.New("unexpected secrets")
			}
			return textResult(key), nil // not its secret: nothing to redact
		}))
		res, err := invoke(t, h, call("plain", `{}`))
		wantOK(t, res, err, key)
	})
}

func TestTruncation(t *testing.T) {
	const preview = 1000
	// A text with multi-byte runes everywhere and no newlines, so cuts
	// fall exactly where the 80/20 split puts them, moved back or forward
	// to rune boundaries only.
	long := strings.Repeat("añb€c😀", 1000) // 13 bytes per group
	lines := strings.Repeat("line of text\n", 500)
	tests := []struct {
		name    string
		content []plugin.Content
		full    string // the text kept as the artifact
	}{
		{"runes", []plugin.Content{plugin.Text(long)}, long},
		{"lines", []plugin.Content{plugin.Text(lines)}, lines},
		{"several items", []plugin.Content{plugin.Text(long[:6500]), {Type: "image", MIMEType: "image/png", Data: []byte{1, 2, 3}}, plugin.Text(lines)}, long[:6500] + "\n" + lines},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, plugin.Options{})
			mustRegister(t, h, plugin.Spec{Name: "big", Limits: plugin.Limits{Preview: preview}}, fn(`{"type":"object"}`, func(context.Context, *plugin.Request) (*plugin.Result, error) {
				return &plugin.Result{Content: tc.content}, nil
			}))
			res, err := invoke(t, h, call("big", `{}`))
			if err != nil {
				t.Fatal(err)
			}
			text := res.TextContent()
			tr := res.Truncated
			if tr == nil {
				t.Fatal("not truncated")
			}
			if len(text) > preview || !utf8.ValidString(text) {
				t.Errorf("preview: %d bytes (max %d), valid UTF-8 %v", len(text), preview, utf8.ValidString(text))
			}
			head, tail, n, err := parseTruncated(tc.full, text)
			if err != nil {
				t.Fatal(err)
			}
			if tr.OmittedBytes != n {
				t.Errorf("marker says %d bytes, Truncated.OmittedBytes %d", n, tr.OmittedBytes)
			}
			if tr.OriginalBytes != len(tc.full) || tr.ShownBytes != len(text) {
				t.Errorf("Truncated = %+v; full %d, shown %d", tr, len(tc.full), len(text))
			}
			// 80 % of the budget for the head, 20 % for the tail.
			if len(head) < 4*len(tail)-40 || len(head) > 4*len(tail)+200 || len(head) < preview*6/10 {
				t.Errorf("head %d bytes, tail %d bytes: not an 80/20 split of %d", len(head), len(tail), preview)
			}
			var images int
			for _, c := range res.Content {
				if c.Type == "image" {
					images++
				}
			}
			want := 0
			for _, c := range tc.content {
				if c.Type == "image" {
					want++
				}
			}
			if images != want {
				t.Errorf("%d images kept, want %d", images, want)
			}
			if len(res.Artifacts) != 1 || res.Artifacts[0].ID != tr.ArtifactID || res.Artifacts[0].Size != int64(len(tc.full)) {
				t.Errorf("Artifacts = %+v, Truncated.ArtifactID %q", res.Artifacts, tr.ArtifactID)
			}
			ref, rc, err := h.Artifact(context.Background(), tr.ArtifactID)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			got, _ := io.ReadAll(rc)
			if string(got) != tc.full {
				t.Errorf("artifact (%d bytes) differs from the full output (%d bytes)", len(got), len(tc.full))
			}
			if ref.Size != int64(len(tc.full)) || !strings.HasPrefix(ref.MIMEType, "text/plain") {
				t.Errorf("artifact ref = %+v", ref)
			}
		})
	}
	t.Run("at preview", func(t *testing.T) {
		h := newHost(t, plugin.Options{})
		s := strings.Repeat("x", preview)
		mustRegister(t, h, plugin.Spec{Name: "t", Limits: plugin.Limits{Preview: preview}}, fn(`{"type":"object"}`, func(context.Context, *plugin.Request) (*plugin.Result, error) {
			return textResult(s), nil
		}))
		res, err := invoke(t, h, call("t", `{}`))
		wantOK(t, res, err, s)
		if res.Truncated != nil || len(res.Artifacts) != 0 {
			t.Errorf("a result at the preview size was truncated: %+v", res.Truncated)
		}
	})
	t.Run("store failure keeps the preview", func(t *testing.T) {
		h := newHost(t, plugin.Options{Artifacts: plugin.NewMemoryArtifacts(10)})
		mustRegister(t, h, plugin.Spec{Name: "t", Limits: plugin.Limits{Preview: preview}}, fn(`{"type":"object"}`, func(context.Context, *plugin.Request) (*plugin.Result, error) {
			return textResult(long), nil
		}))
		res, err := invoke(t, h, call("t", `{}`))
		if err != nil {
			t.Fatal(err)
		}
		if res.Truncated == nil || res.Truncated.ArtifactID != "" || len(res.TextContent()) > preview {
			t.Errorf("Truncated = %+v, preview %d bytes", res.Truncated, len(res.TextContent()))
		}
	})
}

func TestNeedsInput(t *testing.T) {
	tool := fn(`{"type":"object","properties":{"file":{"type":"string"}},"required":["file"]}`, func(_ context.Context, req *plugin.Request) (*plugin.Result, error) {
		var in struct{ File string }
		if err := req.DecodeArguments(&in); err != nil {
			return nil, err
		}
		raw, ok := req.Answers["overwrite"]
		if !ok {
			return &plugin.Result{NeedsInput: &plugin.Question{ID: "overwrite", Type: plugin.AnswerSelect, Text: in.File + " exists. Overwrite?", Options: []string{"yes", "no", "rename"}}}, nil
		}
		var a string
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, plugin.Errorf(plugin.CodeInvalidRequest, "answer overwrite: %v", err)
		}
		return textResult(a + " " + in.File), nil
	})
	h := newHost(t, plugin.Options{})
	mustRegister(t, h, plugin.Spec{Name: "write"}, tool)

	res, err := invoke(t, h, call("write", `{"file":"a.txt"}`))
	if err != nil {
		t.Fatal(err)
	}
	q := res.NeedsInput
	if q == nil || q.ID != "overwrite" || q.Type != plugin.AnswerSelect || len(q.Options) != 3 {
		t.Fatalf("NeedsInput = %+v", q)
	}
	want := "Input needed (overwrite): a.txt exists. Overwrite? [one of: \"yes\",\"no\",\"rename\"]\nCall the tool again with answers: {\"overwrite\": <answer>}."
	if got := res.TextContent(); got != want {
		t.Errorf("question text:\n got %q\nwant %q", got, want)
	}
	res, err = invoke(t, h, plugin.Call{Name: "write", Arguments: json.RawMessage(`{"file":"a.txt"}`), Answers: map[string]json.RawMessage{"overwrite": json.RawMessage(`"rename"`)}})
	wantOK(t, res, err, "rename a.txt")
	if res.NeedsInput != nil {
		t.Error("asked again after an answer")
	}

	t.Run("invalid questions", func(t *testing.T) {
		for _, q := range []plugin.Question{
			{ID: "", Type: plugin.AnswerBoolean, Text: "ok?"},
			{ID: "q", Type: plugin.AnswerBoolean},
			{ID: "q", Type: "colour", Text: "which?"},
			{ID: "q", Type: plugin.AnswerSelect, Text: "which?"},
		} {
			h := newHost(t, plugin.Options{})
			mustRegister(t, h, plugin.Spec{Name: "ask"}, fn(`{"type":"object"}`, func(context.Context, *plugin.Request) (*plugin.Result, error) {
				return &plugin.Result{NeedsInput: &q}, nil
			}))
			res, err := invoke(t, h, call("ask", `{}`))
			wantErr(t, res, err, plugin.CodeOutputInvalid, "", "asked an invalid question")
		}
	})
}

func TestAudit(t *testing.T) {
	var buf bytes.Buffer
	approver := plugin.ApproverFunc(func(_ context.Context, r plugin.ApprovalRequest) (bool, error) {
		return strings.Contains(string(r.Arguments), "please"), nil
	})
	h := newHost(t, plugin.Options{Auditor: plugin.NewAuditLog(&buf), Approver: approver})
	mustRegister(t, h, plugin.Spec{Name: "read", Tier: plugin.TierReadOnly}, echoArgs())
	mustRegister(t, h, plugin.Spec{Name: "rm", Tier: plugin.TierPrivileged}, echoArgs())
	mustRegister(t, h, plugin.Spec{Name: "flood", Limits: plugin.Limits{Output: 10}}, echoArgs())
	mustRegister(t, h, plugin.Spec{Name: "strict", InputSchema: json.RawMessage(`{"type":"object","required":["x"]}`)}, echoArgs())

	type want struct {
		tool, tier, decision string
		code                 plugin.Code
		limit                string
	}
	steps := []struct {
		call plugin.Call
		want want
	}{
		{call("read", `{"a":1}`), want{"read", "read_only", plugin.DecisionAllowed, "", ""}},
		{call("nope", `{}`), want{"nope", "", plugin.DecisionRejected, plugin.CodeToolNotFound, ""}},
		{call("read", `[]`), want{"read", "read_only", plugin.DecisionRejected, plugin.CodeInvalidRequest, ""}},
		{call("rm", `{"path":"/"}`), want{"rm", "privileged", plugin.DecisionDenied, plugin.CodeApprovalDenied, ""}},
		{call("rm", `{"path":"/tmp/x","please":true}`), want{"rm", "privileged", plugin.DecisionApproved, "", ""}},
		{call("flood", `{"long":"arguments"}`), want{"flood", "side_effecting", plugin.DecisionAllowed, plugin.CodeLimitExceeded, "output"}},
		{call("strict", `{}`), want{"strict", "side_effecting", plugin.DecisionAllowed, plugin.CodeInvalidRequest, ""}},
	}
	var results []*plugin.Result
	for _, s := range steps {
		res, _ := invoke(t, h, s.call)
		results = append(results, res)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != len(steps) {
		t.Fatalf("%d audit lines for %d calls:\n%s", len(lines), len(steps), buf.String())
	}
	for i, line := range lines {
		var fields map[string]any
		if err := json.Unmarshal([]byte(line), &fields); err != nil {
			t.Fatalf("line %d is not JSON: %v", i, err)
		}
		for _, f := range []string{"time", "call_id", "tool", "decision", "duration_ms", "bytes_in", "bytes_out"} {
			if _, ok := fields[f]; !ok {
				t.Errorf("line %d lacks %q: %s", i, f, line)
			}
		}
		var rec plugin.AuditRecord
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		w := steps[i].want
		got := want{rec.Tool, rec.Tier, rec.Decision, rec.Code, rec.Limit}
		if got != w {
			t.Errorf("line %d: %+v, want %+v", i, got, w)
		}
		if rec.CallID != results[i].Meta.CallID || !strings.HasPrefix(rec.CallID, "call_") {
			t.Errorf("line %d: call_id %q, result's %q", i, rec.CallID, results[i].Meta.CallID)
		}
		if rec.BytesIn != len(steps[i].call.Arguments) {
			t.Errorf("line %d: bytes_in %d, want %d", i, rec.BytesIn, len(steps[i].call.Arguments))
		}
		if rec.BytesOut != len(results[i].TextContent()) {
			t.Errorf("line %d: bytes_out %d, want %d", i, rec.BytesOut, len(results[i].TextContent()))
		}
		if rec.DurationMS < 0 || rec.Time.IsZero() {
			t.Errorf("line %d: duration %v, time %v", i, rec.DurationMS, rec.Time)
		}
		if strings.Contains(line, "please") || strings.Contains(line, "/tmp/x") {
			t.Errorf("line %d holds arguments: %s", i, line)
		}
	}
	t.Run("concurrent calls, one line each", func(t *testing.T) {
		var buf bytes.Buffer
		h := newHost(t, plugin.Options{Auditor: plugin.NewAuditLog(&buf)})
		mustRegister(t, h, plugin.Spec{Name: "read", Tier: plugin.TierReadOnly}, echoArgs())
		calls := make([]plugin.Call, 32)
		for i := range calls {
			calls[i] = plugin.Call{ID: fmt.Sprintf("c%02d", i), Name: "read"}
		}
		h.InvokeBatch(context.Background(), calls)
		seen := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			var rec plugin.AuditRecord
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("interleaved line %q: %v", line, err)
			}
			seen[rec.CallID] = true
		}
		if len(seen) != len(calls) {
			t.Errorf("%d distinct call IDs audited, want %d", len(seen), len(calls))
		}
	})
	t.Run("write errors are counted", func(t *testing.T) {
		log := plugin.NewAuditLog(failWriter{})
		h := newHost(t, plugin.Options{Auditor: log})
		mustRegister(t, h, plugin.Spec{Name: "read"}, echoArgs())
		res, err := invoke(t, h, call("read", `{}`))
		wantOK(t, res, err, "{}")
		if log.WriteErrors() != 1 {
			t.Errorf("WriteErrors = %d, want 1", log.WriteErrors())
		}
	})
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestBatch(t *testing.T) {
	t.Run("read only calls run concurrently", func(t *testing.T) {
		const n = 8
		// Every call waits until all n have started. Run one at a time,
		// the first would wait forever (until its timeout): this proves
		// concurrency without measuring time.
		var arrived sync.WaitGroup
		arrived.Add(n)
		all := make(chan struct{})
		go func() { arrived.Wait(); close(all) }()
		h := newHost(t, plugin.Options{})
		mustRegister(t, h, plugin.Spec{Name: "barrier", Tier: plugin.TierReadOnly, Limits: plugin.Limits{Timeout: 10 * time.Second}},
			fn(`{"type":"object"}`, func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
				arrived.Done()
				select {
				case <-all:
					return textResult(string(req.Arguments)), nil
				case <-ctx.Done():
					return nil, plugin.Errorf(plugin.CodeToolExecutionFailed, "the other calls never arrived: the batch is not concurrent")
				}
			}))
		calls := make([]plugin.Call, n)
		for i := range calls {
			calls[i] = call("barrier", fmt.Sprintf(`{"i":%d}`, i))
		}
		out := h.InvokeBatch(context.Background(), calls)
		for i, o := range out {
			checkResult(t, calls[i], o.Result, o.Err)
			wantOK(t, o.Result, o.Err, fmt.Sprintf(`{"i":%d}`, i))
		}
	})

	t.Run("side effects run alone and in order", func(t *testing.T) {
		var (
			mu      sync.Mutex
			events  []string
			running atomic.Int64
			overlap atomic.Bool
		)
		record := func(tier string) plugin.Tool {
			return fn(`{"type":"object"}`, func(_ context.Context, req *plugin.Request) (*plugin.Result, error) {
				var in struct{ ID string }
				req.DecodeArguments(&in)
				if running.Add(1) > 1 && tier == "se" {
					overlap.Store(true)
				}
				mu.Lock()
				events = append(events, "start "+in.ID)
				mu.Unlock()
				mu.Lock()
				events = append(events, "end "+in.ID)
				mu.Unlock()
				if running.Add(-1) > 0 && tier == "se" {
					overlap.Store(true)
				}
				return textResult(in.ID), nil
			})
		}
		h := newHost(t, plugin.Options{})
		mustRegister(t, h, plugin.Spec{Name: "ro", Tier: plugin.TierReadOnly}, record("ro"))
		mustRegister(t, h, plugin.Spec{Name: "se", Tier: plugin.TierSideEffecting}, record("se"))
		mustRegister(t, h, plugin.Spec{Name: "pv", Tier: plugin.TierPrivileged, Approval: plugin.ApprovalNever}, record("se"))
		names := []string{"ro", "ro", "se", "ro", "se", "se", "pv", "missing", "ro", "ro"}
		calls := make([]plugin.Call, len(names))
		for i, n := range names {
			calls[i] = call(n, fmt.Sprintf(`{"id":"%s%d"}`, n, i))
		}
		out := h.InvokeBatch(context.Background(), calls)
		if len(out) != len(calls) {
			t.Fatalf("%d outcomes for %d calls", len(out), len(calls))
		}
		for i, o := range out {
			checkResult(t, calls[i], o.Result, o.Err)
			if names[i] == "missing" {
				wantErr(t, o.Result, o.Err, plugin.CodeToolNotFound, "")
				continue
			}
			wantOK(t, o.Result, o.Err, fmt.Sprintf("%s%d", names[i], i))
		}
		if overlap.Load() {
			t.Error("a side-effecting call overlapped another call")
		}
		// Position of each event.
		pos := map[string]int{}
		for i, e := range events {
			pos[e] = i
		}
		for i, n := range names {
			if n == "ro" || n == "missing" {
				continue
			}
			id := fmt.Sprintf("%s%d", n, i)
			for j, m := range names {
				if m == "missing" {
					continue
				}
				other := fmt.Sprintf("%s%d", m, j)
				if j < i && pos["end "+other] > pos["start "+id] {
					t.Errorf("%s started before %s (earlier in the batch) ended: %v", id, other, events)
				}
				if j > i && pos["start "+other] < pos["end "+id] {
					t.Errorf("%s (later in the batch) started before %s ended: %v", other, id, events)
				}
			}
		}
	})

	t.Run("empty batch", func(t *testing.T) {
		h := newHost(t, plugin.Options{})
		if out := h.InvokeBatch(context.Background(), nil); len(out) != 0 {
			t.Errorf("got %d outcomes", len(out))
		}
	})
}

func TestNested(t *testing.T) {
	grants := plugin.Capabilities{Invoke: []string{"*"}}

	t.Run("allowed, denied, no capability", func(t *testing.T) {
		var audit bytes.Buffer
		h := newHost(t, plugin.Options{Grants: grants, Auditor: plugin.NewAuditLog(&audit)})
		mustRegister(t, h, plugin.Spec{Name: "echo", Tier: plugin.TierReadOnly}, echoArgs())
		mustRegister(t, h, plugin.Spec{Name: "secret_stuff", Tier: plugin.TierReadOnly}, echoArgs())
		var sawInvoker atomic.Bool
		mustRegister(t, h, plugin.Spec{Name: "loner"}, fn(`{"type":"object"}`, func(_ context.Context, req *plugin.Request) (*plugin.Result, error) {
			sawInvoker.Store(req.Invoker != nil)
			return textResult("alone"), nil
		}))
		mustRegister(t, h, plugin.Spec{Name: "caller", Capabilities: plugin.Capabilities{Invoke: []string{"echo"}}},
			fn(`{"type":"object","properties":{"target":{"type":"string"}}}`, func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
				var in struct{ Target string }
				req.DecodeArguments(&in)
				res, err := req.Invoker.Invoke(ctx, plugin.Call{Name: in.Target, Arguments: json.RawMessage(`{"from":"caller"}`)})
				if err != nil {
					return nil, err
				}
				return textResult("nested: " + res.TextContent()), nil
			}))
		res, err := invoke(t, h, call("caller", `{"target":"echo"}`))
		wantOK(t, res, err, `nested: {"from":"caller"}`)
		parentID := res.Meta.CallID

		res, err = invoke(t, h, call("caller", `{"target":"secret_stuff"}`))
		wantErr(t, res, err, plugin.CodeCapabilityDenied, "", `tool "caller" may not invoke "secret_stuff"`)

		res, err = invoke(t, h, call("loner", `{}`))
		wantOK(t, res, err, "alone")
		if sawInvoker.Load() {
			t.Error("a tool without the invoke capability got an Invoker")
		}

		var nested plugin.AuditRecord
		for _, line := range strings.Split(strings.TrimSpace(audit.String()), "\n") {
			var rec plugin.AuditRecord
			json.Unmarshal([]byte(line), &rec)
			if rec.Tool == "echo" {
				nested = rec
			}
		}
		if nested.ParentID != parentID {
			t.Errorf("nested call's parent_id = %q, want %q", nested.ParentID, parentID)
		}
	})

	t.Run("invocation budget", func(t *testing.T) {
		var audit bytes.Buffer
		h := newHost(t, plugin.Options{Grants: grants, Auditor: plugin.NewAuditLog(&audit)})
		mustRegister(t, h, plugin.Spec{Name: "echo"}, echoArgs())
		mustRegister(t, h, plugin.Spec{Name: "fanout", Capabilities: plugin.Capabilities{Invoke: []string{"echo"}}, Limits: plugin.Limits{ToolInvocations: 3}},
			fn(`{"type":"object"}`, func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
				for i := range 10 {
					res, err := req.Invoker.Invoke(ctx, call("echo", `{}`))
					if err != nil {
						if res == nil || res.Code != plugin.CodeLimitExceeded || res.Limit != "tool_invocations" {
							return nil, fmt.Errorf("call %d: result %+v", i, res)
						}
						return nil, fmt.Errorf("after %d calls: %w", i, err)
					}
				}
				return textResult("no limit"), nil
			}))
		res, err := invoke(t, h, call("fanout", `{}`))
		wantErr(t, res, err, plugin.CodeLimitExceeded, "tool_invocations", `tool "fanout" may invoke at most 3 tools per call`)
		// The budget is per call, not per tool.
		res, err = invoke(t, h, call("fanout", `{}`))
		wantErr(t, res, err, plugin.CodeLimitExceeded, "tool_invocations")
		// Each round: fanout, 3 echoes, one refused echo — all audited.
		var refused int
		lines := strings.Split(strings.TrimSpace(audit.String()), "\n")
		for _, line := range lines {
			var rec plugin.AuditRecord
			json.Unmarshal([]byte(line), &rec)
			if rec.Tool == "echo" && rec.Limit == "tool_invocations" {
				refused++
				if rec.ParentID == "" || rec.Decision != plugin.DecisionRejected {
					t.Errorf("refused nested call audited as %+v", rec)
				}
			}
		}
		if len(lines) != 10 || refused != 2 {
			t.Errorf("%d audit lines, %d refused nested calls; want 10 and 2:\n%s", len(lines), refused, audit.String())
		}
	})

	for _, detach := range []bool{false, true} {
		name := "depth cap"
		if detach {
			name = "depth cap with a detached context"
		}
		t.Run(name, func(t *testing.T) {
			const maxDepth = 3
			var (
				deepest atomic.Int64
				total   atomic.Int64
			)
			h := newHost(t, plugin.Options{Grants: grants, MaxDepth: maxDepth})
			mustRegister(t, h, plugin.Spec{Name: "recurse", Capabilities: plugin.Capabilities{Invoke: []string{"recurse"}}},
				fn(`{"type":"object","properties":{"depth":{"type":"integer"}}}`, func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
					if total.Add(1) > 50 {
						return nil, errors.New("runaway recursion")
					}
					var in struct{ Depth int64 }
					req.DecodeArguments(&in)
					if in.Depth > deepest.Load() {
						deepest.Store(in.Depth)
					}
					if detach {
						// A careless adapter loses the call's context.
						ctx = context.Background()
					}
					_, err := req.Invoker.Invoke(ctx, call("recurse", fmt.Sprintf(`{"depth":%d}`, in.Depth+1)))
					return nil, err
				}))
			res, err := invoke(t, h, call("recurse", `{"depth":0}`))
			wantErr(t, res, err, plugin.CodeLimitExceeded, "depth", "limited to a depth of 3")
			if deepest.Load() != maxDepth {
				t.Errorf("deepest call ran at depth %d, want %d", deepest.Load(), maxDepth)
			}
		})
	}
}

// parseTruncated splits a truncated preview of full into head, tail and the
// omitted count its marker states, and checks that they add up. The marker
// starts with a newline unless the head already ends with one.
func parseTruncated(full, text string) (head, tail string, omitted int, err error) {
	i := strings.Index(text, "[... truncated ")
	if i < 0 {
		return "", "", 0, fmt.Errorf("no marker in %s", abbrev(text))
	}
	rest := text[i+len("[... truncated "):]
	j := strings.Index(rest, " bytes ...]\n")
	if j < 0 {
		return "", "", 0, fmt.Errorf("malformed marker in %s", abbrev(text))
	}
	if _, err := fmt.Sscan(rest[:j], &omitted); err != nil {
		return "", "", 0, fmt.Errorf("marker count %q: %v", rest[:j], err)
	}
	tail = rest[j+len(" bytes ...]\n"):]
	head = text[:i]
	if i > 0 && text[i-1] != '\n' {
		return "", "", 0, fmt.Errorf("the marker does not start a line: %s", abbrev(text))
	}
	// Either the head ends with its own newline or the marker brought one.
	for _, h := range []string{head, strings.TrimSuffix(head, "\n")} {
		if strings.HasPrefix(full, h) && strings.HasSuffix(full, tail) && len(h)+omitted+len(tail) == len(full) {
			return h, tail, omitted, nil
		}
	}
	return "", "", 0, fmt.Errorf("head %d + omitted %d + tail %d bytes is not the %d-byte output, or they are not its ends", len(head), omitted, len(tail), len(full))
}

func TestLongErrorsAreCut(t *testing.T) {
	const preview = 1000
	stderr := strings.Repeat("compiler says no\n", 10_000)
	tests := []struct {
		name   string
		result *plugin.Result
		err    error
		code   plugin.Code
	}{
		{"error result", &plugin.Result{Content: []plugin.Content{plugin.Text(stderr)}, IsError: true}, nil, plugin.CodeToolExecutionFailed},
		{"error", nil, errors.New(stderr), plugin.CodeToolExecutionFailed},
		{"*Error", nil, plugin.Errorf(plugin.CodeFileNotFound, "%s", stderr), plugin.CodeFileNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, plugin.Options{})
			mustRegister(t, h, plugin.Spec{Name: "build", Limits: plugin.Limits{Preview: preview}}, fn(`{"type":"object"}`, func(context.Context, *plugin.Request) (*plugin.Result, error) {
				return tc.result, tc.err
			}))
			res, err := invoke(t, h, call("build", `{}`))
			wantErr(t, res, err, tc.code, "", "compiler says no", "[... truncated ")
			var pe *plugin.Error
			errors.As(err, &pe)
			if len(pe.Message) > preview {
				t.Errorf("message is %d bytes, preview %d", len(pe.Message), preview)
			}
			if _, _, _, perr := parseTruncated(stderr, pe.Message); perr != nil {
				t.Error(perr)
			}
		})
	}
}

// TestHostFieldsAreTheHosts checks that a tool cannot fill in the fields
// of a Result that belong to the host: a success carrying an error code,
// truncation facts, or references to artifacts (perhaps another call's).
func TestHostFieldsAreTheHosts(t *testing.T) {
	h := newHost(t, plugin.Options{})
	mustRegister(t, h, plugin.Spec{Name: "liar"}, fn(`{"type":"object"}`, func(context.Context, *plugin.Request) (*plugin.Result, error) {
		return &plugin.Result{
			Content:   []plugin.Content{plugin.Text("fine")},
			Code:      plugin.CodeToolNotFound,
			Limit:     "memory",
			Truncated: &plugin.Truncation{OriginalBytes: 1 << 30, ArtifactID: "art_0123456789abcdef01234567"},
			Artifacts: []plugin.ArtifactRef{{ID: "art_0123456789abcdef01234567", Size: 1}},
			Meta:      &plugin.Meta{CallID: "forged", Tool: "other", Fuel: 7},
		}, nil
	}))
	res, err := invoke(t, h, call("liar", `{}`))
	wantOK(t, res, err, "fine")
	if res.Code != "" || res.Limit != "" || res.Truncated != nil || len(res.Artifacts) != 0 {
		t.Errorf("tool-set host fields survived: code %q, limit %q, truncated %+v, artifacts %+v", res.Code, res.Limit, res.Truncated, res.Artifacts)
	}
	if res.Meta.CallID == "forged" || res.Meta.Tool != "liar" || res.Meta.Fuel != 7 {
		t.Errorf("Meta = %+v; want the host's, with the tool's fuel", res.Meta)
	}
}

func TestStructuredContentMustBeJSON(t *testing.T) {
	for _, tc := range []struct {
		name       string
		structured string
		ok         bool
	}{
		{"object", `{"a":1}`, true},
		{"not JSON", `{"a":`, false},
		{"two values", `{} {}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, plugin.Options{})
			mustRegister(t, h, plugin.Spec{Name: "t"}, fn(`{"type":"object"}`, func(context.Context, *plugin.Request) (*plugin.Result, error) {
				return &plugin.Result{Content: []plugin.Content{plugin.Text("x")}, StructuredContent: json.RawMessage(tc.structured)}, nil
			}))
			res, err := invoke(t, h, call("t", `{}`))
			if _, merr := json.Marshal(res); merr != nil {
				t.Errorf("the result cannot be encoded: %v", merr)
			}
			if tc.ok {
				wantOK(t, res, err, "x")
				return
			}
			wantErr(t, res, err, plugin.CodeOutputInvalid, "", "returned structured content that is not valid JSON")
		})
	}
}

func TestLongPipelineErrorsAreCut(t *testing.T) {
	h := newHost(t, plugin.Options{Defaults: plugin.Limits{Preview: 2000}})
	mustRegister(t, h, plugin.Spec{Name: "strict"}, fn(`{"type":"object","additionalProperties":false}`, func(context.Context, *plugin.Request) (*plugin.Result, error) {
		return textResult("ran"), nil
	}))
	var b strings.Builder
	b.WriteString("{")
	for i := range 5000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"field_%d":1`, i)
	}
	b.WriteString("}")
	res, err := invoke(t, h, call("strict", b.String()))
	wantErr(t, res, err, plugin.CodeInvalidRequest, "", `unexpected fields "field_0"`, "[... truncated ")
	if n := len(res.TextContent()); n > 2000+100 {
		t.Errorf("error text is %d bytes with a 2000-byte preview", n)
	}
	res, err = invoke(t, h, call(strings.Repeat("x", 100), "{}"))
	wantErr(t, res, err, plugin.CodeToolNotFound, "")
}

// TestErrorWithQuestion: a result that is both an error and a question is
// an error; the caller must never get IsError without an error.
func TestErrorWithQuestion(t *testing.T) {
	h := newHost(t, plugin.Options{})
	mustRegister(t, h, plugin.Spec{Name: "confused"}, fn(`{"type":"object"}`, func(context.Context, *plugin.Request) (*plugin.Result, error) {
		return &plugin.Result{
			Content:    []plugin.Content{plugin.Text("could not read config")},
			IsError:    true,
			NeedsInput: &plugin.Question{ID: "retry", Type: plugin.AnswerBoolean, Text: "Retry?"},
		}, nil
	}))
	res, err := invoke(t, h, call("confused", `{}`))
	wantErr(t, res, err, plugin.CodeToolExecutionFailed, "", "could not read config")
	if res.NeedsInput != nil {
		t.Errorf("an error result carries a question: %+v", res.NeedsInput)
	}
}

func TestHugeNumbersInOutput(t *testing.T) {
	h := newHost(t, plugin.Options{})
	mustRegister(t, h, plugin.Spec{Name: "sum", OutputSchema: json.RawMessage(`{"type":"object","properties":{"sum":{"type":"integer"}}}`)},
		fn(`{"type":"object"}`, func(context.Context, *plugin.Request) (*plugin.Result, error) {
			return &plugin.Result{StructuredContent: json.RawMessage(`{"sum":1e1000000}`)}, nil
		}))
	res, err := invoke(t, h, call("sum", `{}`))
	wantErr(t, res, err, plugin.CodeOutputInvalid, "", "the number 1e1000000 is out of range")
}

func TestCallerDeadline(t *testing.T) {
	h := newHost(t, plugin.Options{})
	mustRegister(t, h, plugin.Spec{Name: "slow"}, fn(`{"type":"object"}`, func(ctx context.Context, _ *plugin.Request) (*plugin.Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	res, err := invokeCtx(t, ctx, h, call("slow", `{}`))
	wantErr(t, res, err, plugin.CodeToolExecutionTimeout, "", `tool "slow" did not finish before the caller's deadline`)
}

// keeper is a tool that says it keeps its deadline.
type keeper struct{ plugin.Tool }

func (keeper) KeepsDeadline() bool { return true }

// A DeadlineKeeper is called on the caller's goroutine: the host trusts it
// to return by the deadline (this one does not: the host waits and takes
// what it returns), and still turns its panic into TOOL_EXECUTION_FAILED.
func TestDeadlineKeeper(t *testing.T) {
	h := newHost(t, plugin.Options{})
	late := keeper{fn(`{"type":"object"}`, func(ctx context.Context, _ *plugin.Request) (*plugin.Result, error) {
		<-ctx.Done()
		time.Sleep(150 * time.Millisecond)
		return &plugin.Result{Content: []plugin.Content{plugin.Text("late")}}, nil
	})}
	mustRegister(t, h, plugin.Spec{Name: "late", Limits: plugin.Limits{Timeout: 20 * time.Millisecond}}, late)
	start := time.Now()
	res, err := invoke(t, h, call("late", `{}`))
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("returned after %v: the host did not wait for a tool that keeps its own deadline", d)
	}
	wantOK(t, res, err, "late")
	crash := keeper{fn(`{"type":"object"}`, func(context.Context, *plugin.Request) (*plugin.Result, error) {
		panic("boom")
	})}
	mustRegister(t, h, plugin.Spec{Name: "crash"}, crash)
	res, err = invoke(t, h, call("crash", `{}`))
	wantErr(t, res, err, plugin.CodeToolExecutionFailed, "", `tool "crash" crashed`, "boom")
}

// The three question types round-trip through the pipeline: a tool asks
// one question after another (boolean, text, select) and gets each answer,
// checked by Request.Answer, once the caller has answered it.
func TestNeedsInputAnswerTypes(t *testing.T) {
	questions := []*plugin.Question{
		{ID: "confirm", Type: plugin.AnswerBoolean, Text: "Create the account?"},
		{ID: "name", Type: plugin.AnswerText, Text: "Whose account?"},
		{ID: "color", Type: plugin.AnswerSelect, Text: "Which color?", Options: []string{"red", "blue", "42"}},
	}
	tool := fn(`{"type":"object"}`, func(_ context.Context, req *plugin.Request) (*plugin.Result, error) {
		var got []plugin.Answer
		for _, q := range questions {
			a, ok, err := req.Answer(q)
			if err != nil {
				return nil, err
			}
			if !ok {
				return &plugin.Result{NeedsInput: q}, nil
			}
			got = append(got, a)
		}
		if !got[0].Bool {
			return textResult("cancelled"), nil
		}
		return textResult(fmt.Sprintf("created %s's account in %s", got[1].Text, got[2].Text)), nil
	})
	h := newHost(t, plugin.Options{})
	mustRegister(t, h, plugin.Spec{Name: "account"}, tool)
	ask := func(answers map[string]string) (*plugin.Result, error) {
		c := plugin.Call{Name: "account", Answers: map[string]json.RawMessage{}}
		for id, a := range answers {
			c.Answers[id] = json.RawMessage(a)
		}
		return invoke(t, h, c)
	}

	t.Run("round trip", func(t *testing.T) {
		answers := map[string]string{}
		for _, step := range []struct {
			id, answer, text string
		}{
			{"confirm", `true`, "Input needed (confirm): Create the account? [yes/no]\nCall the tool again with answers: {\"confirm\": <answer>}."},
			{"name", `"Ada Lovelace"`, "Input needed (name): Whose account?\nCall the tool again with answers: {\"name\": <answer>}."},
			{"color", `"blue"`, "Input needed (color): Which color? [one of: \"red\",\"blue\",\"42\"]\nCall the tool again with answers: {\"color\": <answer>}."},
		} {
			res, err := ask(answers)
			if err != nil {
				t.Fatal(err)
			}
			if q := res.NeedsInput; q == nil || q.ID != step.id {
				t.Fatalf("with answers %v: NeedsInput = %+v, want question %q", answers, q, step.id)
			}
			if got := res.TextContent(); got != step.text {
				t.Errorf("question %s text:\n got %q\nwant %q", step.id, got, step.text)
			}
			answers[step.id] = step.answer
		}
		res, err := ask(answers)
		wantOK(t, res, err, "created Ada Lovelace's account in blue")
		if res.NeedsInput != nil {
			t.Errorf("asked again after every answer: %+v", res.NeedsInput)
		}
		res, err = ask(map[string]string{"confirm": "false", "name": `""`, "color": `"red"`})
		wantOK(t, res, err, "cancelled")
	})

	t.Run("accepted forms", func(t *testing.T) {
		for _, tc := range []struct {
			confirm, name, color, want string
		}{
			{`"yes"`, `"Bo"`, `"red"`, "created Bo's account in red"},
			{`"No"`, `"Bo"`, `"red"`, "cancelled"},
			{`true`, `42`, `42`, "created 42's account in 42"}, // what the CLI makes of --answer name=42
		} {
			res, err := ask(map[string]string{"confirm": tc.confirm, "name": tc.name, "color": tc.color})
			wantOK(t, res, err, tc.want)
		}
	})

	t.Run("wrong answers", func(t *testing.T) {
		good := map[string]string{"confirm": `true`, "name": `"Ada"`, "color": `"red"`}
		for _, tc := range []struct {
			id, answer, want string
		}{
			{"confirm", `"maybe"`, `answer "confirm": expected true or false (or "yes" or "no"), got string "maybe"`},
			{"confirm", `1`, `answer "confirm": expected true or false (or "yes" or "no"), got integer 1`},
			{"confirm", `null`, `answer "confirm": expected true or false (or "yes" or "no"), got null`},
			{"name", `{"first":"Ada"}`, `answer "name": expected a string, got object`},
			{"name", `["Ada"]`, `answer "name": expected a string, got array`},
			{"color", `"green"`, `answer "color": expected one of "red", "blue", "42", got string "green"`},
			{"color", `"Red"`, `answer "color": expected one of "red", "blue", "42", got string "Red"`},
			{"color", `true`, `answer "color": expected one of "red", "blue", "42", got boolean true`},
			{"confirm", `maybe`, `answer "confirm" is not valid JSON: "maybe"`},
			{"name", `"Ada" "Byron"`, `answer "name" is not valid JSON: "\"Ada\" \"Byron\""`},
		} {
			t.Run(tc.id+"="+tc.answer, func(t *testing.T) {
				answers := maps.Clone(good)
				answers[tc.id] = tc.answer
				res, err := ask(answers)
				wantErr(t, res, err, plugin.CodeInvalidRequest, "", "INVALID_REQUEST: "+tc.want)
				if !errors.Is(err, plugin.ErrInvalidRequest) {
					t.Errorf("errors.Is(%v, ErrInvalidRequest) = false", err)
				}
			})
		}
	})
}

// ParseAnswer refuses to check answers against an invalid question: that
// is the tool's mistake, not the caller's.
func TestParseAnswerInvalidQuestion(t *testing.T) {
	q := &plugin.Question{ID: "q", Type: plugin.AnswerSelect, Text: "which?"}
	_, err := q.ParseAnswer(json.RawMessage(`"a"`))
	if err == nil || plugin.CodeOf(err) == plugin.CodeInvalidRequest || !strings.Contains(err.Error(), "needs options") {
		t.Errorf("ParseAnswer with a select question without options: %v (code %s)", err, plugin.CodeOf(err))
	}
}
