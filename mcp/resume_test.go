package mcp_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/plugin"
)

// cuttingServer is an MCP server over streamable HTTP (2025-11-25) that
// ends the event stream of every tools/call after its priming event, as a
// server polling under SEP-1699 does, or a proxy that cuts long responses:
// the client must take the stream up again with a GET carrying
// Last-Event-ID once the retry delay has passed. It is written by hand
// because no server at hand cuts streams on purpose; what it answers is
// what the SDK's and the conformance suite's servers answer.
type cuttingServer struct {
	url   string
	retry time.Duration
	// forget: the server no longer knows the session when the client
	// comes back for the stream (a restart behind a load balancer).
	forget bool

	mu       sync.Mutex
	calls    int       // tools/call requests
	gets     []string  // the Last-Event-ID of each GET
	cut      time.Time // when the last call's stream was ended
	resumeIn time.Duration
	pending  json.RawMessage // the ID of the call waiting for its result
}

func newCuttingServer(t *testing.T, retry time.Duration, forget bool) *cuttingServer {
	t.Helper()
	s := &cuttingServer{retry: retry, forget: forget}
	s.url = serveHTTP(t, s)
	return s
}

func (s *cuttingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Mcp-Session-Id", "cut-1")
	switch r.Method {
	case http.MethodGet:
		s.resume(w, r)
		return
	case http.MethodDelete:
		return
	case http.MethodPost:
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	body, _ := io.ReadAll(r.Body)
	if json.Unmarshal(body, &msg) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if len(msg.ID) == 0 {
		w.WriteHeader(http.StatusAccepted) // a notification
		return
	}
	reply := func(result string) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, result)
	}
	switch msg.Method {
	case "initialize":
		reply(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"cutting","version":"0"}}`)
	case "tools/list":
		reply(`{"tools":[{"name":"slow","inputSchema":{"type":"object"}}]}`)
	case "tools/call":
		s.mu.Lock()
		s.calls++
		s.pending = msg.ID
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "id: ev-1\nretry: %d\ndata: \n\n", s.retry.Milliseconds())
		w.(http.Flusher).Flush()
		time.Sleep(20 * time.Millisecond)
		s.mu.Lock()
		s.cut = time.Now()
		s.mu.Unlock()
	default: // server/discover and the rest: not offered
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, msg.ID)
	}
}

// resume answers the GET that takes a call's stream up again.
func (s *cuttingServer) resume(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.gets = append(s.gets, r.Header.Get("Last-Event-ID"))
	s.resumeIn = time.Since(s.cut)
	id := s.pending
	s.mu.Unlock()
	if s.forget {
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "id: ev-2\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done after the cut\"}]}}\n\n", id)
}

// TestClientResumesCutStream: a call whose event stream the server ends
// before the result is taken up again after the server's retry delay, with
// Last-Event-ID, and gets its result; a side-effecting call whose server
// forgot the session by then fails as "may have run" and is not sent
// again, though the error says "session not found".
func TestClientResumesCutStream(t *testing.T) {
	t.Run("resumed", func(t *testing.T) {
		t.Parallel()
		srv := newCuttingServer(t, 300*time.Millisecond, false)
		rh := newRemoteHost(t, serverConf{url: srv.url, tools: []string{"slow"}, tier: plugin.TierSideEffecting, timeout: 10 * time.Second})
		res, err := invoke(t, rh.Host, "everything/slow", `{}`)
		if err != nil || res.TextContent() != "done after the cut" {
			t.Fatalf("call: %q %v", res.TextContent(), err)
		}
		srv.mu.Lock()
		defer srv.mu.Unlock()
		if srv.calls != 1 || len(srv.gets) != 1 || srv.gets[0] != "ev-1" {
			t.Errorf("%d calls, GETs with Last-Event-ID %q; want 1 call and one GET with ev-1", srv.calls, srv.gets)
		}
		// The SDK's own backoff would be 1-2 s: the server's retry decides.
		if srv.resumeIn < 280*time.Millisecond || srv.resumeIn > 900*time.Millisecond {
			t.Errorf("the client came back after %s; the server asked for %s", srv.resumeIn, srv.retry)
		}
	})
	t.Run("session forgotten", func(t *testing.T) {
		t.Parallel()
		srv := newCuttingServer(t, 100*time.Millisecond, true)
		rh := newRemoteHost(t, serverConf{url: srv.url, tools: []string{"slow"}, tier: plugin.TierSideEffecting, timeout: 10 * time.Second})
		_, err := invoke(t, rh.Host, "everything/slow", `{}`)
		if !errors.Is(err, plugin.ErrToolUnavailable) || !strings.Contains(err.Error(), "may have run") {
			t.Errorf("call: %v; want TOOL_UNAVAILABLE, it may have run", err)
		}
		srv.mu.Lock()
		defer srv.mu.Unlock()
		if srv.calls != 1 {
			t.Errorf("the side-effecting call was sent %d times", srv.calls)
		}
	})
}
