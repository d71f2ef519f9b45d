package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// rawStdio serves a session of srv over a pair of pipes and returns the
// client's ends: lines written to w, lines read from r. os selects pipes
// from the operating system, which ServeStdio reads through the poller
// (SetReadDeadline), as `host serve` reads its stdin; otherwise io.Pipe,
// which it reads on a goroutine of its own.
func rawStdio(t *testing.T, osPipes bool) (w io.WriteCloser, r *bufio.Reader, stop func() error) {
	t.Helper()
	srv := newServer(t, newTestHost(t).Host)
	var (
		sr io.ReadCloser
		sw io.WriteCloser
		cr io.ReadCloser
	)
	if osPipes {
		a, b, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		c, d, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		sr, w, cr, sw = a, b, c, d
	} else {
		a, b := io.Pipe()
		c, d := io.Pipe()
		sr, w, cr, sw = a, b, c, d
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(ctx, sr, sw, time.Second) }()
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("ServeStdio did not return after its context was cancelled, with the client idle")
			return nil
		}
	}
	t.Cleanup(func() {
		stop()
		w.Close()
		cr.Close()
	})
	return w, bufio.NewReader(cr), stop
}

// rpcLine reads one line and decodes it (an object or a batch's array).
func rpcLine(t *testing.T, r *bufio.Reader) any {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading a response: %v", err)
	}
	var v any
	if err := json.Unmarshal([]byte(line), &v); err != nil {
		t.Fatalf("response is not JSON: %v: %q", err, line)
	}
	return v
}

func send(t *testing.T, w io.Writer, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(w, l); err != nil {
			t.Fatal(err)
		}
	}
}

const initLines = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}` + "\n" +
	`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"

// TestStdioWire drives `ServeStdio` with raw lines: what the SDK's client
// never sends (batches, string ids needing escapes, CRLF, blank lines, lines
// that are not messages), on both kinds of input.
func TestStdioWire(t *testing.T) {
	for _, osPipes := range []bool{true, false} {
		name := "io.Pipe"
		if osPipes {
			name = "os.Pipe"
		}
		t.Run(name, func(t *testing.T) {
			w, r, stop := rawStdio(t, osPipes)
			send(t, w, initLines)
			if m := rpcLine(t, r).(map[string]any); m["id"] != 0.0 || m["result"] == nil {
				t.Fatalf("initialize: %v", m)
			}

			// Not JSON: a parse error with a null id, and the session goes on.
			send(t, w, "this is not json\n")
			m := rpcLine(t, r).(map[string]any)
			if e, _ := m["error"].(map[string]any); e == nil || e["code"] != -32700.0 || m["id"] != nil {
				t.Fatalf("garbage: want a -32700 error with a null id, got %v", m)
			}
			if _, ok := m["id"]; !ok {
				t.Fatalf("error response without an id member: %v", m)
			}
			// JSON, not JSON-RPC, with no id that could be answered.
			send(t, w, `{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}`+"\n")
			m = rpcLine(t, r).(map[string]any)
			if e, _ := m["error"].(map[string]any); e == nil || e["code"] != -32600.0 || m["id"] != nil {
				t.Fatalf("object id: want -32600 with a null id, got %v", m)
			}
			if _, ok := m["id"]; !ok {
				t.Fatalf("error response without an id member: %v", m)
			}
			// Not a valid request, but its id can be read: the error
			// answers it, so the caller is not left waiting.
			for _, c := range []struct {
				line string
				id   any
			}{
				{`{"jsonrpc":"1.0","id":5,"method":"ping"}`, 5.0},
				{`{"jsonrpc":"2.0","id":"s-1","method":17}`, "s-1"},
				{`{"id":-3,"method":"ping"}`, -3.0},
			} {
				send(t, w, c.line+"\n")
				m = rpcLine(t, r).(map[string]any)
				if e, _ := m["error"].(map[string]any); e == nil || e["code"] != -32600.0 || m["id"] != c.id {
					t.Fatalf("%s: want -32600 with id %v, got %v", c.line, c.id, m)
				}
			}

			// A string id that needs escaping, CRLF, a blank line before.
			send(t, w, "\r\n", `{"jsonrpc":"2.0","id":"a\"b<&>é","method":"tools/call","params":{"name":"fx_echo","arguments":{"text":"crlf"}}}`+"\r\n")
			m = rpcLine(t, r).(map[string]any)
			if m["id"] != "a\"b<&>é" {
				t.Fatalf("string id came back as %v", m["id"])
			}
			if got := resultText(t, m); got != "crlf" {
				t.Fatalf("echo: %q", got)
			}

			// A batch: one array back, in the batch's order, with no entry
			// for its notification.
			send(t, w, `[{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fx_echo","arguments":{"text":"seven"}}},`+
				`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"x","progress":1}},`+
				`{"jsonrpc":"2.0","id":"eight","method":"tools/call","params":{"name":"fx_echo","arguments":{"text":"eight"}}}]`+"\n")
			arr, ok := rpcLine(t, r).([]any)
			if !ok || len(arr) != 2 {
				t.Fatalf("batch: want an array of 2 responses, got %v", arr)
			}
			for i, want := range []struct {
				id   any
				text string
			}{{7.0, "seven"}, {"eight", "eight"}} {
				m := arr[i].(map[string]any)
				if m["id"] != want.id || resultText(t, m) != want.text {
					t.Fatalf("batch response %d: %v", i, m)
				}
			}
			send(t, w, "[]\n")
			if m := rpcLine(t, r).(map[string]any); m["error"] == nil {
				t.Fatalf("empty batch: want an error, got %v", m)
			}
			// A batch's elements that cannot be served are answered in its
			// array; the others are served.
			send(t, w, `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"1.0","id":2},5,`+
				`{"jsonrpc":"2.0","id":"again","method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}]`+"\n")
			arr, ok = rpcLine(t, r).([]any)
			if !ok || len(arr) != 5 {
				t.Fatalf("batch with bad elements: want an array of 5, got %v", arr)
			}
			if m := arr[0].(map[string]any); m["id"] != 1.0 || m["error"] != nil {
				t.Fatalf("batch: the valid ping: %v", m)
			}
			for i, want := range []struct {
				id  any
				msg string
			}{{nil, "already in use"}, {2.0, "invalid request"}, {nil, "invalid request"}, {"again", "initialize must not be part of a JSON-RPC batch"}} {
				m := arr[i+1].(map[string]any)
				e, _ := m["error"].(map[string]any)
				if _, hasID := m["id"]; e == nil || !hasID || m["id"] != want.id || !strings.Contains(e["message"].(string), want.msg) {
					t.Fatalf("batch element %d: want an error %q with id %v, got %v", i+1, want.msg, want.id, m)
				}
			}
			// Only bad elements: answered at once.
			send(t, w, `[1,2]`+"\n")
			if arr, ok := rpcLine(t, r).([]any); !ok || len(arr) != 2 {
				t.Fatalf("batch of bad elements: %v", arr)
			}
			// Two messages on one line: refused, not half served.
			send(t, w, `{"jsonrpc":"2.0","id":3,"method":"ping"}{"jsonrpc":"2.0","id":4,"method":"ping"}`+"\n")
			if m := rpcLine(t, r).(map[string]any); m["error"] == nil || m["id"] != nil {
				t.Fatalf("two messages on a line: want an error, got %v", m)
			}

			stillServing(t, w, r, stop)
		})
	}
}

// TestStdioIDInUse: an invalid message whose id belongs to a request still
// being served is answered with a null id, so the client cannot take the
// error for that request's answer; once the request is answered, the id
// is free again. The same holds inside a batch.
func TestStdioIDInUse(t *testing.T) {
	w, r, stop := rawStdio(t, true)
	send(t, w, initLines)
	if m := rpcLine(t, r).(map[string]any); m["id"] != 0.0 {
		t.Fatalf("initialize: %v", m)
	}
	send(t, w, `{"jsonrpc":"2.0","id":40,"method":"tools/call","params":{"name":"block","arguments":{}}}`+"\n")
	// Not valid (wrong version), and its id is the blocked call's.
	send(t, w, `{"jsonrpc":"1.0","id":40,"method":"ping"}`+"\n")
	m := rpcLine(t, r).(map[string]any)
	e, _ := m["error"].(map[string]any)
	if e == nil || e["code"] != -32600.0 || m["id"] != nil {
		t.Fatalf("reused id: want -32600 with a null id, got %v", m)
	}
	if msg, _ := e["message"].(string); !strings.Contains(msg, "still being served") {
		t.Fatalf("reused id: the error does not say why it has no id: %q", msg)
	}
	// In a batch: the invalid element and a valid request reusing the id
	// both get errors without it; the rest is served.
	send(t, w, `[{"jsonrpc":"1.0","id":40},{"jsonrpc":"2.0","id":40,"method":"ping"},{"jsonrpc":"2.0","id":41,"method":"ping"}]`+"\n")
	arr, ok := rpcLine(t, r).([]any)
	if !ok || len(arr) != 3 {
		t.Fatalf("batch: want 3 answers, got %v", arr)
	}
	for i, a := range arr[:2] {
		if m := a.(map[string]any); m["error"] == nil || m["id"] != nil {
			t.Errorf("batch element %d: want an error with a null id, got %v", i, m)
		}
	}
	if m := arr[2].(map[string]any); m["id"] != 41.0 || m["error"] != nil {
		t.Errorf("batch element 2: %v", m)
	}
	// Cancelled, the call is answered, and its id is free again.
	send(t, w, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":40}}`+"\n")
	if m := rpcLine(t, r).(map[string]any); m["id"] != 40.0 {
		t.Fatalf("cancelled call: %v", m)
	}
	send(t, w, `{"jsonrpc":"1.0","id":40,"method":"ping"}`+"\n")
	if m := rpcLine(t, r).(map[string]any); m["error"] == nil || m["id"] != 40.0 {
		t.Fatalf("id no longer in use: want an error with id 40, got %v", m)
	}
	stillServing(t, w, r, stop)
}

// TestStdioBatchesByVersion: MCP 2025-06-18 dropped JSON-RPC batches. A
// session that agreed on it, or on a later version, has a batch refused
// whole, and goes on.
func TestStdioBatchesByVersion(t *testing.T) {
	for _, version := range []string{"2025-06-18", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			w, r, stop := rawStdio(t, true)
			send(t, w, strings.Replace(initLines, "2025-03-26", version, 1))
			m := rpcLine(t, r).(map[string]any)
			if res, _ := m["result"].(map[string]any); res == nil || res["protocolVersion"] != version {
				t.Fatalf("initialize: want version %s agreed, got %v", version, m)
			}
			send(t, w, `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`+"\n")
			m, ok := rpcLine(t, r).(map[string]any)
			if !ok {
				t.Fatalf("batch under %s: want one error, got an array", version)
			}
			if e, _ := m["error"].(map[string]any); e == nil || e["code"] != -32600.0 || !strings.Contains(e["message"].(string), "batches are not part of MCP "+version) {
				t.Fatalf("batch under %s: want -32600 naming the version, got %v", version, m)
			}
			stillServing(t, w, r, stop)
		})
	}
}

// stillServing checks that the session answers a ping, then ends it by
// closing its input: ServeStdio must return without an error.
func stillServing(t *testing.T, w io.WriteCloser, r *bufio.Reader, stop func() error) {
	t.Helper()
	send(t, w, `{"jsonrpc":"2.0","id":9,"method":"ping"}`+"\n")
	if m := rpcLine(t, r).(map[string]any); m["id"] != 9.0 || m["error"] != nil {
		t.Fatalf("ping: %v", m)
	}
	w.Close()
	if err := stop(); err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
}

// TestStdioCloseWhileIdle: cancelling ServeStdio while the client sends
// nothing returns (rawStdio's stop fails the test after 10 s otherwise).
func TestStdioCloseWhileIdle(t *testing.T) {
	for _, osPipes := range []bool{true, false} {
		w, r, stop := rawStdio(t, osPipes)
		send(t, w, initLines)
		rpcLine(t, r)
		if err := stop(); err != nil {
			t.Fatalf("os pipes %v: ServeStdio: %v", osPipes, err)
		}
	}
}

func resultText(t *testing.T, m map[string]any) string {
	t.Helper()
	res, _ := m["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if len(content) == 0 {
		t.Fatalf("no content in %v", m)
	}
	text, _ := content[0].(map[string]any)["text"].(string)
	return text
}

// eofRequests returns n requests after initialize, of every kind a script
// sends (tools/list, tools/call, ping), with ids 1..n, and the tool call
// whose answer says it ran: a call with id i echoes "call i".
func eofRequests(n int, slowMS int) string {
	var b strings.Builder
	b.WriteString(initLines)
	for id := 1; id <= n; id++ {
		switch id % 3 {
		case 0:
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`+"\n", id)
		case 1:
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fx_echo","arguments":{"text":"call %d"}}}`+"\n", id, id)
		default:
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", id)
		}
	}
	if slowMS > 0 {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fx_sleep","arguments":{"ms":%d}}}`+"\n", n+1, slowMS)
	}
	return b.String()
}

// readAnswers reads responses until the server closes its output and
// returns them by id.
func readAnswers(t *testing.T, r *bufio.Reader) map[float64]map[string]any {
	t.Helper()
	got := map[float64]map[string]any{}
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF && line == "" {
			return got
		}
		if err != nil {
			t.Fatalf("reading answers: %v (after %d)", err, len(got))
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("answer is not a JSON object: %v: %q", err, line)
		}
		id, ok := m["id"].(float64)
		if !ok {
			continue // a notification (progress, logging)
		}
		if _, dup := got[id]; dup {
			t.Fatalf("two answers with id %v", id)
		}
		got[id] = m
	}
}

// checkEOFAnswers checks that every request of eofRequests(n, slow) got its
// own answer, a result, and the calls the text they asked for.
func checkEOFAnswers(t *testing.T, got map[float64]map[string]any, n int, slow bool) {
	t.Helper()
	want := n + 1 // and initialize's
	if slow {
		want++
	}
	if len(got) != want {
		t.Fatalf("%d answers, want %d: %v", len(got), want, got)
	}
	for id := 0; id < want; id++ {
		m, ok := got[float64(id)]
		if !ok {
			t.Fatalf("no answer to request %d", id)
		}
		res, ok := m["result"].(map[string]any)
		if !ok {
			t.Fatalf("request %d: no result: %v", id, m)
		}
		if id > 0 && id <= n && id%3 == 1 {
			if got, wantText := resultText(t, m), fmt.Sprintf("call %d", id); !strings.Contains(got, wantText) {
				t.Errorf("call %d answered %q", id, got)
			}
		}
		if slow && id == n+1 && res["isError"] == true {
			t.Errorf("the slow call was cut short at end of input: %v", res)
		}
	}
}

// TestStdioAnswersBeforeEOF writes requests and closes the input at once,
// as scripts and CI jobs do: every request read is answered (tool calls
// included, one of them still sleeping when the input ends) before the
// server closes its output, and ServeStdio returns nil. Before, the end of
// input ended the session with the answers unwritten.
func TestStdioAnswersBeforeEOF(t *testing.T) {
	for _, osPipes := range []bool{true, false} {
		name := "io.Pipe"
		if osPipes {
			name = "os.Pipe"
		}
		t.Run(name, func(t *testing.T) {
			for run := 0; run < 20; run++ {
				slow := run%5 == 4
				slowMS := 0
				if slow {
					slowMS = 300
				}
				w, r, stop := rawStdio(t, osPipes)
				go func() {
					io.WriteString(w, eofRequests(12, slowMS))
					w.Close()
				}()
				checkEOFAnswers(t, readAnswers(t, r), 12, slow)
				if err := stop(); err != nil {
					t.Fatalf("ServeStdio: %v", err)
				}
			}
		})
	}
}
