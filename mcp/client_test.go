package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/mcp"
	"github.com/toolhost/toolhost/plugin"
)

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// remoteHost is a plugin.Host whose tools come from one remote MCP server
// through the adapter, as toolhost.Open builds them from an mcp_server block.
type remoteHost struct {
	*plugin.Host
	adapter *mcp.Adapter
	logs    *syncBuffer
}

type serverConf struct {
	url     string
	tools   []string
	tier    plugin.Tier
	timeout time.Duration
	headers map[string]string
	secrets map[string]string // name → value
	opts    mcp.AdapterOptions
}

func newRemoteHost(t testing.TB, c serverConf) *remoteHost {
	t.Helper()
	logs := &syncBuffer{}
	log := hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Trace})
	var secrets plugin.SecretSource
	var names []string
	if c.secrets != nil {
		secrets = plugin.SecretFunc(func(_ context.Context, n string) (string, error) {
			if v, ok := c.secrets[n]; ok {
				return v, nil
			}
			return "", plugin.ErrSecretNotFound
		})
		for n := range c.secrets {
			names = append(names, n)
		}
	}
	opts := c.opts
	opts.Logger = log
	opts.Secrets = secrets
	a := mcp.NewAdapter(opts)
	h, err := plugin.NewHost(plugin.Options{Adapters: []plugin.Adapter{a}, Logger: log, Secrets: secrets,
		Grants: plugin.Capabilities{Secrets: names}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	if c.tier == 0 {
		c.tier = plugin.TierReadOnly
	}
	srv := &plugin.MCPServer{Name: "everything", URL: c.url, Headers: c.headers, Timeout: c.timeout}
	for _, tool := range c.tools {
		spec := plugin.Spec{Name: "everything/" + tool, Tier: c.tier,
			Source:       plugin.Source{Kind: mcp.Kind, Tool: tool, Server: srv},
			Capabilities: plugin.Capabilities{Secrets: names},
			Limits:       plugin.Limits{Timeout: c.timeout}}
		if err := h.Load(context.Background(), spec); err != nil {
			t.Fatalf("Load %s: %v", tool, err)
		}
	}
	return &remoteHost{Host: h, adapter: a, logs: logs}
}

func invoke(t testing.TB, h *plugin.Host, name string, args string) (*plugin.Result, error) {
	t.Helper()
	return h.Invoke(context.Background(), plugin.Call{Name: name, Arguments: json.RawMessage(args)})
}

func TestClientEverything(t *testing.T) {
	srv := startEverything(t, 0)
	rh := newRemoteHost(t, serverConf{url: srv.URL(), timeout: 20 * time.Second,
		tools: []string{"echo", "get-sum", "get-structured-content", "get-tiny-image", "get-resource-reference", "no-such-tool"}})

	t.Run("list", func(t *testing.T) {
		tools := rh.Tools()
		var names []string
		for _, ti := range tools {
			names = append(names, ti.Descriptor.Name)
		}
		want := "everything/echo everything/get-sum everything/get-structured-content everything/get-tiny-image everything/get-resource-reference everything/no-such-tool"
		if strings.Join(names, " ") != want {
			t.Fatalf("tools = %v", names)
		}
		echo, _ := rh.Tool("everything/echo")
		if !echo.Available || !strings.Contains(string(echo.Descriptor.InputSchema), `"message"`) || echo.Descriptor.Description != "Echoes back the input string" {
			t.Errorf("echo = %+v %s", echo, echo.Descriptor.InputSchema)
		}
		sc, _ := rh.Tool("everything/get-structured-content")
		if !strings.Contains(string(sc.Descriptor.OutputSchema), "temperature") {
			t.Errorf("structured output schema = %s", sc.Descriptor.OutputSchema)
		}
		missing, _ := rh.Tool("everything/no-such-tool")
		if missing.Available || !strings.Contains(missing.Unavailable, "does not offer") {
			t.Errorf("a tool the server does not offer: available %v (%s)", missing.Available, missing.Unavailable)
		}
	})
	t.Run("call", func(t *testing.T) {
		res, err := invoke(t, rh.Host, "everything/echo", `{"message":"héllo"}`)
		if err != nil || res.TextContent() != "Echo: héllo" {
			t.Errorf("echo = %q, %v", res.TextContent(), err)
		}
		res, err = invoke(t, rh.Host, "everything/get-sum", `{"a":2,"b":40}`)
		if err != nil || !strings.Contains(res.TextContent(), "is 42") {
			t.Errorf("get-sum = %q, %v", res.TextContent(), err)
		}
	})
	t.Run("structured", func(t *testing.T) {
		res, err := invoke(t, rh.Host, "everything/get-structured-content", `{"location":"Chicago"}`)
		if err != nil || !strings.Contains(string(res.StructuredContent), `"temperature":36`) {
			t.Errorf("structured = %s, %v", res.StructuredContent, err)
		}
	})
	t.Run("image", func(t *testing.T) {
		res, err := invoke(t, rh.Host, "everything/get-tiny-image", `{}`)
		if err != nil {
			t.Fatal(err)
		}
		var img *plugin.Content
		for i := range res.Content {
			if res.Content[i].Type == "image" {
				img = &res.Content[i]
			}
		}
		if img == nil || img.MIMEType != "image/png" || !bytes.HasPrefix(img.Data, []byte("\x89PNG")) {
			t.Fatalf("image = %+v", res.Content)
		}
		// The image is also kept as an artifact of the call, byte for byte.
		var kept *plugin.ArtifactRef
		for i := range res.Artifacts {
			if res.Artifacts[i].MIMEType == "image/png" {
				kept = &res.Artifacts[i]
			}
		}
		if kept == nil {
			t.Fatalf("image not kept as an artifact: %+v", res.Artifacts)
		}
		_, rc, err := rh.Host.Artifact(context.Background(), kept.ID)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if !bytes.Equal(b, img.Data) {
			t.Errorf("artifact holds %d bytes, want the image's %d", len(b), len(img.Data))
		}
	})
	t.Run("resource kept as artifact", func(t *testing.T) {
		res, err := invoke(t, rh.Host, "everything/get-resource-reference", `{"resourceType":"Text","resourceId":2}`)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Artifacts) != 1 || !strings.Contains(res.TextContent(), "kept as an artifact") {
			t.Fatalf("result = %+v", res)
		}
		_, rc, err := rh.Artifact(context.Background(), res.Artifacts[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, _ := io.ReadAll(rc)
		if len(b) == 0 {
			t.Errorf("empty artifact")
		}
	})
	t.Run("errors", func(t *testing.T) {
		_, err := invoke(t, rh.Host, "everything/echo", `{"message":5}`)
		if !errors.Is(err, plugin.ErrInvalidRequest) || !strings.Contains(err.Error(), "message") {
			t.Errorf("bad arguments: %v", err)
		}
		_, err = invoke(t, rh.Host, "everything/get-structured-content", `{"location":"Paris"}`)
		if !errors.Is(err, plugin.ErrInvalidRequest) {
			t.Errorf("value outside the enum: %v", err)
		}
		_, err = invoke(t, rh.Host, "everything/no-such-tool", `{}`)
		if !errors.Is(err, plugin.ErrToolUnavailable) {
			t.Errorf("tool the server lacks: %v", err)
		}
	})
}

func TestClientServerKilledAndRestarted(t *testing.T) {
	srv := startEverything(t, 0)
	rh := newRemoteHost(t, serverConf{url: srv.URL(), timeout: 30 * time.Second, tools: []string{"echo", "trigger-long-running-operation"}})
	if res, err := invoke(t, rh.Host, "everything/echo", `{"message":"before"}`); err != nil || res.TextContent() != "Echo: before" {
		t.Fatalf("echo: %q %v", res.TextContent(), err)
	}
	// Kill the server in the middle of a 10s call.
	errc := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := invoke(t, rh.Host, "everything/trigger-long-running-operation", `{"duration":10,"steps":10}`)
		errc <- err
	}()
	time.Sleep(700 * time.Millisecond)
	srv.Kill()
	select {
	case err := <-errc:
		if !errors.Is(err, plugin.ErrToolUnavailable) {
			t.Errorf("call whose server died: %v, want TOOL_UNAVAILABLE", err)
		}
		if d := time.Since(start); d > 8*time.Second {
			t.Errorf("the failure took %s to surface", d)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the call did not end after its server was killed")
	}
	// While down: listed as unavailable, calls fail fast.
	info, _ := rh.Tool("everything/echo")
	if info.Available || !strings.Contains(info.Unavailable, "unreachable") {
		t.Errorf("echo while the server is down: available %v (%s)", info.Available, info.Unavailable)
	}
	if _, err := invoke(t, rh.Host, "everything/echo", `{"message":"down"}`); !errors.Is(err, plugin.ErrToolUnavailable) {
		t.Errorf("call while down: %v", err)
	}
	// Restarted on the same port: the next call reconnects.
	startEverything(t, srv.Port)
	var res *plugin.Result
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if res, err = invoke(t, rh.Host, "everything/echo", `{"message":"after"}`); err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil || res.TextContent() != "Echo: after" {
		t.Fatalf("after restart: %q %v", res.TextContent(), err)
	}
	if info, _ := rh.Tool("everything/echo"); !info.Available {
		t.Errorf("echo still unavailable after the server came back: %s", info.Unavailable)
	}
}

func TestClientDownAtStart(t *testing.T) {
	npmFile(t, "@modelcontextprotocol/server-everything/dist/index.js")
	// A port nobody listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	start := time.Now()
	rh := newRemoteHost(t, serverConf{url: fmt.Sprintf("http://127.0.0.1:%d/mcp", port), timeout: 20 * time.Second,
		tools: []string{"echo", "get-structured-content"}})
	if d := time.Since(start); d > 6*time.Second {
		t.Errorf("loading the tools of a down server took %s", d)
	}
	info, _ := rh.Tool("everything/echo")
	if info.Available || !strings.Contains(info.Unavailable, "unreachable") || string(info.Descriptor.InputSchema) != `{"type":"object"}` {
		t.Errorf("echo of a server down at start: %+v", info)
	}
	if !strings.Contains(rh.logs.String(), "unreachable at start") || !strings.Contains(rh.logs.String(), "server=everything") {
		t.Errorf("no log line naming the server: %s", rh.logs.String())
	}
	if _, err := invoke(t, rh.Host, "everything/echo", `{"message":"x"}`); !errors.Is(err, plugin.ErrToolUnavailable) {
		t.Errorf("call while down: %v", err)
	}
	startEverything(t, port)
	time.Sleep(1100 * time.Millisecond) // past the retry gap
	res, err := invoke(t, rh.Host, "everything/echo", `{"message":"late"}`)
	if err != nil || res.TextContent() != "Echo: late" {
		t.Fatalf("after the server came up: %q %v", res.TextContent(), err)
	}
	// The schemas fetched late are enforced by the adapter.
	if _, err := invoke(t, rh.Host, "everything/echo", `{"message":5}`); !errors.Is(err, plugin.ErrInvalidRequest) {
		t.Errorf("late schema not enforced: %v", err)
	}
	res, err = invoke(t, rh.Host, "everything/get-structured-content", `{"location":"New York"}`)
	if err != nil || !strings.Contains(string(res.StructuredContent), `"humidity":82`) {
		t.Errorf("structured after late start: %s %v", res.StructuredContent, err)
	}
}

func TestClientResponseCap(t *testing.T) {
	srv := startEverything(t, 0)
	rh := newRemoteHost(t, serverConf{url: srv.URL(), timeout: 20 * time.Second, tools: []string{"echo"},
		opts: mcp.AdapterOptions{MaxResponseBytes: 64 << 10}})
	_, err := invoke(t, rh.Host, "everything/echo", `{"message":"`+strings.Repeat("x", 100<<10)+`"}`)
	if !errors.Is(err, plugin.ErrLimitExceeded) || !strings.Contains(err.Error(), "64KiB") {
		t.Errorf("oversized response: %v", err)
	}
	if res, err := invoke(t, rh.Host, "everything/echo", `{"message":"small"}`); err != nil || res.TextContent() != "Echo: small" {
		t.Errorf("after an oversized response: %q %v", res.TextContent(), err)
	}
}

func TestCheckURL(t *testing.T) {
	for url, ok := range map[string]bool{
		"https://mcp.example.com/mcp": true,
		"http://127.0.0.1:3001/mcp":   true,
		"http://[::1]:3001/mcp":       true,
		"http://localhost/mcp":        true,
		"http://mcp.example.com/mcp":  false,
		"http://10.0.0.1/mcp":         false,
		"ftp://mcp.example.com/":      false,
		"https://user:pw@example.com": false,
		"/relative":                   false,
	} {
		if err := mcp.CheckURL(url); (err == nil) != ok {
			t.Errorf("CheckURL(%q) = %v", url, err)
		}
	}
	a := mcp.NewAdapter(mcp.AdapterOptions{})
	_, err := a.Load(context.Background(), &plugin.Spec{Name: "x/y", Source: plugin.Source{Kind: mcp.Kind, Tool: "y",
		Server: &plugin.MCPServer{Name: "x", URL: "http://mcp.example.com/mcp"}}})
	if err == nil {
		t.Errorf("the adapter loaded a tool from a plain-http remote server")
	}
}

// goServer serves an MCP server built with the SDK on 127.0.0.1, behind
// wrap (nil: none).
func goServer(t testing.TB, s *sdk.Server, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	var h http.Handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	if wrap != nil {
		h = wrap(h)
	}
	return serveHTTP(t, h)
}

// serveHTTP serves h on a random 127.0.0.1 port until the test ends and
// returns its /mcp URL.
func serveHTTP(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return "http://" + ln.Addr().String() + "/mcp"
}

func TestClientHangingServer(t *testing.T) {
	t.Run("hangs at connect", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var conns []net.Conn
		var mu sync.Mutex
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				conns = append(conns, c) // accepted, never answered
				mu.Unlock()
			}
		}()
		t.Cleanup(func() {
			ln.Close()
			mu.Lock()
			for _, c := range conns {
				c.Close()
			}
			mu.Unlock()
		})
		start := time.Now()
		rh := newRemoteHost(t, serverConf{url: "http://" + ln.Addr().String() + "/mcp", timeout: 500 * time.Millisecond,
			tools: []string{"echo"}, opts: mcp.AdapterOptions{ConnectTimeout: time.Second, ProbeWait: 200 * time.Millisecond}})
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("host start waited %s for a hanging server", d)
		}
		start = time.Now()
		_, err = invoke(t, rh.Host, "everything/echo", `{}`)
		if !errors.Is(err, plugin.ErrToolUnavailable) && !errors.Is(err, plugin.ErrToolExecutionTimeout) {
			t.Errorf("call to a hanging server: %v", err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("the call took %s", d)
		}
	})
	t.Run("hangs in a call", func(t *testing.T) {
		s := sdk.NewServer(&sdk.Implementation{Name: "hang", Version: "0"}, nil)
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		var cancelled sync.WaitGroup
		cancelled.Add(1)
		s.AddTool(&sdk.Tool{Name: "hang", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			select {
			case <-ctx.Done():
				cancelled.Done()
			case <-release:
			}
			return &sdk.CallToolResult{}, nil
		})
		s.AddTool(&sdk.Tool{Name: "ping", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "pong"}}}, nil
		})
		rh := newRemoteHost(t, serverConf{url: goServer(t, s, nil), timeout: 500 * time.Millisecond, tools: []string{"hang", "ping"}})
		start := time.Now()
		_, err := invoke(t, rh.Host, "everything/hang", `{}`)
		if !errors.Is(err, plugin.ErrToolExecutionTimeout) {
			t.Errorf("hanging call: %v, want TOOL_EXECUTION_TIMEOUT", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("the per-call deadline of 500ms cut the call after %s", d)
		}
		done := make(chan struct{})
		go func() { cancelled.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Errorf("the server never saw the call cancelled")
		}
		if res, err := invoke(t, rh.Host, "everything/ping", `{}`); err != nil || res.TextContent() != "pong" {
			t.Errorf("after the hang: %q %v", res.TextContent(), err)
		}
	})
}

func TestClientAuthHeadersFromSecrets(t *testing.T) {
	const secret = "sk-very-secret-value"
	s := sdk.NewServer(&sdk.Implementation{Name: "auth", Version: "0"}, nil)
	s.AddTool(&sdk.Tool{Name: "whoami", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		// A careless server that echoes the credential back.
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "you sent " + req.Extra.Header.Get("Authorization")}}}, nil
	})
	var refused sync.Mutex
	nRefused := 0
	url := goServer(t, s, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+secret {
				refused.Lock()
				nRefused++
				refused.Unlock()
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	rh := newRemoteHost(t, serverConf{url: url, timeout: 10 * time.Second, tools: []string{"whoami"},
		headers: map[string]string{"Authorization": "Bearer $API_KEY"}, secrets: map[string]string{"API_KEY": secret}})
	res, err := invoke(t, rh.Host, "everything/whoami", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if res.TextContent() != "you sent Bearer [REDACTED:API_KEY]" {
		t.Errorf("result = %q", res.TextContent())
	}
	if strings.Contains(rh.logs.String(), secret) {
		t.Errorf("the secret reached the logs")
	}
	if nRefused != 0 {
		t.Errorf("%d requests went out without the right header", nRefused)
	}

	// Without the secret the server refuses, and the tool is unavailable.
	bad := newRemoteHost(t, serverConf{url: url, timeout: 10 * time.Second, tools: []string{"whoami"},
		headers: map[string]string{"Authorization": "Bearer $API_KEY"}, secrets: map[string]string{"API_KEY": "wrong"}})
	if _, err := invoke(t, bad.Host, "everything/whoami", `{}`); !errors.Is(err, plugin.ErrToolUnavailable) {
		t.Errorf("with a wrong token: %v", err)
	}
	if strings.Contains(bad.logs.String(), "wrong") {
		t.Errorf("a header value reached the logs: %s", bad.logs.String())
	}
}

// hostileManifest is a streamable HTTP endpoint whose tools/list answer is
// crafted: duplicate names, an over-long name, bad schemas.
func hostileManifest(t testing.TB) string {
	t.Helper()
	tools := []map[string]any{
		{"name": "good", "inputSchema": map[string]any{"type": "object"}},
		{"name": "twice", "inputSchema": map[string]any{"type": "object"}},
		{"name": "twice", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string"}}}},
		{"name": strings.Repeat("n", 130), "inputSchema": map[string]any{"type": "object"}},
		{"name": "badschema", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "nonsense"}}}},
		{"name": "notobject", "inputSchema": map[string]any{"type": "string"}},
		{"name": "badoutput", "inputSchema": map[string]any{"type": "object"}, "outputSchema": map[string]any{"type": 7}},
		{"name": "has space", "inputSchema": map[string]any{"type": "object"}},
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &msg)
		if len(msg.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var result any
		switch msg.Method {
		case "initialize":
			result = map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "hostile", "version": "0"}}
		case "tools/list":
			result = map[string]any{"tools": tools}
		default:
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{"code": -32601, "message": "no"}})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result})
	})
	return serveHTTP(t, h)
}

func TestClientManifestIngress(t *testing.T) {
	rh := newRemoteHost(t, serverConf{url: hostileManifest(t), timeout: 5 * time.Second,
		tools: []string{"good", "twice", "badschema", "notobject", "badoutput"}})
	logs := rh.logs.String()
	for _, c := range []struct{ tool, why string }{
		{"twice", "2 tools with this name"},
		{strings.Repeat("n", 130), "name of 130 characters"},
		{"badschema", "input schema"},
		{"notobject", "input schema must have"},
		{"badoutput", "output schema"},
		{"has space", "not a valid tool name"},
	} {
		if !strings.Contains(logs, "MCP tool rejected at ingress") || !strings.Contains(logs, "tool="+c.tool) && !strings.Contains(logs, `tool="`+c.tool) {
			t.Errorf("no log line naming %q", c.tool)
		}
		if !strings.Contains(logs, c.why) {
			t.Errorf("log does not say why %q was rejected (%s)", c.tool, c.why)
		}
	}
	if !strings.Contains(logs, "server=everything") {
		t.Errorf("log lines do not name the server")
	}
	if info, _ := rh.Tool("everything/good"); !info.Available {
		t.Errorf("the good tool is unavailable: %s", info.Unavailable)
	}
	for _, n := range []string{"twice", "badschema", "notobject", "badoutput"} {
		info, ok := rh.Tool("everything/" + n)
		if !ok || info.Available {
			t.Errorf("rejected tool %s: listed %v, available %v", n, ok, info.Available)
		}
		if _, err := invoke(t, rh.Host, "everything/"+n, `{}`); !errors.Is(err, plugin.ErrToolUnavailable) {
			t.Errorf("calling rejected tool %s: %v", n, err)
		}
	}
}
