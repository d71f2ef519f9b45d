package extism

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/plugin"
)

// clientPeer is the caller's client of these tests: it keeps what reaches
// it and answers as told. (The MCP client is tested in package mcp.)
type clientPeer struct {
	mu      sync.Mutex
	samples []plugin.SampleRequest
	elicits []plugin.ElicitRequest
	block   bool          // wait for the request's context to end
	ended   chan struct{} // closed when a blocked request's context ends
}

func (p *clientPeer) Sample(ctx context.Context, req *plugin.SampleRequest) (*plugin.SampleResult, error) {
	p.mu.Lock()
	p.samples = append(p.samples, *req)
	p.mu.Unlock()
	if p.block {
		<-ctx.Done()
		close(p.ended)
		return nil, ctx.Err()
	}
	return &plugin.SampleResult{Role: "assistant", Content: plugin.Text("LLM says: " + req.Messages[0].Content.Text), Model: "test-model", StopReason: "endTurn"}, nil
}

func (p *clientPeer) Elicit(_ context.Context, req *plugin.ElicitRequest) (*plugin.ElicitResult, error) {
	p.mu.Lock()
	p.elicits = append(p.elicits, *req)
	p.mu.Unlock()
	return &plugin.ElicitResult{Action: plugin.ElicitAccept, Content: json.RawMessage(`{"name":"Jane Smith","status":"inactive","tags":["a"]}`)}, nil
}

func (p *clientPeer) counts() (int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.samples), len(p.elicits)
}

// clientHost is a host that grants the client rights, with the hostile
// guest's client tool loaded as "client" (granted both, with limits) and
// as "unasked" (granted neither).
func clientHost(t *testing.T, limits plugin.Limits) *plugin.Host {
	t.Helper()
	a, err := New(Config{CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	h, err := plugin.NewHost(plugin.Options{Adapters: []plugin.Adapter{a}, Grants: plugin.Capabilities{Sampling: true, Elicitation: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	sp := guestSpec("hostile", "client")
	sp.Tier = plugin.TierReadOnly
	sp.Capabilities = plugin.Capabilities{Sampling: true, Elicitation: true}
	sp.Limits = limits
	hostLoad(t, h, sp)
	sp = guestSpec("hostile", "client")
	sp.Name, sp.Source.Tool, sp.Tier = "unasked", "client", plugin.TierReadOnly
	hostLoad(t, h, sp)
	return h
}

func askGuest(t *testing.T, h *plugin.Host, tool string, c plugin.Client, args string) (*plugin.Result, error) {
	t.Helper()
	return h.Invoke(context.Background(), plugin.Call{Name: tool, Arguments: json.RawMessage(args), Client: c})
}

// TestGuestAsksClient: guest.Sample and guest.Elicit reach the caller's
// client through toolhost_sample and toolhost_elicit, and the guest gets
// the answers; a form's schema reaches the client as the guest wrote it
// (defaults, enums, titled choices).
func TestGuestAsksClient(t *testing.T) {
	h := clientHost(t, plugin.Limits{})
	p := &clientPeer{}
	res, err := askGuest(t, h, "client", p, `{"mode":"sample","prompt":"What is 2+2?"}`)
	if err != nil || res.IsError {
		t.Fatalf("sample: %v %v", err, res)
	}
	got := structured(t, res)
	if got["text"] != "LLM says: What is 2+2?" || got["model"] != "test-model" || got["role"] != "assistant" || got["stop"] != "endTurn" {
		t.Errorf("the guest got %v", got)
	}
	if s, _ := p.counts(); s != 1 || p.samples[0].MaxTokens != 100 || p.samples[0].Messages[0].Role != "user" {
		t.Errorf("the client got %d samples: %+v", s, p.samples)
	}

	schema := `{"type":"object","properties":{"name":{"type":"string","default":"John Doe"},` +
		`"status":{"type":"string","enum":["active","inactive"],"enumNames":["Active","Inactive"],"default":"active"},` +
		`"tags":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"},{"const":"b","title":"B"}]}}},"required":["name"]}`
	args, _ := json.Marshal(map[string]any{"mode": "elicit", "prompt": "Who are you?", "schema": json.RawMessage(schema)})
	res, err = askGuest(t, h, "client", p, string(args))
	if err != nil || res.IsError {
		t.Fatalf("elicit: %v %v", err, res)
	}
	got = structured(t, res)
	if got["action"] != "accept" || !strings.Contains(string(res.StructuredContent), `"name":"Jane Smith"`) {
		t.Errorf("the guest got %s", res.StructuredContent)
	}
	if _, e := p.counts(); e != 1 || p.elicits[0].Message != "Who are you?" {
		t.Fatalf("the client got %d elicitations: %+v", e, p.elicits)
	}
	var sent, wrote any
	json.Unmarshal(p.elicits[0].RequestedSchema, &sent)
	json.Unmarshal([]byte(schema), &wrote)
	if a, b := jsonText(sent), jsonText(wrote); a != b {
		t.Errorf("the schema reached the client as\n %s\nthe guest wrote\n %s", a, b)
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestGuestClientRefusals: what a guest may not do comes back to it as an
// answer with a code, the call goes on, and nothing reaches the client:
// asking without the grant, asking when the call has no client, an
// oversized request (refused before the host reads it), a request at an
// offset that is no Extism block, a request whose JSON ends early.
func TestGuestClientRefusals(t *testing.T) {
	h := clientHost(t, plugin.Limits{})
	for _, tc := range []struct {
		name, tool, args string
		noClient         bool
		code, want       string
	}{
		{name: "not granted", tool: "unasked", args: `{"mode":"sample","prompt":"hi"}`, code: "CAPABILITY_DENIED", want: `capabilities = ["client.sampling"]`},
		{name: "no client", tool: "client", args: `{"mode":"elicit","prompt":"hi","schema":{"type":"object","properties":{}}}`, noClient: true, code: "CAPABILITY_DENIED", want: "did not come from an MCP client"},
		{name: "oversized", tool: "client", args: `{"mode":"big","n":2000000}`, code: "INVALID_REQUEST", want: "at most 1MiB may go to the client"},
		{name: "just over the cap", tool: "client", args: `{"mode":"big","n":1050000}`, code: "INVALID_REQUEST", want: "over the 1MiB"},
		{name: "bad offset", tool: "client", args: `{"mode":"bad_offset"}`, code: "INVALID_REQUEST", want: "not an Extism memory block"},
		{name: "input ends early", tool: "client", args: `{"mode":"truncated"}`, code: "INVALID_REQUEST", want: "malformed request: unexpected end of JSON input"},
		{name: "bad form", tool: "client", args: `{"mode":"elicit","prompt":"hi","schema":{"type":"object","properties":{"a":{"type":"object"}}}}`, code: "INVALID_REQUEST", want: `property "a" has type object`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &clientPeer{}
			var c plugin.Client = p
			if tc.noClient {
				c = nil
			}
			res, err := askGuest(t, h, tc.tool, c, tc.args)
			if err != nil || res.IsError {
				t.Fatalf("the call failed: %v %v", err, res)
			}
			got := structured(t, res)
			if got["code"] != tc.code || !strings.Contains(got["error"].(string), tc.want) {
				t.Errorf("the guest got %v, want %s mentioning %q", got, tc.code, tc.want)
			}
			if s, e := p.counts(); s+e != 0 {
				t.Errorf("%d requests reached the client", s+e)
			}
		})
	}
	// The host keeps serving.
	p := &clientPeer{}
	if res, err := askGuest(t, h, "client", p, `{"mode":"sample","prompt":"still there?"}`); err != nil || structured(t, res)["text"] != "LLM says: still there?" {
		t.Errorf("after the refusals: %v %v", err, res)
	}
}

// TestGuestFloodsClient: a guest asking in a loop gets client_requests
// requests through; the next stops the call with LIMIT_EXCEEDED
// (client_requests), like every per-call counter.
func TestGuestFloodsClient(t *testing.T) {
	h := clientHost(t, plugin.Limits{ClientRequests: 5})
	p := &clientPeer{}
	res, err := askGuest(t, h, "client", p, `{"mode":"flood","n":1000}`)
	if !errors.Is(err, &plugin.Error{Code: plugin.CodeLimitExceeded, Limit: "client_requests"}) || res.Limit != "client_requests" {
		t.Fatalf("flood: %v %+v, want LIMIT_EXCEEDED (client_requests)", err, res)
	}
	if s, _ := p.counts(); s != 5 {
		t.Errorf("%d requests reached the client, want the limit of 5", s)
	}
}

// TestGuestWaitsForClient: a client that never answers holds the guest
// until the call's deadline and no longer: the call ends with
// TOOL_EXECUTION_TIMEOUT on time, the client's request is cancelled, and
// the host serves the next call.
func TestGuestWaitsForClient(t *testing.T) {
	const timeout = 2 * time.Second
	h := clientHost(t, plugin.Limits{Timeout: timeout})
	// A first call compiles the module and fills the pool, so that on a
	// busy machine the guest still asks well within its deadline.
	if res, err := askGuest(t, h, "client", &clientPeer{}, `{"mode":"sample","prompt":"warm"}`); err != nil || structured(t, res)["text"] != "LLM says: warm" {
		t.Fatalf("the first call: %v %v", err, res)
	}
	p := &clientPeer{block: true, ended: make(chan struct{})}
	start := time.Now()
	_, err := askGuest(t, h, "client", p, `{"mode":"sample","prompt":"anyone?"}`)
	took := time.Since(start)
	if !errors.Is(err, plugin.ErrToolExecutionTimeout) {
		t.Errorf("a client that never answers: %v, want TOOL_EXECUTION_TIMEOUT", err)
	}
	if took > timeout+3*time.Second {
		t.Errorf("the call took %v with a %v timeout", took, timeout)
	}
	if s, _ := p.counts(); s != 1 {
		t.Fatalf("%d requests reached the client before the deadline, want 1", s)
	}
	select {
	case <-p.ended:
	case <-time.After(2 * time.Second):
		t.Error("the client's request was not cancelled")
	}
	q := &clientPeer{}
	if res, err := askGuest(t, h, "client", q, `{"mode":"sample","prompt":"next"}`); err != nil || structured(t, res)["text"] != "LLM says: next" {
		t.Errorf("the next call: %v %v", err, res)
	}
}
