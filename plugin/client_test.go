package plugin_test

import (
	"bytes"
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

// peer is a caller's Client that keeps what reaches it and answers as told.
// (The MCP client a user meets is tested in package mcp.)
type peer struct {
	mu      sync.Mutex
	samples []plugin.SampleRequest
	elicits []plugin.ElicitRequest

	sample func(context.Context, *plugin.SampleRequest) (*plugin.SampleResult, error)
	elicit func(context.Context, *plugin.ElicitRequest) (*plugin.ElicitResult, error)
}

func (p *peer) Sample(ctx context.Context, req *plugin.SampleRequest) (*plugin.SampleResult, error) {
	p.mu.Lock()
	p.samples = append(p.samples, *req)
	p.mu.Unlock()
	if p.sample != nil {
		return p.sample(ctx, req)
	}
	return &plugin.SampleResult{Role: "assistant", Content: plugin.Text("an answer"), Model: "test-model", StopReason: "endTurn"}, nil
}

func (p *peer) Elicit(ctx context.Context, req *plugin.ElicitRequest) (*plugin.ElicitResult, error) {
	p.mu.Lock()
	p.elicits = append(p.elicits, *req)
	p.mu.Unlock()
	if p.elicit != nil {
		return p.elicit(ctx, req)
	}
	return &plugin.ElicitResult{Action: plugin.ElicitAccept, Content: json.RawMessage(`{"name":"Ada"}`)}, nil
}

func (p *peer) counts() (int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.samples), len(p.elicits)
}

const form = `{"type":"object","properties":{"name":{"type":"string","title":"Name","default":"John Doe"}},"required":["name"]}`

func question(text string) *plugin.SampleRequest {
	return &plugin.SampleRequest{Messages: []plugin.SamplingMessage{{Role: "user", Content: plugin.Text(text)}}, MaxTokens: 100}
}

// asker is a tool that samples once and elicits once, and answers with
// what it got (or the first error).
func asker() plugin.Tool {
	return fn(`{"type":"object"}`, func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
		s, err := req.Client.Sample(ctx, question("What is 2+2?"))
		if err != nil {
			return nil, err
		}
		e, err := req.Client.Elicit(ctx, &plugin.ElicitRequest{Message: "Your name?", RequestedSchema: json.RawMessage(form)})
		if err != nil {
			return nil, err
		}
		return textResult(s.Content.Text + " | " + e.Action + " " + string(e.Content)), nil
	})
}

var clientCaps = plugin.Capabilities{Sampling: true, Elicitation: true}

// TestClientGrants: asking the caller's client is a right: a tool must
// declare it and the host grant it (composition rule), and a tool without
// it is refused before anything reaches the client.
func TestClientGrants(t *testing.T) {
	h := newHost(t, plugin.Options{})
	err := h.Register(plugin.Spec{Name: "greedy", Capabilities: clientCaps}, asker())
	if !errors.Is(err, plugin.ErrCapabilityDenied) || !strings.Contains(err.Error(), "client.sampling") || !strings.Contains(err.Error(), "client.elicitation") {
		t.Fatalf("registering a tool declaring ungranted client rights: %v", err)
	}

	h = newHost(t, plugin.Options{Grants: clientCaps})
	mustRegister(t, h, plugin.Spec{Name: "plain", Tier: plugin.TierReadOnly}, asker())
	mustRegister(t, h, plugin.Spec{Name: "elicitor", Tier: plugin.TierReadOnly, Capabilities: plugin.Capabilities{Elicitation: true}}, asker())
	for _, name := range []string{"plain", "elicitor"} {
		p := &peer{}
		c := call(name, `{}`)
		c.Client = p
		_, err := invoke(t, h, c)
		if !errors.Is(err, plugin.ErrCapabilityDenied) || !strings.Contains(err.Error(), `capabilities = ["client.sampling"]`) {
			t.Errorf("%s sampling: %v, want CAPABILITY_DENIED naming client.sampling", name, err)
		}
		if s, e := p.counts(); s+e != 0 {
			t.Errorf("%s: %d samples and %d elicitations reached the client", name, s, e)
		}
	}
}

// TestClientNobodyToAsk: a call without a client (host call, a nested
// call) answers CAPABILITY_DENIED wrapping ErrNoClient, at once.
func TestClientNobodyToAsk(t *testing.T) {
	h := newHost(t, plugin.Options{Grants: plugin.Capabilities{Sampling: true, Elicitation: true, Invoke: []string{"*"}}})
	mustRegister(t, h, plugin.Spec{Name: "asker", Tier: plugin.TierReadOnly, Capabilities: clientCaps}, asker())
	mustRegister(t, h, plugin.Spec{Name: "outer", Tier: plugin.TierReadOnly, Capabilities: plugin.Capabilities{Invoke: []string{"asker"}}},
		fn(`{"type":"object"}`, func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
			return req.Invoker.Invoke(ctx, plugin.Call{Name: "asker"})
		}))
	start := time.Now()
	_, err := invoke(t, h, call("asker", `{}`))
	if !errors.Is(err, plugin.ErrCapabilityDenied) || !errors.Is(err, plugin.ErrNoClient) || !strings.Contains(err.Error(), "did not come from an MCP client") {
		t.Errorf("sampling without a client: %v", err)
	}
	p := &peer{}
	c := call("outer", `{}`)
	c.Client = p
	_, err = invoke(t, h, c)
	if !errors.Is(err, plugin.ErrCapabilityDenied) || !strings.Contains(err.Error(), "no client to ask") {
		t.Errorf("sampling from a nested call: %v", err)
	}
	if s, e := p.counts(); s+e != 0 || time.Since(start) > 5*time.Second {
		t.Errorf("a nested call reached the outer call's client (%d, %d), or waited", s, e)
	}
}

// TestClientAsks: a granted tool's requests reach the caller's client with
// the call's secrets redacted from what goes out (texts, the form's
// schema) and from what comes back; the schema's defaults and enums pass
// as written; the audit record counts what reached the client.
func TestClientAsks(t *testing.T) {
	const secret = "sk-live-98765"
	var audit bytes.Buffer
	h := newHost(t, plugin.Options{
		Grants:  plugin.Capabilities{Sampling: true, Elicitation: true, Secrets: []string{"KEY"}},
		Secrets: plugin.SecretFunc(func(context.Context, string) (string, error) { return secret, nil }),
		Auditor: plugin.NewAuditLog(&audit),
	})
	schema := `{"type":"object","properties":{` +
		`"status":{"type":"string","enum":["active","inactive"],"default":"active","description":"not ` + secret + `"},` +
		`"tags":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"},{"const":"b","title":"B"}]}},` +
		`"age":{"type":"integer","default":30}}}`
	mustRegister(t, h, plugin.Spec{Name: "asker", Tier: plugin.TierReadOnly, Capabilities: plugin.Capabilities{Sampling: true, Elicitation: true, Secrets: []string{"KEY"}}},
		fn(`{"type":"object"}`, func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
			s, err := req.Client.Sample(ctx, &plugin.SampleRequest{
				Messages:     []plugin.SamplingMessage{{Role: "user", Content: plugin.Text("the key is " + secret)}},
				SystemPrompt: "keep " + secret, MaxTokens: 50, StopSequences: []string{secret},
			})
			if err != nil {
				return nil, err
			}
			e, err := req.Client.Elicit(ctx, &plugin.ElicitRequest{Message: "Status for " + secret + "?", RequestedSchema: json.RawMessage(schema)})
			if err != nil {
				return nil, err
			}
			return textResult(s.Content.Text + " | " + s.Model + " | " + e.Action + " " + string(e.Content)), nil
		}))
	p := &peer{
		sample: func(context.Context, *plugin.SampleRequest) (*plugin.SampleResult, error) {
			return &plugin.SampleResult{Role: "assistant", Content: plugin.Text("echo " + secret), Model: "m"}, nil
		},
		elicit: func(context.Context, *plugin.ElicitRequest) (*plugin.ElicitResult, error) {
			return &plugin.ElicitResult{Action: "accept", Content: json.RawMessage(`{"status":"inactive","tags":["a","b"],"age":` + "41" + `,"note":"` + secret + `"}`)}, nil
		},
	}
	c := call("asker", `{}`)
	c.Client = p
	res, err := invoke(t, h, c)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.TextContent(); strings.Contains(got, secret) || !strings.HasPrefix(got, "echo [REDACTED:KEY] | m | accept ") || !strings.Contains(got, `"note":"[REDACTED:KEY]"`) || !strings.Contains(got, `"age":41`) {
		t.Errorf("the tool got %q: the answers, with the secret redacted", got)
	}
	if len(p.samples) != 1 || len(p.elicits) != 1 {
		t.Fatalf("%d samples, %d elicitations reached the client, want 1 and 1", len(p.samples), len(p.elicits))
	}
	s := p.samples[0]
	if s.Messages[0].Content.Text != "the key is [REDACTED:KEY]" || s.SystemPrompt != "keep [REDACTED:KEY]" || s.StopSequences[0] != "[REDACTED:KEY]" || s.MaxTokens != 50 {
		t.Errorf("the sampling request reached the client as %+v", s)
	}
	e := p.elicits[0]
	if e.Message != "Status for [REDACTED:KEY]?" {
		t.Errorf("the elicitation message reached the client as %q", e.Message)
	}
	var sent, wrote map[string]any
	if err := json.Unmarshal(e.RequestedSchema, &sent); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(strings.ReplaceAll(schema, secret, "[REDACTED:KEY]")), &wrote); err != nil {
		t.Fatal(err)
	}
	if a, b := mustJSON(t, sent), mustJSON(t, wrote); a != b {
		t.Errorf("the schema reached the client as\n %s\nwant (the tool's, redacted)\n %s", a, b)
	}
	var rec plugin.AuditRecord
	if err := json.Unmarshal(audit.Bytes(), &rec); err != nil || rec.Samples != 1 || rec.Elicitations != 1 || strings.Contains(audit.String(), secret) {
		t.Errorf("audit line %s: want samples 1, elicitations 1, no secret (%v)", audit.String(), err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestClientRefusesBadRequests: what a tool may not send (malformed,
// oversized, a nested form) and what a client may not answer (a form that
// breaks the schema, an unknown action) are refused with a message the tool
// can act on; nothing malformed reaches the client.
func TestClientRefusesBadRequests(t *testing.T) {
	big := strings.Repeat("x", plugin.MaxClientMessage)
	for _, tc := range []struct {
		name    string
		sample  *plugin.SampleRequest
		elicit  *plugin.ElicitRequest
		answer  *plugin.ElicitResult
		code    plugin.Code
		want    string
		reached bool
	}{
		{name: "no messages", sample: &plugin.SampleRequest{MaxTokens: 10}, code: plugin.CodeInvalidRequest, want: "at least one message"},
		{name: "no maxTokens", sample: &plugin.SampleRequest{Messages: question("hi").Messages}, code: plugin.CodeInvalidRequest, want: "maxTokens"},
		{name: "bad role", sample: &plugin.SampleRequest{Messages: []plugin.SamplingMessage{{Role: "system", Content: plugin.Text("x")}}, MaxTokens: 1}, code: plugin.CodeInvalidRequest, want: `role is "system"`},
		{name: "image without data", sample: &plugin.SampleRequest{Messages: []plugin.SamplingMessage{{Role: "user", Content: plugin.Content{Type: "image"}}}, MaxTokens: 1}, code: plugin.CodeInvalidRequest, want: "needs data"},
		{name: "oversized sample", sample: question(big), code: plugin.CodeInvalidRequest, want: "over the 1MiB"},
		{name: "no message", elicit: &plugin.ElicitRequest{RequestedSchema: json.RawMessage(form)}, code: plugin.CodeInvalidRequest, want: "message"},
		{name: "not an object schema", elicit: &plugin.ElicitRequest{Message: "?", RequestedSchema: json.RawMessage(`{"type":"string"}`)}, code: plugin.CodeInvalidRequest, want: `"type": "object"`},
		{name: "nested form", elicit: &plugin.ElicitRequest{Message: "?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string"}}}}}`)}, code: plugin.CodeInvalidRequest, want: `property "a" has type object`},
		{name: "oversized form", elicit: &plugin.ElicitRequest{Message: big[:70<<10], RequestedSchema: json.RawMessage(form)}, code: plugin.CodeInvalidRequest, want: "over the 64KiB"},
		{name: "answer breaks schema", elicit: &plugin.ElicitRequest{Message: "?", RequestedSchema: json.RawMessage(form)},
			answer: &plugin.ElicitResult{Action: "accept", Content: json.RawMessage(`{"name":7}`)}, code: plugin.CodeToolExecutionFailed, want: "does not match the requested schema", reached: true},
		{name: "unknown action", elicit: &plugin.ElicitRequest{Message: "?", RequestedSchema: json.RawMessage(form)},
			answer: &plugin.ElicitResult{Action: "maybe"}, code: plugin.CodeToolExecutionFailed, want: `action "maybe"`, reached: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, plugin.Options{Grants: clientCaps})
			mustRegister(t, h, plugin.Spec{Name: "t", Tier: plugin.TierReadOnly, Capabilities: clientCaps},
				fn(`{"type":"object"}`, func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
					var err error
					if tc.sample != nil {
						_, err = req.Client.Sample(ctx, tc.sample)
					} else {
						_, err = req.Client.Elicit(ctx, tc.elicit)
					}
					return nil, err
				}))
			p := &peer{elicit: func(context.Context, *plugin.ElicitRequest) (*plugin.ElicitResult, error) { return tc.answer, nil }}
			c := call("t", `{}`)
			c.Client = p
			_, err := invoke(t, h, c)
			if plugin.CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %s mentioning %q", err, tc.code, tc.want)
			}
			if s, e := p.counts(); (s+e > 0) != tc.reached {
				t.Errorf("%d requests reached the client; want reached=%v", s+e, tc.reached)
			}
		})
	}
}

// TestClientRequestsCapped: a tool asking in a loop gets client_requests
// requests through, then LIMIT_EXCEEDED naming the limit; the client sees
// no more.
func TestClientRequestsCapped(t *testing.T) {
	h := newHost(t, plugin.Options{Grants: clientCaps})
	var errs []error
	mustRegister(t, h, plugin.Spec{Name: "flood", Tier: plugin.TierReadOnly, Capabilities: clientCaps, Limits: plugin.Limits{ClientRequests: 3}},
		fn(`{"type":"object"}`, func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
			for i := 0; i < 100; i++ {
				_, err := req.Client.Sample(ctx, question("again"))
				errs = append(errs, err)
			}
			return textResult("done"), nil
		}))
	p := &peer{}
	c := call("flood", `{}`)
	c.Client = p
	if _, err := invoke(t, h, c); err != nil {
		t.Fatal(err)
	}
	if s, _ := p.counts(); s != 3 {
		t.Errorf("%d requests reached the client, want the limit of 3", s)
	}
	if errs[2] != nil || !errors.Is(errs[3], &plugin.Error{Code: plugin.CodeLimitExceeded, Limit: "client_requests"}) || !errors.Is(errs[99], plugin.ErrLimitExceeded) {
		t.Errorf("errors: 3rd %v, 4th %v, 100th %v", errs[2], errs[3], errs[99])
	}
}

// TestClientDeadline: a client that never answers holds the tool no longer
// than the call's timeout: the request fails with TOOL_EXECUTION_TIMEOUT,
// the client's context is cancelled, and a request the tool makes after
// its call returned is refused.
func TestClientDeadline(t *testing.T) {
	h := newHost(t, plugin.Options{Grants: clientCaps})
	var kept plugin.Client
	asked := make(chan error, 1)
	mustRegister(t, h, plugin.Spec{Name: "waits", Tier: plugin.TierReadOnly, Capabilities: clientCaps, Limits: plugin.Limits{Timeout: 300 * time.Millisecond}},
		fn(`{"type":"object"}`, func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
			kept = req.Client
			_, err := req.Client.Elicit(ctx, &plugin.ElicitRequest{Message: "?", RequestedSchema: json.RawMessage(form)})
			asked <- err
			return nil, err
		}))
	cancelled := make(chan struct{})
	p := &peer{elicit: func(ctx context.Context, _ *plugin.ElicitRequest) (*plugin.ElicitResult, error) {
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	}}
	c := call("waits", `{}`)
	c.Client = p
	start := time.Now()
	_, err := invoke(t, h, c)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the call took %v with a 300ms timeout", took)
	}
	// The host answers at the deadline; the tool's goroutine ends when its
	// request does.
	var askErr error
	select {
	case askErr = <-asked:
	case <-time.After(3 * time.Second):
		t.Fatal("the tool's request did not end after the deadline")
	}
	if !errors.Is(err, plugin.ErrToolExecutionTimeout) || !errors.Is(askErr, plugin.ErrToolExecutionTimeout) || !strings.Contains(askErr.Error(), "deadline passed while the client was being asked") {
		t.Errorf("call: %v; the tool's request: %v; want TOOL_EXECUTION_TIMEOUT", err, askErr)
	}
	select {
	case <-cancelled:
	case <-time.After(time.Second):
		t.Error("the client's context was not cancelled")
	}
	if _, err := kept.Sample(context.Background(), question("late")); err == nil || !strings.Contains(err.Error(), "has returned") {
		t.Errorf("a request after the call returned: %v", err)
	}
	if _, err := kept.Elicit(context.Background(), &plugin.ElicitRequest{Message: "?", RequestedSchema: json.RawMessage(form)}); err == nil {
		t.Error("an elicitation after the call returned was let through")
	}
	if _, e := p.counts(); e != 1 {
		t.Errorf("%d elicitations reached the client, want 1", e)
	}
}

// TestClientErrors: a client's failure reaches the tool as
// TOOL_EXECUTION_FAILED with the call's secrets redacted from its message,
// and a client's ErrNoClient (a client without the capability) as
// CAPABILITY_DENIED.
func TestClientErrors(t *testing.T) {
	const secret = "hunter2-hunter2"
	h := newHost(t, plugin.Options{
		Grants:  plugin.Capabilities{Sampling: true, Elicitation: true, Secrets: []string{"PW"}},
		Secrets: plugin.SecretFunc(func(context.Context, string) (string, error) { return secret, nil }),
	})
	mustRegister(t, h, plugin.Spec{Name: "asker", Tier: plugin.TierReadOnly, Capabilities: plugin.Capabilities{Sampling: true, Elicitation: true, Secrets: []string{"PW"}}}, asker())
	for _, tc := range []struct {
		err  error
		code plugin.Code
		want string
	}{
		{errors.New("user rejected the request, pw " + secret), plugin.CodeToolExecutionFailed, "the client did not answer for sampling: user rejected the request, pw [REDACTED:PW]"},
		{errors.Join(plugin.ErrNoClient, errors.New("the MCP client did not declare sampling")), plugin.CodeCapabilityDenied, "did not declare sampling"},
	} {
		p := &peer{sample: func(context.Context, *plugin.SampleRequest) (*plugin.SampleResult, error) { return nil, tc.err }}
		c := call("asker", `{}`)
		c.Client = p
		_, err := invoke(t, h, c)
		if plugin.CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), secret) {
			t.Errorf("client error %q reached the caller as %v, want %s with %q", tc.err, err, tc.code, tc.want)
		}
	}
}

// FuzzClientRequests feeds arbitrary JSON, as a guest's toolhost_sample or
// toolhost_elicit would pass it, and an arbitrary answer through a tool's
// Request.Client. The pipeline must not panic; what reaches the client
// must be within the caps (a sampling request with messages and maxTokens,
// a form with a message and an object schema), never hold the call's
// secret, and the tool must get either an answer or an *Error with a code.
func FuzzClientRequests(f *testing.F) {
	for _, seed := range []struct{ req, answer string }{
		{`{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":10}`, `{"action":"accept","content":{"name":"x"}}`},
		{`{"message":"Name?","requestedSchema":` + form + `}`, `{"action":"accept","content":{"name":"Ada"}}`},
		{`{"message":"?","requestedSchema":{"type":"object","properties":{"t":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"}]}}}}}`, `{"action":"accept","content":{"t":["a"]}}`},
		{`{"message":"sk-fuzz-secret","requestedSchema":{"type":"object","properties":{"a":{"type":"string","default":"sk-fuzz-secret"}}}}`, `{"action":"decline"}`},
		{`{"messages":[{"role":"assistant","content":{"type":"image","data":"aGk=","mimeType":"image/png"}}],"maxTokens":1,"temperature":1e308}`, `{"action":"maybe"}`},
		{`{"messages":[],"maxTokens":-1}`, `{}`}, {`{"message":"","requestedSchema":null}`, `null`},
		{`{"requestedSchema":{"type":"object","properties":{"a":{"type":"object","properties":{}}}},"message":"x"}`, `{"action":"accept","content":[]}`},
		{`[`, `{"action":"accept","content":{"name":1e999}}`},
	} {
		f.Add([]byte(seed.req), []byte(seed.answer))
	}
	const secret = "sk-fuzz-secret"
	h, err := plugin.NewHost(plugin.Options{
		Grants:  plugin.Capabilities{Sampling: true, Elicitation: true, Secrets: []string{"K"}},
		Secrets: plugin.SecretFunc(func(context.Context, string) (string, error) { return secret, nil }),
	})
	if err != nil {
		f.Fatal(err)
	}
	defer h.Close()
	type input struct{ req, answer []byte }
	var cur input
	err = h.Register(plugin.Spec{Name: "t", Tier: plugin.TierReadOnly, Capabilities: plugin.Capabilities{Sampling: true, Elicitation: true, Secrets: []string{"K"}}},
		fn(`{"type":"object"}`, func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
			var s plugin.SampleRequest
			var e plugin.ElicitRequest
			var errs []error
			if json.Unmarshal(cur.req, &s) == nil {
				_, err := req.Client.Sample(ctx, &s)
				errs = append(errs, err)
			}
			if json.Unmarshal(cur.req, &e) == nil {
				_, err := req.Client.Elicit(ctx, &e)
				errs = append(errs, err)
			}
			for _, err := range errs {
				var pe *plugin.Error
				if err != nil && !errors.As(err, &pe) {
					return nil, fmt.Errorf("not an *Error: %w", err)
				}
			}
			return textResult("ok"), nil
		}))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, req, answer []byte) {
		cur = input{req, answer}
		p := &peer{
			sample: func(context.Context, *plugin.SampleRequest) (*plugin.SampleResult, error) {
				var r plugin.SampleResult
				if err := json.Unmarshal(answer, &r); err != nil {
					return nil, err
				}
				return &r, nil
			},
			elicit: func(context.Context, *plugin.ElicitRequest) (*plugin.ElicitResult, error) {
				var r plugin.ElicitResult
				if err := json.Unmarshal(answer, &r); err != nil {
					return nil, err
				}
				return &r, nil
			},
		}
		res, err := h.Invoke(context.Background(), plugin.Call{Name: "t", Arguments: json.RawMessage(`{}`), Client: p})
		if err != nil {
			if strings.Contains(err.Error(), "not an *Error") || strings.Contains(err.Error(), "panic") {
				t.Fatalf("the tool got %v", err)
			}
		} else if res.TextContent() != "ok" {
			t.Fatalf("result %q", res.TextContent())
		}
		for _, s := range p.samples {
			b, _ := json.Marshal(s)
			if len(s.Messages) == 0 || s.MaxTokens <= 0 || len(b) > plugin.MaxClientMessage || bytes.Contains(b, []byte(secret)) {
				t.Fatalf("sent to the client: %.300s", b)
			}
		}
		for _, e := range p.elicits {
			b, _ := json.Marshal(e)
			var top struct{ Type string }
			if e.Message == "" || json.Unmarshal(e.RequestedSchema, &top) != nil || top.Type != "object" || len(b) > 128<<10 || bytes.Contains(b, []byte(secret)) {
				t.Fatalf("sent to the client: %.300s", b)
			}
		}
	})
}

// TestClientAnswer: the answer a tool gets, in either tier, for what its
// request to the client came to; only a passed limit ends the call.
func TestClientAnswer(t *testing.T) {
	for _, c := range []struct {
		name string
		res  any
		err  error
		want string
		stop bool
	}{
		{"result", &plugin.ElicitResult{Action: plugin.ElicitDecline}, nil, `{"result":{"action":"decline"}}`, false},
		{"refused", nil, plugin.Errorf(plugin.CodeCapabilityDenied, "not granted"), `{"error":"not granted","code":"CAPABILITY_DENIED"}`, false},
		{"plain error", nil, errors.New("boom"), `{"error":"boom","code":"TOOL_EXECUTION_FAILED"}`, false},
		{"limit", nil, plugin.LimitError("client_requests", "too many"), `{"error":"too many","code":"LIMIT_EXCEEDED","limit":"client_requests"}`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, stop := plugin.ClientAnswer(c.res, c.err)
			if string(b) != c.want {
				t.Errorf("answer %s, want %s", b, c.want)
			}
			if (stop != nil) != c.stop || stop != nil && (stop.Code != plugin.CodeLimitExceeded || stop.Limit != "client_requests") {
				t.Errorf("stop = %v, want stop %v", stop, c.stop)
			}
		})
	}
}

// TestClientLeavesAnswerAlone: the pipeline does not write into what the
// caller's client returns (a client may hand every call the same answer):
// an accepted form without content reaches the tool as {} while the
// client's answer stays as it was.
func TestClientLeavesAnswerAlone(t *testing.T) {
	h := newHost(t, plugin.Options{Grants: clientCaps})
	mustRegister(t, h, plugin.Spec{Name: "elicitor", Tier: plugin.TierReadOnly, Capabilities: clientCaps},
		fn(`{"type":"object"}`, func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
			e, err := req.Client.Elicit(ctx, &plugin.ElicitRequest{Message: "Anything?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"note":{"type":"string"}}}`)})
			if err != nil {
				return nil, err
			}
			return textResult(e.Action + " " + string(e.Content)), nil
		}))
	shared := &plugin.ElicitResult{Action: plugin.ElicitAccept}
	c := call("elicitor", `{}`)
	c.Client = &peer{elicit: func(context.Context, *plugin.ElicitRequest) (*plugin.ElicitResult, error) { return shared, nil }}
	res, err := invoke(t, h, c)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.TextContent(); got != "accept {}" {
		t.Errorf("the tool got %q, want the empty form as {}", got)
	}
	if shared.Content != nil {
		t.Errorf("the client's answer was changed: its content is now %s", shared.Content)
	}
}

// TestClientRequestEndsWithCall: a request the tool made with a context of
// its own (context.Background in a goroutine) still ends when the call
// returns: the client's context is cancelled and the tool's request fails.
func TestClientRequestEndsWithCall(t *testing.T) {
	h := newHost(t, plugin.Options{Grants: clientCaps})
	asking := make(chan struct{})
	asked := make(chan error, 1)
	mustRegister(t, h, plugin.Spec{Name: "leaves", Tier: plugin.TierReadOnly, Capabilities: clientCaps},
		fn(`{"type":"object"}`, func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
			go func() {
				_, err := req.Client.Sample(context.Background(), question("still there?"))
				asked <- err
			}()
			<-asking
			return textResult("gone"), nil
		}))
	cancelled := make(chan struct{})
	c := call("leaves", `{}`)
	c.Client = &peer{sample: func(ctx context.Context, _ *plugin.SampleRequest) (*plugin.SampleResult, error) {
		close(asking)
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	}}
	if _, err := invoke(t, h, c); err != nil {
		t.Fatal(err)
	}
	select {
	case <-cancelled:
	case <-time.After(3 * time.Second):
		t.Fatal("the client's request outlived the call")
	}
	if err := <-asked; plugin.CodeOf(err) != plugin.CodeToolExecutionFailed || !strings.Contains(err.Error(), "cancelled") {
		t.Errorf("the tool's request after its call returned: %v, want TOOL_EXECUTION_FAILED (cancelled)", err)
	}
}
