package mcp_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/mcp"
)

// errCode returns the JSON-RPC error code of an answer, and whether it has
// one.
func errCode(t *testing.T, v any) (float64, bool) {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("answer is not an object: %v", v)
	}
	e, ok := m["error"].(map[string]any)
	if !ok {
		return 0, false
	}
	code, _ := e["code"].(float64)
	return code, true
}

// TestStdioProtocolErrors: the answers clients must be able to parse. The
// capabilities advertised are those served (logging yes; prompts,
// completions, subscriptions no), what is not advertised is refused with
// -32601, a duplicate initialize is -32600, and a request sent before
// initialize is -32600. Before, prompts/list and
// completion/complete succeeded or failed with code 0, logging was served
// without being advertised, and both initialization errors had code 0.
func TestStdioProtocolErrors(t *testing.T) {
	w, r, _ := rawStdio(t, true)
	send(t, w, `{"jsonrpc":"2.0","id":100,"method":"tools/list"}`+"\n")
	if code, ok := errCode(t, rpcLine(t, r)); !ok || code != -32600 {
		t.Errorf("tools/list before initialize: code %v (error %v), want -32600", code, ok)
	}
	send(t, w, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`+"\n")
	init := rpcLine(t, r).(map[string]any)
	caps, _ := init["result"].(map[string]any)["capabilities"].(map[string]any)
	for _, want := range []string{"tools", "resources", "logging"} {
		if _, ok := caps[want]; !ok {
			t.Errorf("capability %s served but not advertised: %v", want, caps)
		}
	}
	for _, not := range []string{"prompts", "completions"} {
		if _, ok := caps[not]; ok {
			t.Errorf("capability %s advertised but not served: %v", not, caps)
		}
	}
	if res, _ := caps["resources"].(map[string]any); res["subscribe"] == true {
		t.Errorf("resource subscriptions advertised but not served: %v", caps)
	}
	send(t, w, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	for _, tc := range []struct {
		line string
		code float64 // 0: a result
	}{
		{`{"jsonrpc":"2.0","id":2,"method":"prompts/list"}`, -32601},
		{`{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"x"}}`, -32601},
		{`{"jsonrpc":"2.0","id":4,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"x"},"argument":{"name":"a","value":"b"}}}`, -32601},
		{`{"jsonrpc":"2.0","id":5,"method":"resources/subscribe","params":{"uri":"toolhost://artifacts/x"}}`, -32601},
		{`{"jsonrpc":"2.0","id":6,"method":"no/such/method"}`, -32601},
		{`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`, -32600},
		{`{"jsonrpc":"2.0","id":8,"method":"logging/setLevel","params":{"level":"info"}}`, 0},
		{`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`, 0},
	} {
		send(t, w, tc.line+"\n")
		v := rpcLine(t, r)
		code, isErr := errCode(t, v)
		if tc.code == 0 && isErr || tc.code != 0 && code != tc.code {
			t.Errorf("%s\nanswered %v, want code %v", tc.line, v, tc.code)
		}
	}
}

// TestHTTPUnknownMethod: over streamable HTTP a method the server does not
// know is answered as on stdio, a JSON-RPC error -32601 with the request's
// id, which clients parse. Before, it was HTTP 400 with a plain-text body.
func TestHTTPUnknownMethod(t *testing.T) {
	srv := newServer(t, newTestHost(t).Host)
	url, _ := httpServer(t, srv, mcp.HTTPOptions{})
	resp, _ := post(t, url, initBody, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatal("no session id")
	}
	hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	post(t, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr)
	for _, id := range []string{`7`, `"seven"`} {
		resp, body := post(t, url, `{"jsonrpc":"2.0","id":`+id+`,"method":"no/such/method"}`, hdr)
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("id %s: status %d, Content-Type %q, body %q", id, resp.StatusCode, ct, body)
		}
		var m struct {
			ID    json.RawMessage
			Error struct{ Code int }
		}
		if err := json.Unmarshal([]byte(body), &m); err != nil || m.Error.Code != -32601 || string(m.ID) != id {
			t.Errorf("id %s: status %d, body %q, want a JSON-RPC error -32601 with the id", id, resp.StatusCode, body)
		}
	}
}

// TestHTTPSSEPriming: a POST's event stream starts with a priming event
// that has an id to resume from, empty data, and a retry field, so that a
// client whose stream breaks mid-call knows where and when to resume
// (SEP-1699; the conformance suite's server-sse-polling). Before, the
// stream had no priming event at all.
func TestHTTPSSEPriming(t *testing.T) {
	srv := newServer(t, newTestHost(t).Host)
	url, _ := httpServer(t, srv, mcp.HTTPOptions{})
	resp, _ := post(t, url, initBody, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	post(t, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr)
	resp, body := post(t, url, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fx_echo","arguments":{"text":"hi"}}}`, hdr)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type %q, want an event stream; body %q", ct, body)
	}
	events := strings.Split(strings.TrimSpace(body), "\n\n")
	if len(events) < 2 {
		t.Fatalf("want a priming event and the answer, got %q", body)
	}
	fields := map[string]string{}
	for _, l := range strings.Split(events[0], "\n") {
		k, v, _ := strings.Cut(l, ":")
		fields[k] = strings.TrimSpace(v)
	}
	if fields["id"] == "" || fields["data"] != "" || fields["retry"] != "1000" {
		t.Errorf("first event %q: want an id, empty data and retry: 1000", events[0])
	}
	if !strings.Contains(events[len(events)-1], `"id":2`) || !strings.Contains(events[len(events)-1], "hi") {
		t.Errorf("last event %q is not the call's answer", events[len(events)-1])
	}
}
