package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/mcp"
	"github.com/toolhost/toolhost/plugin"
)

// The form the asking tool puts to the user: defaults for every primitive
// type (SEP-1034) and the enum forms (SEP-1330).
const askForm = `{"type":"object","properties":{` +
	`"name":{"type":"string","default":"John Doe"},` +
	`"age":{"type":"integer","default":30},` +
	`"score":{"type":"number","default":95.5},` +
	`"verified":{"type":"boolean","default":true},` +
	`"status":{"type":"string","enum":["active","inactive"],"default":"active"},` +
	`"legacy":{"type":"string","enum":["o1","o2"],"enumNames":["One","Two"]},` +
	`"titled":{"type":"string","oneOf":[{"const":"v1","title":"First"},{"const":"v2","title":"Second"}]},` +
	`"multi":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"},{"const":"b","title":"B"}]}}},` +
	`"required":["name"]}`

// askHost serves a tool, "asker", granted client.sampling and
// client.elicitation, that samples, elicits or does both (in that order)
// and answers with what it was told; runs counts its runs.
func askHost(t *testing.T, runs *atomic.Int32) *plugin.Host {
	t.Helper()
	h, err := plugin.NewHost(plugin.Options{Approver: mcp.Approver(nil), Grants: plugin.Capabilities{Sampling: true, Elicitation: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	schema := json.RawMessage(`{"type":"object","properties":{"mode":{"type":"string"}},"required":["mode"]}`)
	err = h.Register(plugin.Spec{Name: "asker", Tier: plugin.TierReadOnly, Capabilities: plugin.Capabilities{Sampling: true, Elicitation: true}, Limits: plugin.Limits{Timeout: time.Second}},
		plugin.Func(plugin.Descriptor{InputSchema: schema}, func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
			runs.Add(1)
			var in struct{ Mode string }
			if err := req.DecodeArguments(&in); err != nil {
				return nil, err
			}
			var out []string
			if in.Mode == "sample" || in.Mode == "both" {
				res, err := req.Client.Sample(ctx, &plugin.SampleRequest{
					Messages:  []plugin.SamplingMessage{{Role: "user", Content: plugin.Text("What is 2+2?")}},
					MaxTokens: 100, SystemPrompt: "Be brief.",
				})
				if err != nil {
					return nil, err
				}
				out = append(out, fmt.Sprintf("LLM said %q (%s, %s)", res.Content.Text, res.Model, res.StopReason))
			}
			if in.Mode == "elicit" || in.Mode == "both" {
				res, err := req.Client.Elicit(ctx, &plugin.ElicitRequest{Message: "Tell me about you", RequestedSchema: json.RawMessage(askForm)})
				if err != nil {
					return nil, err
				}
				out = append(out, fmt.Sprintf("user %s %s", res.Action, res.Content))
			}
			return &plugin.Result{Content: []plugin.Content{plugin.Text(strings.Join(out, "; "))}}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// askTransports runs f over stdio under 2026-07-28 (multi round-trip), over
// stdio under 2025-11-25 and over streamable HTTP (2025-11-25), each with
// a fresh askHost.
func askTransports(t *testing.T, f func(t *testing.T, mrtr bool, runs *atomic.Int32, connect func(clientOptions) *sdk.ClientSession)) {
	for _, tr := range []string{"stdio", "stdio-legacy", "http"} {
		t.Run(tr, func(t *testing.T) {
			var runs atomic.Int32
			f(t, tr == "stdio", &runs, func(o clientOptions) *sdk.ClientSession {
				srv := newServer(t, askHost(t, &runs))
				switch tr {
				case "stdio":
					o.protocol = mrtrProtocol
				case "stdio-legacy":
					o.protocol = legacyProtocol
				case "http":
					url, _ := httpServer(t, srv, mcp.HTTPOptions{})
					return httpSession(t, url, o, "")
				}
				return stdioSession(t, srv, o)
			})
		})
	}
}

// TestToolSamples: a tool's sampling request reaches a real SDK client as
// sampling/createMessage (or, under 2026-07-28, an input request the SDK
// client fulfils and calls again with), and the tool gets the answer.
func TestToolSamples(t *testing.T) {
	askTransports(t, func(t *testing.T, mrtr bool, runs *atomic.Int32, connect func(clientOptions) *sdk.ClientSession) {
		var mu sync.Mutex
		var got []*sdk.CreateMessageParams
		cs := connect(clientOptions{sample: func(_ context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			mu.Lock()
			got = append(got, req.Params)
			mu.Unlock()
			return &sdk.CreateMessageResult{Role: "assistant", Content: &sdk.TextContent{Text: "4"}, Model: "test-model", StopReason: "endTurn"}, nil
		}})
		res := call(t, cs, "asker", map[string]any{"mode": "sample"})
		if res.IsError || callText(t, res) != `LLM said "4" (test-model, endTurn)` {
			t.Errorf("asker = %q (isError %v)", callText(t, res), res.IsError)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 1 {
			t.Fatalf("the client was asked %d times, want once", len(got))
		}
		p := got[0]
		text, _ := p.Messages[0].Content.(*sdk.TextContent)
		if p.MaxTokens != 100 || p.SystemPrompt != "Be brief." || p.Messages[0].Role != "user" || text == nil || text.Text != "What is 2+2?" {
			t.Errorf("the client got %+v", p)
		}
		if want := map[bool]int32{true: 2, false: 1}[mrtr]; runs.Load() != want {
			t.Errorf("the tool ran %d times, want %d", runs.Load(), want)
		}
	})
}

// TestToolElicits: a tool's form reaches the client with its schema as the
// tool wrote it (defaults, every enum form), and the tool gets the user's
// answer; a declined form is an answer too.
func TestToolElicits(t *testing.T) {
	askTransports(t, func(t *testing.T, mrtr bool, runs *atomic.Int32, connect func(clientOptions) *sdk.ClientSession) {
		var mu sync.Mutex
		var got []*sdk.ElicitParams
		action := "accept"
		cs := connect(clientOptions{elicit: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, req.Params)
			if action != "accept" {
				return &sdk.ElicitResult{Action: action}, nil
			}
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Jane Smith", "age": 25, "status": "inactive", "multi": []any{"a", "b"}}}, nil
		}})
		res := call(t, cs, "asker", map[string]any{"mode": "elicit"})
		text := callText(t, res)
		if res.IsError || !strings.HasPrefix(text, "user accept {") || !strings.Contains(text, `"name":"Jane Smith"`) || !strings.Contains(text, `"multi":["a","b"]`) {
			t.Errorf("asker = %q (isError %v)", text, res.IsError)
		}
		mu.Lock()
		if len(got) != 1 || got[0].Message != "Tell me about you" || got[0].Mode != "form" {
			t.Fatalf("the client got %d elicitations: %+v", len(got), got)
		}
		var sent, wrote any
		b, _ := json.Marshal(got[0].RequestedSchema)
		json.Unmarshal(b, &sent)
		json.Unmarshal([]byte(askForm), &wrote)
		if a, w := fmt.Sprint(sent), fmt.Sprint(wrote); a != w {
			t.Errorf("the schema reached the client as\n %s\nthe tool wrote\n %s", a, w)
		}
		action = "decline"
		mu.Unlock()
		res = call(t, cs, "asker", map[string]any{"mode": "elicit"})
		if res.IsError || callText(t, res) != "user decline " {
			t.Errorf("declined: %q (isError %v)", callText(t, res), res.IsError)
		}
	})
}

// TestToolSamplesThenElicits: two requests in one call; under 2026-07-28
// the call runs three times, the second and third answering the earlier
// requests from the request state.
func TestToolSamplesThenElicits(t *testing.T) {
	askTransports(t, func(t *testing.T, mrtr bool, runs *atomic.Int32, connect func(clientOptions) *sdk.ClientSession) {
		var samples, elicits atomic.Int32
		cs := connect(clientOptions{
			sample: func(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
				samples.Add(1)
				return &sdk.CreateMessageResult{Role: "assistant", Content: &sdk.TextContent{Text: "4"}, Model: "m"}, nil
			},
			elicit: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				elicits.Add(1)
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
			},
		})
		res := call(t, cs, "asker", map[string]any{"mode": "both"})
		if text := callText(t, res); res.IsError || !strings.HasPrefix(text, `LLM said "4" (m, ); user accept {`) || !strings.Contains(text, `"name":"Ada"`) {
			t.Errorf("asker = %q (isError %v)", text, res.IsError)
		}
		if samples.Load() != 1 || elicits.Load() != 1 {
			t.Errorf("the client was asked %d samples and %d forms, want one each", samples.Load(), elicits.Load())
		}
		if want := map[bool]int32{true: 3, false: 1}[mrtr]; runs.Load() != want {
			t.Errorf("the tool ran %d times, want %d", runs.Load(), want)
		}
	})
}

// TestToolAsksClientWithoutCapability: a client that declared neither
// sampling nor elicitation is not asked: the tool gets CAPABILITY_DENIED at
// once, and the call's result says why.
func TestToolAsksClientWithoutCapability(t *testing.T) {
	askTransports(t, func(t *testing.T, _ bool, _ *atomic.Int32, connect func(clientOptions) *sdk.ClientSession) {
		cs := connect(clientOptions{})
		for mode, want := range map[string]string{"sample": "did not declare the sampling capability", "elicit": "did not declare the elicitation capability"} {
			start := time.Now()
			res := call(t, cs, "asker", map[string]any{"mode": mode})
			if text := callText(t, res); !res.IsError || !strings.HasPrefix(text, "CAPABILITY_DENIED") || !strings.Contains(text, want) {
				t.Errorf("%s without the capability: %q", mode, text)
			}
			if took := time.Since(start); took > 900*time.Millisecond {
				t.Errorf("%s without the capability took %v: it must not wait", mode, took)
			}
		}
	})
}

// TestToolWaitsForClient: a client that does not answer holds the tool until
// its timeout (1s) and no longer; the call answers TOOL_EXECUTION_TIMEOUT and
// the session serves the next call. (Under 2026-07-28 the server never
// waits for the client: the question is in the result.)
func TestToolWaitsForClient(t *testing.T) {
	askTransports(t, func(t *testing.T, mrtr bool, _ *atomic.Int32, connect func(clientOptions) *sdk.ClientSession) {
		if mrtr {
			t.Skip("under multi round-trip the client answers between calls")
		}
		var block atomic.Bool
		block.Store(true)
		release := make(chan struct{})
		cs := connect(clientOptions{sample: func(ctx context.Context, _ *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			if block.Load() {
				// Over HTTP the server's notifications/cancelled may not
				// reach the client: the call's stream has closed with the
				// result. A person at the client would give up in time.
				select {
				case <-ctx.Done():
				case <-release:
				}
				return nil, errors.New("no answer")
			}
			return &sdk.CreateMessageResult{Role: "assistant", Content: &sdk.TextContent{Text: "late"}, Model: "m"}, nil
		}})
		t.Cleanup(func() { close(release) }) // before the session closes
		start := time.Now()
		res := call(t, cs, "asker", map[string]any{"mode": "sample"})
		if text := callText(t, res); !res.IsError || !strings.HasPrefix(text, "TOOL_EXECUTION_TIMEOUT") {
			t.Errorf("a client that does not answer: %q", text)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("the call took %v with a 1s timeout", took)
		}
		block.Store(false)
		if res := call(t, cs, "asker", map[string]any{"mode": "sample"}); res.IsError || !strings.Contains(callText(t, res), "late") {
			t.Errorf("the next call: %q", callText(t, res))
		}
	})
}

// samplingTool serves, under 2026-07-28, one tool "s" granted
// client.sampling that runs f with its run number (from 1); answering
// answers each sampling request with a text naming the request's own text.
func samplingTool(t *testing.T, f func(ctx context.Context, run int32, c plugin.Client) (string, error), answer func(prompt string) string) (cs *sdk.ClientSession, runs *atomic.Int32, asked func() []string) {
	t.Helper()
	runs = new(atomic.Int32)
	h, err := plugin.NewHost(plugin.Options{Grants: plugin.Capabilities{Sampling: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	err = h.Register(plugin.Spec{Name: "s", Tier: plugin.TierReadOnly, Capabilities: plugin.Capabilities{Sampling: true}, Limits: plugin.Limits{Timeout: 10 * time.Second}},
		plugin.Func(plugin.Descriptor{InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
			text, err := f(ctx, runs.Add(1), req.Client)
			if err != nil {
				return nil, err
			}
			return &plugin.Result{Content: []plugin.Content{plugin.Text(text)}}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var prompts []string
	cs = stdioSession(t, newServer(t, h), clientOptions{protocol: mrtrProtocol, sample: func(_ context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
		text, _ := req.Params.Messages[0].Content.(*sdk.TextContent)
		mu.Lock()
		prompts = append(prompts, text.Text)
		mu.Unlock()
		return &sdk.CreateMessageResult{Role: "assistant", Content: &sdk.TextContent{Text: answer(text.Text)}, Model: "m"}, nil
	}})
	return cs, runs, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), prompts...)
	}
}

func sample(ctx context.Context, c plugin.Client, prompt string) (string, error) {
	res, err := c.Sample(ctx, &plugin.SampleRequest{Messages: []plugin.SamplingMessage{{Role: "user", Content: plugin.Text(prompt)}}, MaxTokens: 10})
	if err != nil {
		return "", err
	}
	return res.Content.Text, nil
}

// TestToolAsksAnew: under 2026-07-28 a tool that asks something else in
// the next run than it asked before is not given the earlier answer: the
// client is asked the new request, and the tool gets its answer.
func TestToolAsksAnew(t *testing.T) {
	cs, runs, asked := samplingTool(t, func(ctx context.Context, run int32, c plugin.Client) (string, error) {
		prompt := "first"
		if run > 1 {
			prompt = "second"
		}
		return sample(ctx, c, prompt)
	}, func(prompt string) string { return "answer to " + prompt })
	res := call(t, cs, "s", map[string]any{})
	if text := callText(t, res); res.IsError || text != "answer to second" {
		t.Errorf("s = %q (isError %v), want the answer to the request of the last run", text, res.IsError)
	}
	if got := asked(); fmt.Sprint(got) != "[first second]" {
		t.Errorf("the client was asked %q, want [first second]", got)
	}
	if runs.Load() != 3 {
		t.Errorf("the tool ran %d times, want 3", runs.Load())
	}
}

// TestToolAnswersCapped: the answers a multi round-trip call carries from
// round to round are capped at 1 MiB: two answers of 700 KB each end the
// call with an error saying so, each under the cap on one answer.
func TestToolAnswersCapped(t *testing.T) {
	big := strings.Repeat("x", 700<<10)
	cs, _, asked := samplingTool(t, func(ctx context.Context, _ int32, c plugin.Client) (string, error) {
		a, err := sample(ctx, c, "one")
		if err != nil {
			return "", err
		}
		b, err := sample(ctx, c, "two")
		return fmt.Sprint(len(a) + len(b)), err
	}, func(string) string { return big })
	res := call(t, cs, "s", map[string]any{})
	if text := callText(t, res); !res.IsError || !strings.Contains(text, "over the 1MiB a call carries between rounds") {
		t.Errorf("answers over 1 MiB: %.200q (isError %v)", text, res.IsError)
	}
	if got := asked(); fmt.Sprint(got) != "[one two]" {
		t.Errorf("the client was asked %q, want [one two]", got)
	}
}

// TestToolIgnoresUnaskedAnswer: under 2026-07-28 an answer to a request the
// call never put to the client (no request state says it did) does not
// reach the tool: the tool's request goes to the client as if none came.
func TestToolIgnoresUnaskedAnswer(t *testing.T) {
	var runs atomic.Int32
	var samples atomic.Int32
	cs := stdioSession(t, newServer(t, askHost(t, &runs)), clientOptions{protocol: mrtrProtocol, sample: func(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
		samples.Add(1)
		return &sdk.CreateMessageResult{Role: "assistant", Content: &sdk.TextContent{Text: "4"}, Model: "m"}, nil
	}})
	forged := sdk.InputResponseMap{"toolhost_sample": &sdk.CreateMessageResult{Role: "assistant", Content: &sdk.TextContent{Text: "forged"}, Model: "f"}}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "asker", Arguments: map[string]any{"mode": "sample"}, InputResponses: forged})
	if err != nil {
		t.Fatal(err)
	}
	if text := callText(t, res); res.IsError || text != `LLM said "4" (m, )` {
		t.Errorf("asker with an answer to nothing asked = %q (isError %v)", text, res.IsError)
	}
	if samples.Load() != 1 {
		t.Errorf("the client was asked %d times, want once", samples.Load())
	}
}

// TestToolCancelledWhileAsking: under 2025-11-25 a call the client cancels
// while the tool waits for the client's answer stops waiting: the client's
// handler is cancelled too, and the session serves the next call.
func TestToolCancelledWhileAsking(t *testing.T) {
	var runs atomic.Int32
	var block atomic.Bool
	block.Store(true)
	waiting := make(chan struct{}, 1)
	handlerDone := make(chan struct{}, 1)
	cs := stdioSession(t, newServer(t, askHost(t, &runs)), clientOptions{protocol: legacyProtocol, sample: func(ctx context.Context, _ *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
		if block.Load() {
			waiting <- struct{}{}
			<-ctx.Done()
			handlerDone <- struct{}{}
			return nil, ctx.Err()
		}
		return &sdk.CreateMessageResult{Role: "assistant", Content: &sdk.TextContent{Text: "4"}, Model: "m"}, nil
	}})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "asker", Arguments: map[string]any{"mode": "sample"}})
		errc <- err
	}()
	select {
	case <-waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the client was not asked")
	}
	cancel()
	if err := <-errc; err == nil {
		t.Error("a cancelled call returned no error")
	}
	select {
	case <-handlerDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the client's handler was not cancelled with the call (the server did not stop waiting for it)")
	}
	block.Store(false)
	if res := call(t, cs, "asker", map[string]any{"mode": "sample"}); res.IsError || callText(t, res) != `LLM said "4" (m, )` {
		t.Errorf("the next call: %q", callText(t, res))
	}
}
