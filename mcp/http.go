package mcp

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPOptions configure the streamable HTTP front-end. The zero value is
// the safe default for a server bound to 127.0.0.1: loopback Host and
// Origin only, no token, 4 MiB bodies, 8 calls in flight per client.
type HTTPOptions struct {
	// Token, when set, is the bearer token every request must carry
	// (Authorization: Bearer TOKEN). Compared in constant time.
	Token string
	// AllowedHosts are Host header names accepted besides localhost,
	// 127.0.0.1 and ::1 (the DNS rebinding defence). Needed when the server
	// is reached under another name.
	AllowedHosts []string
	// AllowedOrigins are browser origins ("https://app.example.com")
	// accepted besides loopback ones. A request without Origin (a native
	// client) is accepted.
	AllowedOrigins []string
	// MaxBodyBytes caps a request body (default 4 MiB); larger ones get 413.
	MaxBodyBytes int64
	// MaxConcurrent caps the JSON-RPC requests one client (one
	// Mcp-Session-Id, or one address before it has a session) may have in
	// flight (default 8); more get 429.
	MaxConcurrent int
	// MaxConcurrentTotal caps the JSON-RPC requests in flight across all
	// clients (default 64), so that opening many sessions does not get
	// around MaxConcurrent; more get 429.
	MaxConcurrentTotal int
	// SessionTimeout closes sessions idle that long (default 30m).
	SessionTimeout time.Duration
	// MaxSessions caps the sessions open at once (default 256): every
	// POST without an Mcp-Session-Id opens one, which lives until the
	// client ends it (DELETE) or it is idle for SessionTimeout. Past the
	// cap such a POST gets 503 with Retry-After; requests of open
	// sessions are served as before.
	MaxSessions int
}

func (o HTTPOptions) withDefaults() HTTPOptions {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 4 << 20
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = 8
	}
	if o.MaxConcurrentTotal <= 0 {
		o.MaxConcurrentTotal = 64
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 30 * time.Minute
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = 256
	}
	return o
}

// HTTPHandler returns the streamable HTTP handler (one endpoint; POST, GET
// and DELETE as the MCP spec describes, sessions keyed by Mcp-Session-Id),
// wrapped in the checks of opts. Mount it at /mcp.
func (s *Server) HTTPHandler(opts HTTPOptions) http.Handler { return s.newGuard(opts) }

func (s *Server) newGuard(opts HTTPOptions) *guard {
	opts = opts.withDefaults()
	inner := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.sdk }, &sdk.StreamableHTTPOptions{
		SessionTimeout:      opts.SessionTimeout,
		MaxRequestBodyBytes: opts.MaxBodyBytes,
		// With an event store the SDK opens each POST's event stream
		// with a priming event whose id a client resumes from (GET with
		// Last-Event-ID) when the stream breaks mid-call (protocol
		// 2025-11-25, SEP-1699). The memory store is bounded (10 MiB
		// across sessions, oldest events dropped first).
		EventStore: sdk.NewMemoryEventStore(nil),
	})
	sessions := func() int {
		n := 0
		for range s.sdk.Sessions() {
			n++
		}
		return n
	}
	return &guard{opts: opts, next: inner, log: s.log, sessions: sessions, inflight: map[string]int{}, idle: closedChan()}
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// guard is the HTTP hardening in front of the SDK's handler.
type guard struct {
	opts HTTPOptions
	next http.Handler
	log  interface {
		Warn(string, ...any)
	}

	sessions func() int // sessions open

	mu       sync.Mutex
	opening  int // POSTs without a session id being served: sessions about to open
	inflight map[string]int
	total    int           // requests in flight, all clients
	posts    int           // POSTs being served
	idle     chan struct{} // closed while posts == 0
}

// trackPOST counts a POST until the returned function is called, so that
// shutdown can wait until every answer has been written.
func (g *guard) trackPOST() func() {
	g.mu.Lock()
	if g.posts == 0 {
		g.idle = make(chan struct{})
	}
	g.posts++
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		if g.posts--; g.posts == 0 {
			close(g.idle)
		}
		g.mu.Unlock()
	}
}

// drained returns a channel closed when no POST is being served.
func (g *guard) drained() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.idle
}

func httpError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32000, "message": msg}})
	w.Write(b)
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.hostAllowed(r.Host) {
		g.log.Warn("refused request: Host not allowed", "host", r.Host, "remote", r.RemoteAddr)
		httpError(w, http.StatusForbidden, "Host not allowed")
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !g.originAllowed(o) {
		g.log.Warn("refused request: Origin not allowed", "origin", o, "remote", r.RemoteAddr)
		httpError(w, http.StatusForbidden, "Origin not allowed")
		return
	}
	if g.opts.Token != "" {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(g.opts.Token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolhost"`)
			httpError(w, http.StatusUnauthorized, "missing or wrong bearer token")
			return
		}
	}
	if r.Method != http.MethodPost {
		g.next.ServeHTTP(w, r)
		return
	}
	defer g.trackPOST()()
	if r.ContentLength > g.opts.MaxBodyBytes {
		httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", g.opts.MaxBodyBytes))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.opts.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", g.opts.MaxBodyBytes))
			return
		}
		httpError(w, http.StatusBadRequest, "reading the request body failed")
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if r.Header.Get("Mcp-Session-Id") == "" {
		// The SDK opens a session for every POST without one.
		if !g.openSession() {
			g.log.Warn("refused a new session: too many open", "max_sessions", g.opts.MaxSessions, "remote", r.RemoteAddr)
			w.Header().Set("Retry-After", "5")
			httpError(w, http.StatusServiceUnavailable, fmt.Sprintf("too many open sessions (at most %d): end one (DELETE with its Mcp-Session-Id) or wait until idle ones expire", g.opts.MaxSessions))
			return
		}
		// The SDK registers the new session before it writes the answer's
		// headers: from then on Sessions counts it.
		opened := sync.OnceFunc(g.sessionOpened)
		defer opened()
		w = &firstWrite{passWriter: passWriter{w}, fn: opened}
	}
	if id, method, ok := unknownCall(body); ok && r.Header.Get("Mcp-Protocol-Version") < "2026-07-28" {
		// The SDK answers a method it does not know with HTTP 400 and a
		// plain-text body under these versions, which clients cannot
		// parse; under 2026-07-28 it answers -32601 itself.
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{
			"code": jsonrpc.CodeMethodNotFound, "message": fmt.Sprintf("method %q not found", method)}})
		w.Write(b)
		return
	}
	w = &primeWriter{passWriter: passWriter{w}}
	ids, parsed := requestIDs(body)
	if parsed && len(ids) == 0 {
		// Notifications and answers to the server's own requests
		// (elicitation) are never held back: a call may be waiting on them.
		g.next.ServeHTTP(w, r)
		return
	}
	key := r.Header.Get("Mcp-Session-Id")
	if key == "" {
		key = "addr:" + remoteHost(r.RemoteAddr)
	}
	if !g.acquire(key) {
		w.Header().Set("Retry-After", "1")
		httpError(w, http.StatusTooManyRequests, fmt.Sprintf("too many requests in flight (at most %d per client, %d in all)", g.opts.MaxConcurrent, g.opts.MaxConcurrentTotal))
		return
	}
	release := sync.OnceFunc(func() { g.release(key) })
	defer release()
	if parsed {
		w = newAnswerWriter(w, ids, release)
	}
	g.next.ServeHTTP(w, r)
}

// openSession reserves room for the session a POST without a session id
// opens; false when MaxSessions are open or about to be.
func (g *guard) openSession() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sessions()+g.opening >= g.opts.MaxSessions {
		return false
	}
	g.opening++
	return true
}

// sessionOpened ends the reservation: the session is open (and counted by
// g.sessions) or was never made.
func (g *guard) sessionOpened() {
	g.mu.Lock()
	g.opening--
	g.mu.Unlock()
}

func (g *guard) acquire(key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inflight[key] >= g.opts.MaxConcurrent || g.total >= g.opts.MaxConcurrentTotal {
		return false
	}
	g.inflight[key]++
	g.total++
	return true
}

func (g *guard) release(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.total--
	if g.inflight[key]--; g.inflight[key] <= 0 {
		delete(g.inflight, key)
	}
}

// SSERetry is the reconnection delay a POST's event stream tells the
// client (the SSE retry field of its priming event): how long to wait
// before resuming a stream that broke.
const SSERetry = time.Second

// primeWriter adds the retry field to the SDK's priming event, which has
// an id to resume from but no retry: without one a client cannot tell
// when to reconnect (the conformance suite's server-sse-polling).
type primeWriter struct {
	passWriter
	seen bool
}

var primeEvent = []byte("event: prime\n")

func (p *primeWriter) Write(b []byte) (int, error) {
	if p.seen {
		return p.ResponseWriter.Write(b)
	}
	p.seen = true
	i := bytes.Index(b, []byte("\ndata: "))
	if !bytes.HasPrefix(b, primeEvent) || i < 0 {
		return p.ResponseWriter.Write(b)
	}
	out := make([]byte, 0, len(b)+16)
	out = append(out, b[:i+1]...)
	out = fmt.Appendf(out, "retry: %d\n", SSERetry.Milliseconds())
	out = append(out, b[i+1:]...)
	if _, err := p.ResponseWriter.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// knownMethods are the requests the SDK's server serves (some of them
// refused by refuseUnserved, with a JSON-RPC error).
var knownMethods = map[string]bool{
	"initialize": true, "ping": true, "tools/list": true, "tools/call": true,
	"resources/list": true, "resources/read": true, "resources/templates/list": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
	"prompts/list": true, "prompts/get": true, "completion/complete": true,
	"logging/setLevel": true, "server/discover": true, "subscriptions/listen": true,
}

// unknownCall reports whether body is one JSON-RPC request (with an id) of
// a method the server does not know, with its id and method.
func unknownCall(body []byte) (id json.RawMessage, method string, ok bool) {
	var m struct {
		Version string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' || json.Unmarshal(body, &m) != nil {
		return nil, "", false
	}
	if m.Version != "2.0" || m.Method == "" || len(m.ID) == 0 || string(m.ID) == "null" || knownMethods[m.Method] {
		return nil, "", false
	}
	if m.ID[0] != '"' && (m.ID[0] < '0' || m.ID[0] > '9') && m.ID[0] != '-' {
		return nil, "", false // not an id JSON-RPC allows: the SDK refuses it
	}
	return m.ID, m.Method, true
}

// requestIDs returns the ids of the JSON-RPC requests (messages with a
// method and an id) in a POST body, a message or a batch, as idKey gives
// them; notifications and responses have none. ok is false when the body
// does not parse: it is treated as a request, which the SDK rejects.
func requestIDs(body []byte) (ids []string, ok bool) {
	type msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	body = bytes.TrimSpace(body)
	var msgs []msg
	if len(body) > 0 && body[0] == '[' {
		if json.Unmarshal(body, &msgs) != nil {
			return nil, false
		}
	} else {
		var m msg
		if json.Unmarshal(body, &m) != nil {
			return nil, false
		}
		msgs = []msg{m}
	}
	for _, m := range msgs {
		if m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null" {
			ids = append(ids, idKey(m.ID))
		}
	}
	return ids, true
}

// idKey is a JSON-RPC id in a form that compares equal however it was
// written (1, 1.0; "a").
func idKey(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	return fmt.Sprintf("%T:%v", v, v)
}

// answerWriter frees a POST's concurrency slot as soon as the answers to
// all its requests are written, before their bytes go out, so that a client
// that waits for each answer is never refused for the request it sends
// next. The SDK streams answers as server-sent events, written and flushed
// before its handler returns; a slot freed only when the handler returns
// would still be taken when a fast client's next request arrives. A JSON
// (not event-stream) answer reaches the client only after the handler
// returns, when the slot is freed anyway.
type answerWriter struct {
	passWriter
	pending map[string]bool
	release func()
}

// passWriter is a wrapped http.ResponseWriter that still flushes (the SDK
// flushes every event) and unwraps for http.ResponseController.
type passWriter struct{ http.ResponseWriter }

func (p passWriter) Flush() {
	if f, ok := p.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (p passWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }

// firstWrite calls fn when the answer's headers are written.
type firstWrite struct {
	passWriter
	fn func()
}

func (f *firstWrite) WriteHeader(code int) {
	f.fn()
	f.ResponseWriter.WriteHeader(code)
}

func (f *firstWrite) Write(p []byte) (int, error) {
	f.fn()
	return f.ResponseWriter.Write(p)
}

func newAnswerWriter(w http.ResponseWriter, ids []string, release func()) *answerWriter {
	a := &answerWriter{passWriter: passWriter{w}, pending: make(map[string]bool, len(ids)), release: release}
	for _, id := range ids {
		a.pending[id] = true
	}
	return a
}

func (a *answerWriter) Write(p []byte) (int, error) {
	if len(a.pending) > 0 && strings.HasPrefix(a.Header().Get("Content-Type"), "text/event-stream") {
		for _, id := range answeredIDs(p) {
			delete(a.pending, id)
		}
		if len(a.pending) == 0 {
			a.release()
		}
	}
	return a.ResponseWriter.Write(p)
}

// answeredIDs returns the ids (as idKey gives them) of the JSON-RPC
// responses in the server-sent events of p. It reads each event's data only
// up to its result or error, however large the result.
func answeredIDs(p []byte) []string {
	var ids []string
	for line := range bytes.Lines(p) {
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		if id, ok := responseID(data); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// responseID reports whether data, one JSON-RPC message, is a response
// (an id with a result or an error, and no method), and its id.
func responseID(data []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	var id json.RawMessage
	answer := false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", false
		}
		switch t {
		case "method":
			return "", false
		case "id":
			if dec.Decode(&id) != nil {
				return "", false
			}
			continue
		case "result", "error":
			answer = true
		}
		if answer && id != nil {
			if _, err := dec.Token(); err != nil { // the value starts well
				return "", false
			}
			break
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return "", false
		}
	}
	if !answer || id == nil || string(id) == "null" {
		return "", false
	}
	return idKey(id), true
}

func remoteHost(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

var loopbackNames = []string{"localhost", "127.0.0.1", "::1"}

func (g *guard) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if slices.Contains(loopbackNames, host) {
		return true
	}
	for _, a := range g.opts.AllowedHosts {
		if strings.EqualFold(a, host) || strings.EqualFold(a, hostport) {
			return true
		}
	}
	return false
}

func (g *guard) originAllowed(origin string) bool {
	for _, a := range g.opts.AllowedOrigins {
		if strings.EqualFold(strings.TrimSuffix(a, "/"), origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return slices.Contains(loopbackNames, strings.ToLower(u.Hostname()))
}

// Serve serves MCP over streamable HTTP at /mcp on ln until ctx is done,
// then shuts down gracefully: it stops accepting, lets calls in flight run
// for up to grace, cancels the rest (stopping their tools), and closes.
func (s *Server) Serve(ctx context.Context, ln net.Listener, opts HTTPOptions, grace time.Duration) error {
	g := s.newGuard(opts)
	mux := http.NewServeMux()
	mux.Handle("/mcp", g)
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Stop accepting; Shutdown also waits for idle connections, which
	// event streams never become, so it runs alongside the call drain.
	sdctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	hsDone := make(chan struct{})
	go func() {
		hs.Shutdown(context.Background())
		close(hsDone)
	}()
	err := s.Shutdown(sdctx)
	// The calls have returned; let their answers reach the clients, then
	// end the sessions, whose event streams would otherwise never close.
	select {
	case <-g.drained():
	case <-time.After(5 * time.Second):
	}
	time.Sleep(100 * time.Millisecond)
	for ss := range s.sdk.Sessions() {
		ss.Close()
	}
	select {
	case <-hsDone:
	case <-time.After(2 * time.Second):
	}
	hs.Close()
	if errors.Is(err, context.DeadlineExceeded) {
		err = nil
	}
	if e := <-errc; e != nil && !errors.Is(e, http.ErrServerClosed) {
		return e
	}
	return err
}
