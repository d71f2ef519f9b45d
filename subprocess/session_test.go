package subprocess

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/plugin"
)

// asker is the caller's client and listener of these tests: it keeps what
// reaches it and answers as told. (Its MCP counterpart is tested in mcp.)
type asker struct {
	mu       sync.Mutex
	samples  []string
	elicits  []string
	progress []string
	logs     []string
	block    bool          // wait for the request's context to end
	ended    chan struct{} // closed when a blocked request's context ends
}

func (a *asker) Sample(ctx context.Context, req *plugin.SampleRequest) (*plugin.SampleResult, error) {
	a.mu.Lock()
	a.samples = append(a.samples, req.Messages[0].Content.Text)
	a.mu.Unlock()
	if a.block {
		<-ctx.Done()
		close(a.ended)
		return nil, ctx.Err()
	}
	return &plugin.SampleResult{Role: "assistant", Content: plugin.Text("LLM says: " + req.Messages[0].Content.Text), Model: "test-model"}, nil
}

func (a *asker) Elicit(_ context.Context, req *plugin.ElicitRequest) (*plugin.ElicitResult, error) {
	a.mu.Lock()
	a.elicits = append(a.elicits, req.Message)
	a.mu.Unlock()
	return &plugin.ElicitResult{Action: plugin.ElicitAccept, Content: json.RawMessage(`{"name":"Jane"}`)}, nil
}

func (a *asker) Progress(p, total float64, msg string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.progress = append(a.progress, fmt.Sprintf("%g/%g %s", p, total, msg))
}

func (a *asker) Log(level, msg string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.logs = append(a.logs, level+" "+msg)
}

func (a *asker) seen() (samples, elicits, progress, logs []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.samples, a.elicits, a.progress, a.logs
}

// sessionHost is a pipeline over the test plugin (mode) granting the
// client rights, with "ask" and "report" loaded as tools granted both
// (with limits), and "unasked" and "quiet", the ask and report tools
// granted neither; the plugins of modes other than "serve" serve only
// "echo".
func sessionHost(t *testing.T, mode string, limits plugin.Limits) *plugin.Host {
	t.Helper()
	grants := plugin.Capabilities{Subprocess: true, Sampling: true, Elicitation: true}
	h, err := plugin.NewHost(plugin.Options{Grants: grants, Approver: plugin.ApproveAll, Adapters: []plugin.Adapter{newTestAdapter(t, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	mark := newMark(t)
	tools := map[string]string{"ask": "ask", "report": "report", "unasked": "ask", "quiet": "report", "echo": "echo"}
	if mode != "serve" {
		tools = map[string]string{"echo": "echo"}
	}
	for name, tool := range tools {
		sp := *testSpec(testPluginSum(), tool, mode, mark)
		sp.Name, sp.Limits = name, limits
		if name != "unasked" && name != "quiet" {
			sp.Capabilities.Sampling, sp.Capabilities.Elicitation = true, true
		}
		if err := h.Load(t.Context(), sp); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func invokeWith(t *testing.T, h *plugin.Host, tool, args string, a *asker) (*plugin.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	call := plugin.Call{Name: tool, Arguments: json.RawMessage(args)}
	if a != nil {
		call.Client, call.Notify = a, a
	}
	return h.Invoke(ctx, call)
}

// TestPluginReports: what a subprocess plugin reports while it runs
// (shared.Progress, shared.Log) reaches the caller through the pipeline's
// notifier — progress that does not increase dropped — and a call nobody
// listens to is made without a session, where reporting is ErrNoHost.
func TestPluginReports(t *testing.T) {
	t.Parallel()
	h := sessionHost(t, "serve", plugin.Limits{})
	a := &asker{}
	res, err := invokeWith(t, h, "report", `{"text":"x"}`, a)
	if err != nil || res.TextContent() != "[<nil> <nil> <nil> <nil>]" {
		t.Fatalf("report: %v %q", err, res.TextContent())
	}
	_, _, progress, logs := a.seen()
	if want := []string{"1/3 one x", "3/3 three"}; fmt.Sprint(progress) != fmt.Sprint(want) {
		t.Errorf("progress %q, want %q", progress, want)
	}
	if want := []string{"warning log x"}; fmt.Sprint(logs) != fmt.Sprint(want) {
		t.Errorf("logs %q, want %q", logs, want)
	}
	res, err = invokeWith(t, h, "quiet", `{"text":"x"}`, nil)
	if err != nil || !strings.Contains(res.TextContent(), "no host to report to") {
		t.Fatalf("report with nobody listening: %v %q, want ErrNoHost", err, res.TextContent())
	}
}

// TestPluginAsksClient: shared.Sample and shared.Elicit reach the caller's
// client through the pipeline, which refuses a tool granted neither right
// and a call with no client, as it does for wasm tools.
func TestPluginAsksClient(t *testing.T) {
	t.Parallel()
	h := sessionHost(t, "serve", plugin.Limits{})
	a := &asker{}
	res, err := invokeWith(t, h, "ask", `{"op":"sample","text":"hello"}`, a)
	if err != nil || !strings.Contains(res.TextContent(), `"text":"LLM says: hello"`) {
		t.Fatalf("sample: %v %q", err, res.TextContent())
	}
	res, err = invokeWith(t, h, "ask", `{"op":"elicit","text":"your name?"}`, a)
	if err != nil || !strings.Contains(res.TextContent(), `"action":"accept"`) || !strings.Contains(res.TextContent(), `"name":"Jane"`) {
		t.Fatalf("elicit: %v %q", err, res.TextContent())
	}
	res, err = invokeWith(t, h, "ask", `{"op":"parallel","n":8}`, a)
	if err != nil || res.TextContent() != "LLM says: 0|LLM says: 1|LLM says: 2|LLM says: 3|LLM says: 4|LLM says: 5|LLM says: 6|LLM says: 7" {
		t.Fatalf("8 asks at once: %v %q", err, res.TextContent())
	}
	samples, elicits, _, _ := a.seen()
	if len(samples) != 9 || len(elicits) != 1 {
		t.Errorf("the client saw %d samples and %d elicitations, want 9 and 1", len(samples), len(elicits))
	}
	for _, c := range []struct {
		name, tool string
		client     *asker
		want       string
	}{
		{"not granted", "unasked", &asker{}, "refused CAPABILITY_DENIED"},
		{"no client", "ask", nil, "refused CAPABILITY_DENIED"},
	} {
		res, err := invokeWith(t, h, c.tool, `{"op":"sample","text":"hi"}`, c.client)
		// A tool's error result is also the call's error.
		if res == nil || !res.IsError || !strings.Contains(res.TextContent(), c.want) || plugin.CodeOf(err) != plugin.CodeToolExecutionFailed {
			t.Errorf("%s: %v %+v, want an error result with %q", c.name, err, res, c.want)
		}
		if c.client != nil {
			if s, _, _, _ := c.client.seen(); len(s) != 0 {
				t.Errorf("%s: %d requests reached the client", c.name, len(s))
			}
		}
	}
}

// TestPluginFloodsClient: a plugin asking in a loop gets client_requests
// requests through; the next ends the call with LIMIT_EXCEEDED
// (client_requests), and the plugin serves the next call.
func TestPluginFloodsClient(t *testing.T) {
	t.Parallel()
	h := sessionHost(t, "serve", plugin.Limits{ClientRequests: 5})
	a := &asker{}
	_, err := invokeWith(t, h, "ask", `{"op":"flood","n":1000}`, a)
	if !errors.Is(err, &plugin.Error{Code: plugin.CodeLimitExceeded, Limit: "client_requests"}) {
		t.Fatalf("flood: %v, want LIMIT_EXCEEDED (client_requests)", err)
	}
	if s, _, _, _ := a.seen(); len(s) != 5 {
		t.Errorf("%d requests reached the client, want the limit of 5", len(s))
	}
	if res, err := invokeWith(t, h, "echo", `{"text":"next"}`, a); err != nil || res.TextContent() != "echo: next" {
		t.Errorf("the next call: %v %v", err, res)
	}
}

// TestPluginWaitsForClient: a client that never answers holds the call
// until its deadline and no longer, and its request is cancelled.
func TestPluginWaitsForClient(t *testing.T) {
	t.Parallel()
	h := sessionHost(t, "serve", plugin.Limits{Timeout: time.Second})
	a := &asker{block: true, ended: make(chan struct{})}
	start := time.Now()
	_, err := invokeWith(t, h, "ask", `{"op":"sample","text":"anyone?"}`, a)
	if !errors.Is(err, plugin.ErrToolExecutionTimeout) {
		t.Errorf("a client that never answers: %v, want TOOL_EXECUTION_TIMEOUT", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the call took %v with a 1s timeout", took)
	}
	select {
	case <-a.ended:
	case <-time.After(3 * time.Second):
		t.Error("the client's request was not cancelled")
	}
	if res, err := invokeWith(t, h, "echo", `{"text":"next"}`, &asker{}); err != nil || res.TextContent() != "echo: next" {
		t.Errorf("the next call: %v %v", err, res)
	}
}

// TestPluginWithoutSession: a plugin that does not serve CallToolSession
// (built before it, or in a language without it) still serves calls that
// have a listener and a client: the host falls back to CallTool.
func TestPluginWithoutSession(t *testing.T) {
	t.Parallel()
	a := newTestAdapter(t, nil)
	tool := load(t, a, testSpec(testPluginSum(), "echo", "nosession", newMark(t)))
	for i := range 2 {
		res, err := tool.Call(t.Context(), &plugin.Request{ID: "t", Name: "echo", Arguments: json.RawMessage(`{}`), Notify: &asker{}})
		if err != nil || res.TextContent() != "old plugin" {
			t.Fatalf("call %d: %v %v", i, err, res)
		}
	}
	// The process's answer is remembered: later calls go straight to
	// CallTool.
	pt := tool.(*pluginTool)
	pt.mu.Lock()
	p := pt.cur
	pt.mu.Unlock()
	if p == nil || !p.noSession.Load() {
		t.Error("the plugin's lack of CallToolSession was not remembered")
	}
}

// TestSilentSession: a plugin that ends the call's session without a
// result fails that call with a clear error, and serves the next.
func TestSilentSession(t *testing.T) {
	t.Parallel()
	h := sessionHost(t, "silentsession", plugin.Limits{})
	for i := range 2 {
		_, err := invokeWith(t, h, "echo", `{}`, &asker{})
		if plugin.CodeOf(err) != plugin.CodeToolExecutionFailed || !strings.Contains(err.Error(), "ended the call session without a result") {
			t.Fatalf("call %d: %v, want TOOL_EXECUTION_FAILED naming the missing result", i, err)
		}
	}
}

// TestRogueSession: a plugin that sends malformed notifications and asks
// of an unknown kind, over the size cap, or not JSON gets a clear answer
// to each ask, nothing reaches the client, and the call completes.
func TestRogueSession(t *testing.T) {
	t.Parallel()
	h := sessionHost(t, "roguesession", plugin.Limits{})
	a := &asker{}
	res, err := invokeWith(t, h, "echo", `{}`, a)
	if err != nil {
		t.Fatal(err)
	}
	got := res.TextContent()
	for _, want := range []string{
		`1={"error":"unknown kind of request \"telepathy\"`,
		`2={"error":"the request is 1151056B; at most 1MiB may go to the client","code":"INVALID_REQUEST"}`,
		`3={"error":"malformed elicitation request:`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("answers %q lack %q", got, want)
		}
	}
	if s, e, p, l := a.seen(); len(s)+len(e)+len(p)+len(l) != 0 {
		t.Errorf("reached the caller: %q %q %q %q", s, e, p, l)
	}
}
