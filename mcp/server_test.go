package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/mcp"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/plugin/plugintest"
)

// testHost is a host with the conformance fixtures and a few tools of its
// own, registered under names that need wire-name mapping.
type testHost struct {
	*plugin.Host
	// blocked counts calls to "block" whose context was cancelled.
	blocked   atomic.Int32
	started   chan string
	dangerRan atomic.Int32
}

const (
	legacyProtocol = "2025-11-25"
	mrtrProtocol   = "2026-07-28"
)

func newTestHost(t testing.TB) *testHost {
	t.Helper()
	th := &testHost{started: make(chan string, 16)}
	h, err := plugin.NewHost(plugin.Options{Approver: mcp.Approver(nil)})
	if err != nil {
		t.Fatal(err)
	}
	th.Host = h
	t.Cleanup(func() { h.Close() })
	reg := func(spec plugin.Spec, tool plugin.Tool) {
		t.Helper()
		if err := h.Register(spec, tool); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"echo", "structured", "fail", "sleep", "ask"} {
		tool, _ := plugintest.InProcessFixture(f)
		tier := plugin.TierReadOnly
		if f == "ask" {
			tier = plugin.TierSideEffecting
		}
		reg(plugin.Spec{Name: "fx." + f, Tier: tier}, tool)
	}
	big, _ := plugintest.InProcessFixture("big")
	reg(plugin.Spec{Name: "fx.big", Tier: plugin.TierReadOnly, Limits: plugin.Limits{Preview: 1024}}, big)
	reg(plugin.Spec{Name: "danger/zone", Tier: plugin.TierPrivileged, Description: "Needs approval."},
		plugin.Func(plugin.Descriptor{InputSchema: json.RawMessage(`{"type":"object","properties":{"what":{"type":"string"}}}`)},
			func(context.Context, *plugin.Request) (*plugin.Result, error) {
				th.dangerRan.Add(1)
				return &plugin.Result{Content: []plugin.Content{plugin.Text("done")}}, nil
			}))
	reg(plugin.Spec{Name: "block", Tier: plugin.TierReadOnly, Limits: plugin.Limits{Timeout: time.Minute}},
		plugin.Func(plugin.Descriptor{InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
				th.started <- req.ID
				<-ctx.Done()
				th.blocked.Add(1)
				return nil, ctx.Err()
			}))
	reg(plugin.Spec{Name: "reporter", Tier: plugin.TierReadOnly},
		plugin.Func(plugin.Descriptor{InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(_ context.Context, req *plugin.Request) (*plugin.Result, error) {
				for i := 1; i <= 3; i++ {
					req.Notify.Progress(float64(10*i), 30, fmt.Sprintf("step %d", i))
					req.Notify.Log("info", fmt.Sprintf("did step %d", i))
				}
				req.Notify.Log("debug", "a detail")
				return &plugin.Result{Content: []plugin.Content{plugin.Text(fmt.Sprintf("reported (listening: %t)", plugin.Listening(req.Notify)))}}, nil
			}))
	reg(plugin.Spec{Name: "pixel", Tier: plugin.TierReadOnly},
		plugin.Func(plugin.Descriptor{InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *plugin.Request) (*plugin.Result, error) {
				return &plugin.Result{Content: []plugin.Content{plugin.Text("a pixel"), {Type: "image", MIMEType: "image/png", Data: []byte("\x89PNG\r\n\x1a\nfake")}}}, nil
			}))
	return th
}

// clientOptions configure a test client.
type clientOptions struct {
	protocol string
	elicit   func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error)
	sample   func(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error)
	progress func(context.Context, *sdk.ProgressNotificationClientRequest)
	logged   func(context.Context, *sdk.LoggingMessageRequest)
	updated  func(context.Context, *sdk.ResourceUpdatedNotificationRequest)
}

func newClient(o clientOptions) *sdk.Client {
	copts := &sdk.ClientOptions{ElicitationHandler: o.elicit, CreateMessageHandler: o.sample, ProgressNotificationHandler: o.progress, LoggingMessageHandler: o.logged, ResourceUpdatedHandler: o.updated}
	return sdk.NewClient(&sdk.Implementation{Name: "toolhost-test", Version: "v0"}, copts)
}

// stdioSession connects an SDK client to srv over a pair of pipes, the way
// a desktop client talks to `host serve --stdio`.
func stdioSession(t testing.TB, srv *mcp.Server, o clientOptions) *sdk.ClientSession {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(ctx, sr, sw, time.Second) }()
	cs, err := newClient(o).Connect(context.Background(), &sdk.IOTransport{Reader: cr, Writer: cw}, &sdk.ClientSessionOptions{ProtocolVersion: o.protocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		sw.Close()
		sr.Close()
		if err := <-done; err != nil && !errors.Is(err, io.ErrClosedPipe) {
			t.Logf("ServeStdio: %v", err)
		}
	})
	return cs
}

// httpServer serves srv on a random 127.0.0.1 port and returns its URL.
func httpServer(t testing.TB, srv *mcp.Server, opts mcp.HTTPOptions) (url string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, opts, 2*time.Second) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return "http://" + ln.Addr().String() + "/mcp", stop
}

func httpSession(t testing.TB, url string, o clientOptions, token string) *sdk.ClientSession {
	t.Helper()
	tr := &sdk.StreamableClientTransport{Endpoint: url, MaxRetries: -1}
	if token != "" {
		tr.HTTPClient = &http.Client{Transport: bearer{token}}
	}
	cs, err := newClient(o).Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func newServer(t testing.TB, h *plugin.Host) *mcp.Server {
	t.Helper()
	srv, err := mcp.NewServer(h, mcp.ServerOptions{ProgressInterval: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func callText(t testing.TB, res *sdk.CallToolResult) string {
	t.Helper()
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func call(t testing.TB, cs *sdk.ClientSession, name string, args any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s): %v", name, err)
	}
	return res
}

// transports runs f over stdio (both protocol eras) and streamable HTTP.
func transports(t *testing.T, f func(t *testing.T, connect func(clientOptions) *sdk.ClientSession)) {
	t.Run("stdio", func(t *testing.T) {
		f(t, func(o clientOptions) *sdk.ClientSession {
			th := newTestHost(t)
			if o.protocol == "" {
				o.protocol = mrtrProtocol
			}
			return stdioSession(t, newServer(t, th.Host), o)
		})
	})
	t.Run("stdio-legacy", func(t *testing.T) {
		f(t, func(o clientOptions) *sdk.ClientSession {
			th := newTestHost(t)
			o.protocol = legacyProtocol
			return stdioSession(t, newServer(t, th.Host), o)
		})
	})
	t.Run("http", func(t *testing.T) {
		f(t, func(o clientOptions) *sdk.ClientSession {
			th := newTestHost(t)
			url, _ := httpServer(t, newServer(t, th.Host), mcp.HTTPOptions{})
			return httpSession(t, url, o, "")
		})
	})
}

func TestServerListsGrantedTools(t *testing.T) {
	transports(t, func(t *testing.T, connect func(clientOptions) *sdk.ClientSession) {
		cs := connect(clientOptions{})
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]*sdk.Tool{}
		for _, tool := range res.Tools {
			got[tool.Name] = tool
		}
		want := []string{"fx_echo", "fx_structured", "fx_fail", "fx_sleep", "fx_ask", "fx_big", "danger__zone", "block", "pixel", "reporter"}
		if len(got) != len(want) {
			t.Errorf("got %d tools, want %d: %v", len(got), len(want), keys(got))
		}
		for _, n := range want {
			if got[n] == nil {
				t.Errorf("tool %s missing; got %v", n, keys(got))
			}
		}
		if tool := got["danger__zone"]; tool != nil {
			if tool.Meta[mcp.MetaName] != "danger/zone" || tool.Meta[mcp.MetaTier] != "privileged" {
				t.Errorf("danger__zone meta = %v", tool.Meta)
			}
			a := tool.Annotations
			if a == nil || a.ReadOnlyHint || a.DestructiveHint == nil || !*a.DestructiveHint {
				t.Errorf("privileged tool annotations = %+v, want readOnlyHint false, destructiveHint true", a)
			}
			if tool.Description != "Needs approval." {
				t.Errorf("description = %q", tool.Description)
			}
		}
		if tool := got["fx_echo"]; tool != nil {
			if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint || tool.Annotations.DestructiveHint != nil {
				t.Errorf("read_only annotations = %+v", tool.Annotations)
			}
			schema, _ := json.Marshal(tool.InputSchema)
			if !strings.Contains(string(schema), `"required":["text"]`) {
				t.Errorf("echo input schema = %s", schema)
			}
		}
		if tool := got["fx_structured"]; tool != nil {
			schema, _ := json.Marshal(tool.OutputSchema)
			if !strings.Contains(string(schema), `"sum"`) {
				t.Errorf("structured output schema = %s", schema)
			}
		}
	})
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestServerResults(t *testing.T) {
	transports(t, func(t *testing.T, connect func(clientOptions) *sdk.ClientSession) {
		cs := connect(clientOptions{})
		t.Run("text", func(t *testing.T) {
			res := call(t, cs, "fx_echo", map[string]any{"text": "héllo ✓"})
			if res.IsError || callText(t, res) != "héllo ✓" {
				t.Errorf("echo = %+v %q", res, callText(t, res))
			}
		})
		t.Run("structured", func(t *testing.T) {
			res := call(t, cs, "fx_structured", map[string]any{"a": 2, "b": 40})
			sc, _ := json.Marshal(res.StructuredContent)
			if res.IsError || string(sc) != `{"sum":42}` {
				t.Errorf("structured = %s, isError %v", sc, res.IsError)
			}
		})
		t.Run("tool error", func(t *testing.T) {
			res := call(t, cs, "fx_fail", map[string]any{})
			if !res.IsError || !strings.HasPrefix(callText(t, res), "TOOL_EXECUTION_FAILED") || !strings.Contains(callText(t, res), "boom") {
				t.Errorf("fail = %q isError %v", callText(t, res), res.IsError)
			}
			if res.Meta[mcp.MetaCode] != "TOOL_EXECUTION_FAILED" {
				t.Errorf("meta = %v", res.Meta)
			}
		})
		t.Run("invalid arguments", func(t *testing.T) {
			res := call(t, cs, "fx_echo", map[string]any{"text": 5})
			if !res.IsError || !strings.HasPrefix(callText(t, res), "INVALID_REQUEST") || !strings.Contains(callText(t, res), "text") {
				t.Errorf("bad args = %q", callText(t, res))
			}
		})
		t.Run("unknown tool", func(t *testing.T) {
			_, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "nope", Arguments: map[string]any{}})
			if err == nil {
				t.Errorf("calling an unknown tool succeeded")
			}
		})
		t.Run("image", func(t *testing.T) {
			res := call(t, cs, "pixel", map[string]any{})
			var img *sdk.ImageContent
			for _, c := range res.Content {
				if i, ok := c.(*sdk.ImageContent); ok {
					img = i
				}
			}
			if img == nil || img.MIMEType != "image/png" || !strings.HasPrefix(string(img.Data), "\x89PNG") {
				t.Errorf("image content = %+v", res.Content)
			}
		})
		t.Run("truncated with resource", func(t *testing.T) {
			res := call(t, cs, "fx_big", map[string]any{"bytes": 5000})
			text := callText(t, res)
			if res.IsError || len(text) > 1024 || !strings.Contains(text, "[... truncated") {
				t.Fatalf("big: %d bytes, isError %v: %q", len(text), res.IsError, text)
			}
			var link *sdk.ResourceLink
			for _, c := range res.Content {
				if l, ok := c.(*sdk.ResourceLink); ok {
					link = l
				}
			}
			if link == nil || !strings.HasPrefix(link.URI, mcp.ResourceURIPrefix) || link.Size == nil || *link.Size != 5000 {
				t.Fatalf("no resource link to the full output: %+v", res.Content)
			}
			rr, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: link.URI})
			if err != nil {
				t.Fatal(err)
			}
			if len(rr.Contents) != 1 || len(rr.Contents[0].Text) != 5000 || rr.Contents[0].Text[4999] != '9' {
				t.Errorf("artifact resource: %d contents", len(rr.Contents))
			}
			if _, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: mcp.ResourceURIPrefix + "art_000000000000000000000000"}); err == nil {
				t.Errorf("reading an unknown artifact succeeded")
			}
		})
	})
}

func TestServerApproval(t *testing.T) {
	transports(t, func(t *testing.T, connect func(clientOptions) *sdk.ClientSession) {
		t.Run("approved", func(t *testing.T) {
			var asked atomic.Int32
			cs := connect(clientOptions{elicit: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				asked.Add(1)
				if !strings.Contains(req.Params.Message, "danger/zone") || !strings.Contains(req.Params.Message, `"what":"x"`) {
					t.Errorf("approval message = %q", req.Params.Message)
				}
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
			}})
			res := call(t, cs, "danger__zone", map[string]any{"what": "x"})
			if res.IsError || callText(t, res) != "done" || asked.Load() != 1 {
				t.Errorf("approved call = %q isError %v, asked %d times", callText(t, res), res.IsError, asked.Load())
			}
		})
		t.Run("denied", func(t *testing.T) {
			cs := connect(clientOptions{elicit: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				return &sdk.ElicitResult{Action: "decline"}, nil
			}})
			res := call(t, cs, "danger__zone", map[string]any{})
			if !res.IsError || !strings.HasPrefix(callText(t, res), "APPROVAL_DENIED") {
				t.Errorf("declined call = %q", callText(t, res))
			}
		})
		t.Run("no elicitation", func(t *testing.T) {
			cs := connect(clientOptions{})
			res := call(t, cs, "danger__zone", map[string]any{})
			if !res.IsError || !strings.HasPrefix(callText(t, res), "APPROVAL_REQUIRED") {
				t.Errorf("call without elicitation = %q", callText(t, res))
			}
		})
	})
}

func TestServerNeedsInput(t *testing.T) {
	transports(t, func(t *testing.T, connect func(clientOptions) *sdk.ClientSession) {
		t.Run("elicited", func(t *testing.T) {
			cs := connect(clientOptions{elicit: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": true}}, nil
			}})
			res := call(t, cs, "fx_ask", map[string]any{})
			if res.IsError || callText(t, res) != "confirmed" {
				t.Errorf("ask with elicitation = %q", callText(t, res))
			}
		})
		t.Run("declined", func(t *testing.T) {
			cs := connect(clientOptions{elicit: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				return &sdk.ElicitResult{Action: "decline"}, nil
			}})
			res := call(t, cs, "fx_ask", map[string]any{})
			if res.IsError || !strings.Contains(callText(t, res), "Input needed (confirm)") {
				t.Errorf("declined question = %q", callText(t, res))
			}
		})
		t.Run("in text", func(t *testing.T) {
			cs := connect(clientOptions{})
			res := call(t, cs, "fx_ask", map[string]any{})
			text := callText(t, res)
			if res.IsError || !strings.Contains(text, "Input needed (confirm)") || !strings.Contains(text, `"_answers"`) {
				t.Fatalf("ask without elicitation = %q", text)
			}
			res = call(t, cs, "fx_ask", map[string]any{"_answers": map[string]any{"confirm": false}})
			if res.IsError || callText(t, res) != "cancelled" {
				t.Errorf("answered = %q", callText(t, res))
			}
		})
	})
}

func TestServerProgress(t *testing.T) {
	transports(t, func(t *testing.T, connect func(clientOptions) *sdk.ClientSession) {
		var n atomic.Int32
		cs := connect(clientOptions{progress: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			if req.Params.ProgressToken == "tok" && strings.Contains(req.Params.Message, "fx.sleep") {
				n.Add(1)
			}
		}})
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "fx_sleep", Arguments: map[string]any{"ms": 1000}, Meta: sdk.Meta{"progressToken": "tok"}})
		if err != nil || res.IsError {
			t.Fatalf("sleep: %v %v", err, res)
		}
		// Notifications may arrive just after the result.
		deadline := time.Now().Add(time.Second)
		for n.Load() < 2 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n.Load() < 2 {
			t.Errorf("got %d progress notifications for a 1s call at 300ms intervals, want at least 2", n.Load())
		}
		res = call(t, cs, "fx_echo", map[string]any{"text": "quick"})
		if res.IsError {
			t.Errorf("echo after progress: %q", callText(t, res))
		}
	})
}

// TestToolReportsProgressAndLogs: what a tool reports while it runs reaches
// the client: its own progress (instead of the server's ticks) when the
// request carries a token, and its log messages at the level the client set.
func TestToolReportsProgressAndLogs(t *testing.T) {
	transports(t, func(t *testing.T, connect func(clientOptions) *sdk.ClientSession) {
		var mu sync.Mutex
		var progress []float64
		var logs []string
		cs := connect(clientOptions{
			progress: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
				mu.Lock()
				defer mu.Unlock()
				if req.Params.ProgressToken == "tok" {
					progress = append(progress, req.Params.Progress)
				}
			},
			logged: func(_ context.Context, req *sdk.LoggingMessageRequest) {
				mu.Lock()
				defer mu.Unlock()
				logs = append(logs, fmt.Sprintf("%s %s %v", req.Params.Level, req.Params.Logger, req.Params.Data))
			},
		})
		// Nothing the tool reports can reach a client that asked for no
		// progress and set no log level: adapters need not carry it.
		if res := call(t, cs, "reporter", map[string]any{}); callText(t, res) != "reported (listening: false)" {
			t.Errorf("a call nobody listens to: %q", callText(t, res))
		}
		if err := cs.SetLoggingLevel(context.Background(), &sdk.SetLoggingLevelParams{Level: "info"}); err != nil { //nolint:staticcheck // deprecated in 2026-07-28, served for older clients
			t.Fatal(err)
		}
		// Under protocol 2026-07-28 the level travels in each request's
		// _meta; before, logging/setLevel set it for the session.
		meta := sdk.Meta{"progressToken": "tok", sdk.MetaKeyLogLevel: "info"}
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "reporter", Arguments: map[string]any{}, Meta: meta})
		if err != nil || res.IsError || callText(t, res) != "reported (listening: true)" {
			t.Fatalf("reporter: %v %v", err, res)
		}
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			mu.Lock()
			n, m := len(progress), len(logs)
			mu.Unlock()
			if n >= 3 && m >= 3 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		mu.Lock()
		if fmt.Sprint(progress) != "[10 20 30]" {
			t.Errorf("progress = %v, want [10 20 30]", progress)
		}
		if strings.Join(logs, "|") != "info reporter did step 1|info reporter did step 2|info reporter did step 3" {
			t.Errorf("logs = %q (the debug line is below the client's level)", logs)
		}
		mu.Unlock()
		// A client that set a level for the session takes log messages
		// (before 2026-07-28) even from a call that asks no progress.
		if res := call(t, cs, "reporter", map[string]any{}); callText(t, res) != "reported (listening: true)" {
			t.Errorf("a call after logging/setLevel: %q", callText(t, res))
		}
	})
}

func TestServerCancellation(t *testing.T) {
	for _, proto := range []string{mrtrProtocol, legacyProtocol, "http"} {
		t.Run(proto, func(t *testing.T) {
			th := newTestHost(t)
			var cs *sdk.ClientSession
			if proto == "http" {
				url, _ := httpServer(t, newServer(t, th.Host), mcp.HTTPOptions{})
				cs = httpSession(t, url, clientOptions{}, "")
			} else {
				cs = stdioSession(t, newServer(t, th.Host), clientOptions{protocol: proto})
			}
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "block", Arguments: map[string]any{}})
				errc <- err
			}()
			select {
			case <-th.started:
			case <-time.After(10 * time.Second):
				t.Fatal("block never started")
			}
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled call returned %v", err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for th.blocked.Load() == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if th.blocked.Load() != 1 {
				t.Fatalf("the tool's context was not cancelled")
			}
			if res := call(t, cs, "fx_echo", map[string]any{"text": "still here"}); callText(t, res) != "still here" {
				t.Errorf("after cancellation: %q", callText(t, res))
			}
		})
	}
}
