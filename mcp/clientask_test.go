package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/mcp"
	"github.com/toolhost/toolhost/plugin"
)

// askingServer is a Go SDK server whose tools ask their client: "form"
// puts a form with defaults to the user, "sample" asks for a completion.
// They ask the way the SDK lets a tool ask in every protocol: an input
// request in the result, which the SDK's server sends as a request in the
// middle of the call to a client before 2026-07-28. Served with sessions,
// it speaks 2025-11-25; sessionless (stateless), 2026-07-28.
func askingServer(t *testing.T, stateless bool) string {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "asking", Version: "0"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"who":{"type":"string"}}}`)
	s.AddTool(&sdk.Tool{Name: "form", InputSchema: schema}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["form"]; ok {
			b, _ := json.Marshal(r)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}, nil
		}
		var args struct{ Who string }
		b, _ := json.Marshal(req.Params.Arguments)
		json.Unmarshal(b, &args)
		return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"form": &sdk.ElicitParams{
			Mode:    "form",
			Message: "Who are you, " + args.Who + "?",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{
				"name":{"type":"string","default":"Ada"},
				"age":{"type":"integer","default":36},
				"mood":{"type":"string","enum":["calm","busy"],"default":"calm"}}}`),
		}}}, nil
	})
	s.AddTool(&sdk.Tool{Name: "sample", InputSchema: schema}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["llm"]; ok {
			b, _ := json.Marshal(r)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}, nil
		}
		return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"llm": &sdk.CreateMessageParams{
			MaxTokens:    50,
			SystemPrompt: "Be brief.",
			Messages:     []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "What is 2+2?"}}},
		}}}, nil
	})
	s.AddTool(&sdk.Tool{Name: "twice", InputSchema: schema}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		if len(req.Params.InputResponses) > 0 {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("%d answers", len(req.Params.InputResponses))}}}, nil
		}
		form := func(q string) *sdk.ElicitParams {
			return &sdk.ElicitParams{Mode: "form", Message: q, RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)}
		}
		return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"a": form("Who are you?"), "b": form("Who else?")}}, nil
	})
	return serveHTTP(t, sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{Stateless: stateless}))
}

// askingHost loads the server's tools into a host, granted caps, with
// limits (a 10s timeout unless they say otherwise).
func askingHost(t *testing.T, url string, caps plugin.Capabilities, limits plugin.Limits) *plugin.Host {
	t.Helper()
	a := mcp.NewAdapter(mcp.AdapterOptions{})
	h, err := plugin.NewHost(plugin.Options{Adapters: []plugin.Adapter{a}, Grants: plugin.Capabilities{Sampling: true, Elicitation: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	srv := &plugin.MCPServer{Name: "asking", URL: url}
	if limits.Timeout == 0 {
		limits.Timeout = 10 * time.Second
	}
	for _, tool := range []string{"form", "sample", "twice"} {
		spec := plugin.Spec{Name: "asking/" + tool, Tier: plugin.TierSideEffecting, Capabilities: caps,
			Source: plugin.Source{Kind: mcp.Kind, Tool: tool, Server: srv}, Limits: limits}
		if err := h.Load(context.Background(), spec); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// askedClient is the caller's client: it records what it is asked and
// answers as told.
type askedClient struct {
	mu      sync.Mutex
	forms   []plugin.ElicitRequest
	samples []plugin.SampleRequest
	form    *plugin.ElicitResult
}

func (c *askedClient) Elicit(_ context.Context, req *plugin.ElicitRequest) (*plugin.ElicitResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forms = append(c.forms, *req)
	if c.form != nil {
		return c.form, nil
	}
	return &plugin.ElicitResult{Action: plugin.ElicitAccept, Content: json.RawMessage(`{"name":"Grace"}`)}, nil
}

func (c *askedClient) Sample(_ context.Context, req *plugin.SampleRequest) (*plugin.SampleResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.samples = append(c.samples, *req)
	return &plugin.SampleResult{Role: "assistant", Content: plugin.Text("4"), Model: "test-model", StopReason: "endTurn"}, nil
}

// TestClientCarriesServerRequests: a remote server's sampling and form
// requests during a call reach the call's client when its mcp_server block
// was granted them, in both protocol eras (requests in the middle of the
// call, and input requests in the result); the answers go back with the
// form's defaults filled in; a call not granted them, or whose caller has
// no client, is refused at once, and concurrent calls are each asked on
// their own.
func TestClientCarriesServerRequests(t *testing.T) {
	for _, era := range []struct {
		name      string
		stateless bool
	}{
		{"2025-11-25", false},
		{"2026-07-28", true},
	} {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			url := askingServer(t, era.stateless)
			granted := askingHost(t, url, plugin.Capabilities{Sampling: true, Elicitation: true}, plugin.Limits{})
			call := func(h *plugin.Host, tool, who string, client plugin.Client) (*plugin.Result, error) {
				return h.Invoke(context.Background(), plugin.Call{Name: "asking/" + tool, Arguments: json.RawMessage(fmt.Sprintf(`{"who":%q}`, who)), Client: client})
			}

			t.Run("form, defaults filled in", func(t *testing.T) {
				c := &askedClient{}
				res, err := call(granted, "form", "Grace", c)
				if err != nil {
					t.Fatal(err)
				}
				var got sdk.ElicitResult
				if err := json.Unmarshal([]byte(res.TextContent()), &got); err != nil {
					t.Fatalf("the server saw %q: %v", res.TextContent(), err)
				}
				want := map[string]any{"name": "Grace", "age": float64(36), "mood": "calm"}
				if got.Action != "accept" || fmt.Sprint(got.Content) != fmt.Sprint(want) {
					t.Errorf("the server got %+v, want accept with %v", got, want)
				}
				if len(c.forms) != 1 || c.forms[0].Message != "Who are you, Grace?" || !strings.Contains(string(c.forms[0].RequestedSchema), `"default":36`) {
					t.Errorf("the client was shown %+v", c.forms)
				}
			})

			t.Run("form declined", func(t *testing.T) {
				c := &askedClient{form: &plugin.ElicitResult{Action: plugin.ElicitDecline}}
				res, err := call(granted, "form", "Grace", c)
				if err != nil || !strings.Contains(res.TextContent(), `"action":"decline"`) {
					t.Errorf("declined form: %v %v", res.TextContent(), err)
				}
			})

			t.Run("sampling", func(t *testing.T) {
				c := &askedClient{}
				res, err := call(granted, "sample", "", c)
				if err != nil {
					t.Fatal(err)
				}
				if txt := res.TextContent(); !strings.Contains(txt, `"text":"4"`) || !strings.Contains(txt, `"model":"test-model"`) {
					t.Errorf("the server got %s", txt)
				}
				if len(c.samples) != 1 || c.samples[0].MaxTokens != 50 || c.samples[0].SystemPrompt != "Be brief." ||
					len(c.samples[0].Messages) != 1 || c.samples[0].Messages[0].Content.Text != "What is 2+2?" {
					t.Errorf("the client was asked %+v", c.samples)
				}
			})

			t.Run("not granted", func(t *testing.T) {
				h := askingHost(t, url, plugin.Capabilities{}, plugin.Limits{})
				c := &askedClient{}
				start := time.Now()
				res, err := call(h, "form", "Grace", c)
				if err == nil && !res.IsError {
					t.Errorf("a call not granted elicitation was answered: %s", res.TextContent())
				}
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("the refusal took %s", d)
				}
				if len(c.forms) > 0 {
					t.Errorf("the client was asked: %+v", c.forms)
				}
			})

			t.Run("no client to ask", func(t *testing.T) {
				start := time.Now()
				res, err := call(granted, "form", "Grace", nil)
				var msg string
				switch {
				case err != nil:
					msg = err.Error()
				case res.IsError:
					msg = res.TextContent()
				default:
					t.Fatalf("a call with no client to ask was answered: %s", res.TextContent())
				}
				if !strings.Contains(msg, "no client to ask") {
					t.Errorf("refusal: %s", msg)
				}
				if !errors.Is(err, plugin.ErrNoClient) || plugin.CodeOf(err) != plugin.CodeCapabilityDenied {
					// The refusal is the host's own, whether the SDK's
					// client reports it (input requests) or the server
					// fails the call with it (requests in the call).
					t.Errorf("refusal %v, want CAPABILITY_DENIED (ErrNoClient)", err)
				}
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("the refusal took %s", d)
				}
			})

			t.Run("counted against client_requests", func(t *testing.T) {
				c := &askedClient{}
				res, err := call(granted, "twice", "", c)
				if err != nil || res.TextContent() != "2 answers" {
					t.Fatalf("two forms within client_requests: %v %v", res, err)
				}
				h := askingHost(t, url, plugin.Capabilities{Sampling: true, Elicitation: true}, plugin.Limits{ClientRequests: 1})
				c = &askedClient{}
				_, err = call(h, "twice", "", c)
				var pe *plugin.Error
				if !errors.As(err, &pe) || pe.Code != plugin.CodeLimitExceeded || pe.Limit != "client_requests" {
					t.Errorf("two forms with client_requests = 1: %v, want LIMIT_EXCEEDED (client_requests)", err)
				}
				if len(c.forms) != 1 {
					t.Errorf("%d forms reached the client, want 1", len(c.forms))
				}
			})

			t.Run("concurrent calls are asked on their own", func(t *testing.T) {
				var wg sync.WaitGroup
				clients := map[string]*askedClient{}
				for _, who := range []string{"Ada", "Barbara", "Grace", "Hedy"} {
					c := &askedClient{}
					clients[who] = c
					wg.Add(1)
					go func() {
						defer wg.Done()
						if _, err := call(granted, "form", who, c); err != nil {
							t.Errorf("%s: %v", who, err)
						}
					}()
				}
				wg.Wait()
				for who, c := range clients {
					if len(c.forms) != 1 || c.forms[0].Message != "Who are you, "+who+"?" {
						t.Errorf("%s's client was shown %+v", who, c.forms)
					}
				}
			})
		})
	}
}

// TestClientRefusesStandaloneAsk: a server built on the Go SDK that asks
// on its standalone stream (not tied to the call) while a tool without the
// client grant runs hears at once that the request went nowhere (the
// shared session opens no standalone stream), rather than the call
// waiting out its timeout.
func TestClientRefusesStandaloneAsk(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "asking", Version: "0"}, nil)
	s.AddTool(&sdk.Tool{Name: "standalone", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		// Not the call's context: the SDK's server sends the request on
		// the session's standalone stream.
		actx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
		defer cancel()
		_, err := req.Session.CreateMessage(actx, &sdk.CreateMessageParams{MaxTokens: 5, Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "hi"}}}})
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("asked: %v", err)}}}, nil
	})
	url := serveHTTP(t, sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	a := mcp.NewAdapter(mcp.AdapterOptions{})
	h, err := plugin.NewHost(plugin.Options{Adapters: []plugin.Adapter{a}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	spec := plugin.Spec{Name: "asking/standalone", Tier: plugin.TierReadOnly,
		Source: plugin.Source{Kind: mcp.Kind, Tool: "standalone", Server: &plugin.MCPServer{Name: "asking", URL: url}}, Limits: plugin.Limits{Timeout: 10 * time.Second}}
	if err := h.Load(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := h.Invoke(context.Background(), plugin.Call{Name: "asking/standalone", Arguments: json.RawMessage(`{}`), Client: &askedClient{}})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 4*time.Second || !strings.Contains(res.TextContent(), "asked: ") || strings.Contains(res.TextContent(), "asked: <nil>") {
		t.Errorf("after %v the server heard %q; want a refusal at once", d, res.TextContent())
	}
}

// BenchmarkRemoteAskingSession: what a remote tool granted client.* pays
// for its session of its own (initialize, notifications/initialized and
// the session's close around every call) against the same call on the
// shared session, to an in-process server over HTTP on 127.0.0.1.
//
//	go test ./mcp -run '^$' -bench RemoteAskingSession -benchtime 2000x
func BenchmarkRemoteAskingSession(b *testing.B) {
	s := sdk.NewServer(&sdk.Implementation{Name: "asking", Version: "0"}, nil)
	s.AddTool(&sdk.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "hi"}}}, nil
	})
	url := serveHTTP(b, sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	for _, tc := range []struct {
		name string
		caps plugin.Capabilities
	}{
		{"shared", plugin.Capabilities{}},
		{"own-session", plugin.Capabilities{Sampling: true, Elicitation: true}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			a := mcp.NewAdapter(mcp.AdapterOptions{})
			h, err := plugin.NewHost(plugin.Options{Adapters: []plugin.Adapter{a}, Grants: plugin.Capabilities{Sampling: true, Elicitation: true}})
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			spec := plugin.Spec{Name: "asking/echo", Tier: plugin.TierReadOnly, Capabilities: tc.caps,
				Source: plugin.Source{Kind: mcp.Kind, Tool: "echo", Server: &plugin.MCPServer{Name: "asking", URL: url}}}
			if err := h.Load(context.Background(), spec); err != nil {
				b.Fatal(err)
			}
			call := plugin.Call{Name: "asking/echo", Arguments: json.RawMessage(`{}`), Client: &askedClient{}}
			for range 20 {
				if _, err := h.Invoke(context.Background(), call); err != nil {
					b.Fatal(err)
				}
			}
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if _, err := h.Invoke(context.Background(), call); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			reportPercentiles(b, lat)
		})
	}
}
