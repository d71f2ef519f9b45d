package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/mcp"
)

// bearer adds a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

// post sends one raw JSON-RPC POST and returns the response and its body.
func post(t testing.TB, url, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// stillServes checks that a well-behaved client can list and call tools.
func stillServes(t *testing.T, url, token string) {
	t.Helper()
	cs := httpSession(t, url, clientOptions{}, token)
	res := call(t, cs, "fx_echo", map[string]any{"text": "ok"})
	if res.IsError || callText(t, res) != "ok" {
		t.Errorf("a good client after the hostile request: %q", callText(t, res))
	}
}

func TestHTTPSessions(t *testing.T) {
	th := newTestHost(t)
	url, _ := httpServer(t, newServer(t, th.Host), mcp.HTTPOptions{})

	resp, body := post(t, url, initBody, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d, Mcp-Session-Id %q: %s", resp.StatusCode, sid, body)
	}
	hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	if resp, body := post(t, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", resp.StatusCode, body)
	}
	if resp, body := post(t, url, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, hdr); resp.StatusCode != http.StatusOK || !strings.Contains(body, "fx_echo") {
		t.Fatalf("tools/list in the session: %d %s", resp.StatusCode, body)
	}
	// A request outside any session, or in an unknown one, is refused.
	// (The SDK answers 200 with a JSON-RPC error here.)
	if resp, body := post(t, url, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, nil); resp.StatusCode < 400 && (!strings.Contains(body, `"error"`) || strings.Contains(body, "fx_echo")) {
		t.Errorf("tools/list without a session: %d %s", resp.StatusCode, body)
	}
	bad := map[string]string{"Mcp-Session-Id": "not-a-session", "Mcp-Protocol-Version": "2025-11-25"}
	if resp, _ := post(t, url, `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`, bad); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown session: %d, want 404", resp.StatusCode)
	}
	// DELETE ends the session.
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Mcp-Session-Id", sid)
	dr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	dr.Body.Close()
	if dr.StatusCode >= 300 {
		t.Errorf("DELETE: %d", dr.StatusCode)
	}
	if resp, _ := post(t, url, `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`, hdr); resp.StatusCode != http.StatusNotFound {
		t.Errorf("deleted session: %d, want 404", resp.StatusCode)
	}
	stillServes(t, url, "")
}

func TestHTTPHostile(t *testing.T) {
	th := newTestHost(t)
	const token = "s3cret-token"
	url, _ := httpServer(t, newServer(t, th.Host), mcp.HTTPOptions{Token: token, MaxBodyBytes: 64 << 10, MaxConcurrent: 2})
	auth := "Bearer " + token
	cases := []struct {
		name   string
		body   string
		hdr    map[string]string
		status int
	}{
		{"no token", initBody, nil, http.StatusUnauthorized},
		{"wrong token", initBody, map[string]string{"Authorization": "Bearer nope"}, http.StatusUnauthorized},
		{"basic auth", initBody, map[string]string{"Authorization": "Basic czNjcmV0LXRva2Vu"}, http.StatusUnauthorized},
		{"bad origin", initBody, map[string]string{"Authorization": auth, "Origin": "https://evil.example"}, http.StatusForbidden},
		{"null origin", initBody, map[string]string{"Authorization": auth, "Origin": "null"}, http.StatusForbidden},
		{"rebound host", initBody, map[string]string{"Authorization": auth, "Host": "evil.example:8808"}, http.StatusForbidden},
		{"oversized body", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"` + strings.Repeat("x", 100<<10) + `"}}`,
			map[string]string{"Authorization": auth}, http.StatusRequestEntityTooLarge},
		{"loopback origin", initBody, map[string]string{"Authorization": auth, "Origin": "http://localhost:6274"}, http.StatusOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := post(t, url, c.body, c.hdr)
			if resp.StatusCode != c.status {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, c.status, body)
			}
			if c.status == http.StatusUnauthorized && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("401 without WWW-Authenticate: Bearer")
			}
		})
	}
	t.Run("chunked oversized body", func(t *testing.T) {
		big := bytes.Repeat([]byte("x"), 200<<10)
		req, _ := http.NewRequest(http.MethodPost, url, io.MultiReader(strings.NewReader(`{"pad":"`), bytes.NewReader(big)))
		req.ContentLength = -1
		req.Header.Set("Authorization", auth)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("status %d, want 413", resp.StatusCode)
		}
	})
	t.Run("too many in flight", func(t *testing.T) {
		cs := httpSession(t, url, clientOptions{}, token)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				blockRetryingBusy(ctx, cs)
			}()
		}
		for range 2 {
			select {
			case <-th.started:
			case <-time.After(10 * time.Second):
				t.Fatal("blocking calls did not start")
			}
		}
		_, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "fx_echo", Arguments: map[string]any{"text": "third"}})
		if !refusedBusy(err) {
			t.Errorf("third concurrent call: %v, want refused with 429", err)
		}
		cancel()
		wg.Wait()
		// Another client is not held back by this one.
		stillServes(t, url, token)
	})
	stillServes(t, url, token)
}

// Many sessions do not get around the per-client cap: the total caps them.
func TestHTTPTotalConcurrency(t *testing.T) {
	th := newTestHost(t)
	url, _ := httpServer(t, newServer(t, th.Host), mcp.HTTPOptions{MaxConcurrent: 2, MaxConcurrentTotal: 3})
	fourth := httpSession(t, url, clientOptions{}, "")
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // runs before wg.Wait
	sessions := make([]*sdk.ClientSession, 3)
	for i := range sessions {
		sessions[i] = httpSession(t, url, clientOptions{}, "")
	}
	for _, cs := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			blockRetryingBusy(ctx, cs)
		}()
		select {
		case <-th.started:
		case <-time.After(10 * time.Second):
			t.Fatal("blocking call did not start")
		}
	}
	cs := fourth
	_, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "fx_echo", Arguments: map[string]any{"text": "fourth"}})
	if !refusedBusy(err) {
		t.Errorf("fourth call across sessions: %v, want 429", err)
	}
	cancel()
	wg.Wait()
	res := callRetryingBusy(t, cs, "fx_echo", map[string]any{"text": "after"})
	if callText(t, res) != "after" {
		t.Errorf("after the blocked calls ended: %q", callText(t, res))
	}
}

// refusedBusy reports whether err is the server's 429 (too many requests in
// flight).
func refusedBusy(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "429") || strings.Contains(strings.ToLower(err.Error()), "too many"))
}

// blockRetryingBusy calls the tool "block" until ctx ends, retrying while
// the server answers 429: a call the client gave up on holds its slot until
// the server has stopped it.
func blockRetryingBusy(ctx context.Context, cs *sdk.ClientSession) {
	for ctx.Err() == nil {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "block", Arguments: map[string]any{}})
		if !refusedBusy(err) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// callRetryingBusy calls a tool, retrying for a few seconds while the
// server answers 429 (cancelled calls still being stopped hold their slots).
func callRetryingBusy(t *testing.T, cs *sdk.ClientSession, name string, args any) *sdk.CallToolResult {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
		if err == nil {
			return res
		}
		if !refusedBusy(err) || time.Now().After(deadline) {
			t.Fatalf("CallTool(%s): %v", name, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestHTTPGracefulShutdown(t *testing.T) {
	t.Run("finishes", func(t *testing.T) {
		th := newTestHost(t)
		url, stop := httpServer(t, newServer(t, th.Host), mcp.HTTPOptions{})
		cs := httpSession(t, url, clientOptions{}, "")
		done := make(chan *sdk.CallToolResult, 1)
		go func() {
			res, _ := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "fx_sleep", Arguments: map[string]any{"ms": 500}})
			done <- res
		}()
		time.Sleep(150 * time.Millisecond)
		stop() // grace is 2s: the call finishes
		select {
		case res := <-done:
			if res == nil || res.IsError {
				t.Errorf("call in flight at shutdown: %+v", res)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the call in flight never answered")
		}
	})
	t.Run("cancels", func(t *testing.T) {
		th := newTestHost(t)
		url, stop := httpServer(t, newServer(t, th.Host), mcp.HTTPOptions{})
		cs := httpSession(t, url, clientOptions{}, "")
		go cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "block", Arguments: map[string]any{}})
		<-th.started
		start := time.Now()
		stop() // grace 2s, then the tool is cancelled
		if d := time.Since(start); d > 6*time.Second {
			t.Errorf("shutdown took %s", d)
		}
		if th.blocked.Load() != 1 {
			t.Errorf("the blocked tool was not cancelled at shutdown")
		}
		if _, err := http.Post(url, "application/json", strings.NewReader(initBody)); err == nil {
			t.Errorf("the server still accepts connections after shutdown")
		}
	})
}

// TestHTTPBodyLimitMatchesArguments checks that a large but allowed body
// reaches the pipeline, whose own limits then apply.
func TestHTTPLargeArguments(t *testing.T) {
	th := newTestHost(t)
	url, _ := httpServer(t, newServer(t, th.Host), mcp.HTTPOptions{})
	cs := httpSession(t, url, clientOptions{}, "")
	text := strings.Repeat("é", 300<<10) // 600 KiB of UTF-8
	res := call(t, cs, "fx_echo", map[string]any{"text": text})
	if res.IsError {
		t.Fatalf("echo of 600 KiB: %q", callText(t, res)[:200])
	}
	raw, _ := json.Marshal(res.Meta)
	if !strings.Contains(string(raw), "truncated") {
		t.Errorf("a 600 KiB answer was not truncated for the model: meta %s", raw)
	}
}

// A client that waits for each answer before its next request never hits
// the concurrency cap, however fast it goes: a slot is free again before
// the client can read the answer that ends it.
func TestHTTPSequentialClientNeverBusy(t *testing.T) {
	th := newTestHost(t)
	url, _ := httpServer(t, newServer(t, th.Host), mcp.HTTPOptions{MaxConcurrent: 1, MaxConcurrentTotal: 1})
	cs := httpSession(t, url, clientOptions{}, "")
	for i := range 300 {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "fx_echo", Arguments: map[string]any{"text": "x"}})
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if got := callText(t, res); got != "x" {
			t.Fatalf("call %d: %q", i, got)
		}
	}
}

// TestHTTPMaxSessions: past MaxSessions a POST that would open a session
// gets 503 with Retry-After; the open sessions are served as before, a
// request that opens no lasting session takes no place, and ending a
// session makes room.
func TestHTTPMaxSessions(t *testing.T) {
	th := newTestHost(t)
	url, _ := httpServer(t, newServer(t, th.Host), mcp.HTTPOptions{MaxSessions: 2})
	open := func() (string, *http.Response, string) {
		resp, body := post(t, url, initBody, nil)
		return resp.Header.Get("Mcp-Session-Id"), resp, body
	}
	var sids []string
	for i := range 2 {
		sid, resp, body := open()
		if resp.StatusCode != http.StatusOK || sid == "" {
			t.Fatalf("session %d: %d %s", i, resp.StatusCode, body)
		}
		sids = append(sids, sid)
	}
	_, resp, body := open()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "too many open sessions (at most 2)") {
		t.Fatalf("third session: %d, Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	hdr := map[string]string{"Mcp-Session-Id": sids[0], "Mcp-Protocol-Version": "2025-11-25"}
	if resp, body := post(t, url, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, hdr); resp.StatusCode != http.StatusOK || !strings.Contains(body, "fx_echo") {
		t.Fatalf("an open session at the cap: %d %s", resp.StatusCode, body)
	}
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Mcp-Session-Id", sids[0])
	dr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	dr.Body.Close()
	// A request outside any session is answered (with an error) and its
	// session closed at once: it leaves the freed place free.
	for range 3 {
		if resp, body := post(t, url, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, nil); resp.StatusCode == http.StatusServiceUnavailable {
			t.Fatalf("a request outside any session with a place free: %d %s", resp.StatusCode, body)
		}
	}
	if sid, resp, body := open(); resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("a session after one ended: %d %s", resp.StatusCode, body)
	}
	if _, resp, _ := open(); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("past the cap again: %d, want 503", resp.StatusCode)
	}
}
