package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/mcp/oauth"
	"github.com/toolhost/toolhost/plugin"
)

// Kind is the adapter kind of tools from remote MCP servers.
const Kind = "mcp"

// AdapterOptions configure NewAdapter.
type AdapterOptions struct {
	// Logger is the parent logger; the adapter names it "mcp". Header
	// values are never logged.
	Logger hclog.Logger
	// Secrets resolves the secrets a server's headers reference ($NAME)
	// when the adapter connects at load time, before any call exists to
	// carry them (the config's secret blocks). Calls use the secrets the
	// pipeline resolved for them (Request.Secrets). Nil: a server whose
	// headers need secrets is first reached on its first call.
	Secrets plugin.SecretSource
	// Version is sent to servers as the client version.
	Version string
	// ConnectTimeout bounds connecting to a server and listing its tools
	// at load (default 5s). A server not reached by then does not stop the
	// host: its tools load as unavailable.
	ConnectTimeout time.Duration
	// MaxResponseBytes caps one HTTP response from a server (default 10 MiB).
	MaxResponseBytes int64
	// Retries is how many times a call is retried on a transient error,
	// with exponential backoff from 100ms (default 3).
	Retries int
	// ProbeWait is how long checking a down server's availability waits for
	// a reconnection attempt (default 1.5s); attempts are at most one per
	// RetryGap (default 1s) per server.
	ProbeWait, RetryGap time.Duration
	// TokenDir holds the OAuth tokens of servers with an oauth block, one
	// file per server URL (see oauth.Store); empty: tokens are kept in
	// memory only.
	TokenDir string
	// Browser sends a person to log in to a server whose token needs one:
	// with it, a 401 at load or during a call runs the login in-line;
	// without it (an unattended host) such a server's tools are
	// unavailable until `host auth login NAME` stores a token.
	Browser oauth.Browser
	// LoginTimeout bounds the wait for a person's browser to come back
	// from a login (default 5m).
	LoginTimeout time.Duration
}

// Adapter is the plugin.Adapter for remote MCP servers: each allowed tool
// of an mcp_server becomes a tool that calls the server over streamable
// HTTP. Tools of one server share one connection (one MCP session),
// opened at load and reopened after failures. It is safe for concurrent use.
type Adapter struct {
	opts AdapterOptions
	log  hclog.Logger

	mu      sync.Mutex
	remotes map[string]*remote
	closed  bool
}

var _ plugin.Adapter = (*Adapter)(nil)

// NewAdapter returns an MCP client adapter.
func NewAdapter(opts AdapterOptions) *Adapter {
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = 5 * time.Second
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = 10 << 20
	}
	if opts.Retries <= 0 {
		opts.Retries = 3
	}
	if opts.ProbeWait <= 0 {
		opts.ProbeWait = 1500 * time.Millisecond
	}
	if opts.RetryGap <= 0 {
		opts.RetryGap = time.Second
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Adapter{opts: opts, log: log.Named("mcp"), remotes: map[string]*remote{}}
}

// Kind implements plugin.Adapter.
func (a *Adapter) Kind() string { return Kind }

// Close implements plugin.Adapter: it ends every server session.
func (a *Adapter) Close() error {
	a.mu.Lock()
	a.closed = true
	rs := make([]*remote, 0, len(a.remotes))
	for _, r := range a.remotes {
		rs = append(rs, r)
	}
	a.mu.Unlock()
	for _, r := range rs {
		r.close()
	}
	return nil
}

// CheckURL checks an MCP server URL: https, or plain http to a loopback
// address only.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("MCP server URL %q: %v", raw, err)
	}
	if u.Host == "" || u.User != nil {
		return fmt.Errorf("MCP server URL %q: want https://host/path, without credentials", raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		h := u.Hostname()
		if h == "localhost" {
			return nil
		}
		if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() {
			return nil
		}
		return fmt.Errorf("MCP server URL %q: plain http is allowed only to loopback addresses; use https", raw)
	}
	return fmt.Errorf("MCP server URL %q: the scheme must be https (or http to loopback)", raw)
}

// Load implements plugin.Adapter. The first Load for a server connects to
// it and lists its tools (within ConnectTimeout); when that fails, the
// server's tools load as unavailable, with an unknown schema that is
// fetched and enforced once the server is reached.
func (a *Adapter) Load(ctx context.Context, spec *plugin.Spec) (plugin.Tool, error) {
	srv := spec.Source.Server
	if srv == nil || srv.Name == "" {
		return nil, errors.New("an mcp tool needs its server (Source.Server)")
	}
	if err := CheckURL(srv.URL); err != nil {
		return nil, err
	}
	name := spec.Source.Tool
	if name == "" {
		name = strings.TrimPrefix(spec.Name, srv.Name+"/")
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil, errors.New("adapter is closed")
	}
	r, ok := a.remotes[srv.Name]
	if !ok {
		r = newRemote(a, *srv, spec.Capabilities.Secrets)
		if srv.OAuth != nil {
			var err error
			if r.auth, err = a.newAuth(r, a.opts.Browser, false); err != nil {
				a.mu.Unlock()
				return nil, err
			}
		}
		a.remotes[srv.Name] = r
	} else if r.srv.URL != srv.URL {
		a.mu.Unlock()
		return nil, fmt.Errorf("MCP server %q is configured twice with different URLs", srv.Name)
	}
	a.mu.Unlock()

	r.loadOnce(ctx)
	t := &remoteTool{r: r, name: name, full: spec.Name}
	mt, ok, why := r.manifestTool(name)
	switch {
	case ok:
		t.desc = descriptorOf(mt)
	case why != "":
		// Reached, but the server does not offer the tool (or offers one
		// the host refuses): listed as unavailable, never silently dropped.
		a.log.Warn("MCP tool unavailable", "server", srv.Name, "tool", name, "reason", why)
		t.desc = plugin.Descriptor{InputSchema: json.RawMessage(`{"type":"object"}`),
			Description: fmt.Sprintf("Tool %q of MCP server %q (unavailable: %s).", name, srv.Name, why)}
	default:
		t.lateSchema = true
		t.desc = plugin.Descriptor{InputSchema: json.RawMessage(`{"type":"object"}`),
			Description: fmt.Sprintf("Tool %q of MCP server %q, which was unreachable when the host started; its schemas are checked on every call.", name, srv.Name)}
	}
	return t, nil
}

// Offer is what a configured MCP server offers, as it listed its tools when
// the host first reached it.
type Offer struct {
	// Reachable is false when the server could not be reached (Reason
	// says why); Tools is then empty.
	Reachable bool
	Reason    string
	// Tools are the server's tools by name, those the host refused at
	// ingress included (with Rejected saying why).
	Tools []OfferedTool
}

// OfferedTool is one tool a server lists.
type OfferedTool struct {
	Name        string
	Title       string
	Description string
	Rejected    string // why the host refuses it; empty when usable
}

// Offered returns what the named server offers. The server is one whose
// tools were loaded (it is contacted once, at the first Load); false when no
// tool of that server was loaded.
func (a *Adapter) Offered(server string) (Offer, bool) {
	a.mu.Lock()
	r, ok := a.remotes[server]
	a.mu.Unlock()
	if !ok {
		return Offer{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.manifest == nil {
		reason := r.reason
		if reason == "" {
			reason = "not contacted"
		}
		return Offer{Reason: reason}, true
	}
	o := Offer{Reachable: true}
	for name, e := range r.manifest {
		o.Tools = append(o.Tools, OfferedTool{Name: name, Title: e.tool.Title, Description: e.tool.Description})
	}
	for name, why := range r.rejected {
		o.Tools = append(o.Tools, OfferedTool{Name: name, Rejected: why})
	}
	slices.SortFunc(o.Tools, func(x, y OfferedTool) int { return strings.Compare(x.Name, y.Name) })
	return o, true
}

// remote is one MCP server: its connection, manifest and health.
type remote struct {
	a       *Adapter
	srv     plugin.MCPServer
	secrets []string // secret names its headers may use
	log     hclog.Logger
	hc      *http.Client
	auth    *oauth.Handler // nil: no oauth block

	loadMu sync.Mutex
	loaded bool

	mu       sync.Mutex
	session  *sdk.ClientSession
	headers  http.Header // expanded; never logged
	manifest map[string]*manifestEntry
	rejected map[string]string
	down     bool
	reason   string
	cause    error         // of reason, for errors.Is: *oauth.LoginRequiredError, or nil
	last     time.Time     // last connection attempt
	probing  chan struct{} // closed when the current probe ends
	connMu   sync.Mutex    // serializes connection attempts
}

// manifestEntry is one remote tool that passed the ingress checks.
type manifestEntry struct {
	tool   *sdk.Tool
	input  *plugin.Schema
	output *plugin.Schema
}

func newRemote(a *Adapter, srv plugin.MCPServer, secrets []string) *remote {
	r := &remote{a: a, srv: srv, secrets: secrets, log: a.log.With("server", srv.Name)}
	base := http.DefaultTransport.(*http.Transport).Clone()
	r.hc = &http.Client{
		Transport: &remoteTransport{r: r, base: base},
		// A redirect could carry the auth headers elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return r
}

// loadOnce connects and lists at most once for all the server's Loads.
func (r *remote) loadOnce(ctx context.Context) {
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	if r.loaded {
		return
	}
	r.loaded = true
	if err := r.setHeaders(r.lookupSecrets(ctx)); err != nil {
		r.markDown(err)
		r.log.Warn("MCP server not contacted at start; its tools are unavailable until a call brings the secrets", "error", err)
		return
	}
	ctx, cancel := context.WithTimeout(r.loginContext(ctx), r.a.opts.ConnectTimeout)
	defer cancel()
	if _, err := r.connect(ctx); err != nil {
		if r.needsLogin(err) {
			r.log.Warn("MCP server needs a login; its tools are unavailable until then", "error", r.redact(err))
			return
		}
		r.log.Warn("MCP server unreachable at start; its tools are listed as unavailable", "error", r.redact(err))
	}
}

func (r *remote) lookupSecrets(ctx context.Context) *plugin.Secrets {
	vals := map[string]string{}
	if src := r.a.opts.Secrets; src != nil {
		for _, n := range r.secrets {
			if v, err := src.LookupSecret(ctx, n); err == nil {
				vals[n] = v
			}
		}
	}
	return plugin.NewSecrets(vals)
}

// setHeaders expands the configured headers with secrets. It fails when a
// header uses a secret that is not resolved.
func (r *remote) setHeaders(sec *plugin.Secrets) error {
	h := http.Header{}
	for k, v := range r.srv.Headers {
		// Find the secrets the header names ($NAME or ${NAME}) that have
		// no value; Expand leaves those as written.
		var missing string
		os.Expand(v, func(name string) string {
			if _, ok := sec.Value(name); !ok && missing == "" && slices.Contains(r.secrets, name) {
				missing = name
			}
			return ""
		})
		if missing != "" {
			return fmt.Errorf("header %s uses the secret %s, which has no value", k, missing)
		}
		h.Set(k, sec.Expand(v))
	}
	r.mu.Lock()
	r.headers = h
	r.mu.Unlock()
	return nil
}

func (r *remote) manifestTool(name string) (*manifestEntry, bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.manifest == nil {
		return nil, false, ""
	}
	if why, ok := r.rejected[name]; ok {
		return nil, false, why
	}
	e, ok := r.manifest[name]
	if !ok {
		return nil, false, "the server does not offer it"
	}
	return e, true, ""
}

// connect returns the server's session, opening one (and listing the
// tools, the first time) when there is none.
func (r *remote) connect(ctx context.Context) (*sdk.ClientSession, error) {
	r.connMu.Lock()
	defer r.connMu.Unlock()
	r.mu.Lock()
	cs := r.session
	r.mu.Unlock()
	if cs != nil {
		return cs, nil
	}
	r.mu.Lock()
	r.last = time.Now()
	r.mu.Unlock()
	// The shared session has no standalone stream: nothing a server sends
	// outside a call's stream could reach a caller (a call that may be
	// asked has a session of its own, askingSession). A server built on
	// the Go SDK fails a request it has no stream for at once; opening
	// the stream to refuse such requests ourselves put every call of the
	// session at the mercy of the server's GET handling (a malformed
	// event there failed the call in flight).
	cs, err := connectBounded(ctx, r.client(nil), r.transport(true))
	if err != nil {
		err = fmt.Errorf("connecting: %w", err)
		r.markDown(err)
		return nil, err
	}
	r.mu.Lock()
	listed := r.manifest != nil
	r.mu.Unlock()
	if !listed {
		if err := r.list(ctx, cs); err != nil {
			cs.Close()
			r.markDown(err)
			return nil, err
		}
	}
	r.mu.Lock()
	r.session = cs
	r.down, r.reason, r.cause = false, "", nil
	r.mu.Unlock()
	return cs, nil
}

// streamResumes is how many times a call's event stream that ends before
// its result (a server closing it on purpose, SEP-1699, or a proxy cutting
// it) is taken up again: a GET with Last-Event-ID after the server's
// retry delay (or the SDK's backoff of 1-2 s). One attempt per break; a
// stream that makes progress between breaks may break again. A server
// that gives no event IDs cannot be resumed, and the call fails as before.
const streamResumes = 1

// transport returns a transport to the server. noStandalone: no GET stream
// for the session's own messages.
func (r *remote) transport(noStandalone bool) *sdk.StreamableClientTransport {
	t := &sdk.StreamableClientTransport{
		Endpoint: r.srv.URL, HTTPClient: r.hc, MaxRetries: streamResumes,
		DisableStandaloneSSE: noStandalone, MaxEventSize: int(r.a.opts.MaxResponseBytes),
	}
	if r.auth != nil {
		// Set only when there is one: a nil *Handler in the interface
		// would read as a handler.
		t.OAuthHandler = r.auth
	}
	return t
}

// client returns the MCP client of a session; opts carries the handlers of
// a session that may be asked (nil: none, and the server is refused).
func (r *remote) client(opts *sdk.ClientOptions) *sdk.Client {
	return sdk.NewClient(&sdk.Implementation{Name: "toolhost", Version: r.a.opts.Version}, opts)
}

// connectBounded connects, returning when ctx is done even if the SDK's
// own cleanup of a failed attempt (closing a session on a server that does
// not answer) takes longer; that cleanup finishes in the background.
func connectBounded(ctx context.Context, client *sdk.Client, tr sdk.Transport) (*sdk.ClientSession, error) {
	type result struct {
		cs  *sdk.ClientSession
		err error
	}
	ch := make(chan result, 1)
	go func() {
		cs, err := client.Connect(ctx, tr, nil)
		ch <- result{cs, err}
	}()
	select {
	case r := <-ch:
		return r.cs, r.err
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.cs != nil {
				r.cs.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// maxTools bounds a server's manifest.
const maxTools = 10000

// list fetches the manifest and checks it at ingress: every tool needs a
// valid, unique name of at most 128 characters (with the server's prefix),
// an object input schema and a valid output schema, or it is rejected
// with a log line naming the server and tool.
func (r *remote) list(ctx context.Context, cs *sdk.ClientSession) error {
	var tools []*sdk.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("listing tools: %w", err)
		}
		if len(tools) >= maxTools {
			return fmt.Errorf("listing tools: the server offers more than %d", maxTools)
		}
		tools = append(tools, t)
	}
	manifest := map[string]*manifestEntry{}
	rejected := map[string]string{}
	reject := func(name, why string) {
		rejected[name] = why
		delete(manifest, name)
		r.log.Warn("MCP tool rejected at ingress", "tool", name, "reason", why)
	}
	seen := map[string]int{}
	for _, t := range tools {
		seen[t.Name]++
	}
	for _, t := range tools {
		switch {
		case seen[t.Name] > 1:
			if _, done := rejected[t.Name]; !done {
				reject(t.Name, fmt.Sprintf("the server lists %d tools with this name", seen[t.Name]))
			}
			continue
		case t.Name == "" || len(t.Name) > 128:
			reject(t.Name, fmt.Sprintf("name of %d characters; want 1-128", len(t.Name)))
			continue
		case !plugin.ValidToolName(r.srv.Name + "/" + t.Name):
			reject(t.Name, fmt.Sprintf("%q is not a valid tool name under %q (letters, digits, '_', '-', '.', '/'; at most 128 in all)", t.Name, r.srv.Name+"/"))
			continue
		}
		e, err := checkManifestTool(t)
		if err != nil {
			reject(t.Name, err.Error())
			continue
		}
		manifest[t.Name] = e
	}
	r.mu.Lock()
	r.manifest, r.rejected = manifest, rejected
	r.mu.Unlock()
	return nil
}

func checkManifestTool(t *sdk.Tool) (*manifestEntry, error) {
	in, err := json.Marshal(t.InputSchema)
	if err != nil || t.InputSchema == nil {
		return nil, errors.New("no input schema")
	}
	e := &manifestEntry{tool: t}
	if e.input, err = plugin.CompileSchema(in); err != nil {
		return nil, fmt.Errorf("input schema: %v", err)
	}
	var typ struct {
		Type any `json:"type"`
	}
	if json.Unmarshal(in, &typ) != nil || typ.Type != "object" {
		return nil, errors.New(`input schema must have "type": "object"`)
	}
	if t.OutputSchema != nil {
		out, err := json.Marshal(t.OutputSchema)
		if err != nil {
			return nil, fmt.Errorf("output schema: %v", err)
		}
		if e.output, err = plugin.CompileSchema(out); err != nil {
			return nil, fmt.Errorf("output schema: %v", err)
		}
	}
	return e, nil
}

func descriptorOf(e *manifestEntry) plugin.Descriptor {
	t := e.tool
	d := plugin.Descriptor{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: e.input.Raw()}
	if e.output != nil {
		d.OutputSchema = e.output.Raw()
	}
	if a := t.Annotations; a != nil {
		// Hints only: the operator's tier decides policy.
		d.Annotations = &plugin.Annotations{Title: a.Title, ReadOnlyHint: a.ReadOnlyHint, DestructiveHint: a.DestructiveHint,
			IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}
	}
	return d
}

// markDown records a failure to reach the server and drops its session.
func (r *remote) markDown(err error) {
	reason := fmt.Sprintf("MCP server %q is unreachable: %s", r.srv.Name, r.redact(err))
	var cause error
	if r.needsLogin(err) {
		cause = &oauth.LoginRequiredError{Server: r.srv.Name}
		reason = cause.Error()
	}
	r.mu.Lock()
	cs := r.session
	r.session = nil
	r.down = true
	r.reason, r.cause = reason, cause
	r.last = time.Now()
	r.mu.Unlock()
	if cs != nil {
		go cs.Close()
	}
}

// dropSession forgets a session that failed, so the next attempt opens a
// new one.
func (r *remote) dropSession(cs *sdk.ClientSession) {
	r.mu.Lock()
	if r.session == cs {
		r.session = nil
	}
	r.mu.Unlock()
	go cs.Close()
}

// available reports whether the server can be called. A server that is
// down is probed again (at most once per RetryGap), and the answer waits
// up to ProbeWait for that probe, so that the first call after a server
// came back finds it.
func (r *remote) available() (bool, string, error) {
	r.mu.Lock()
	if !r.down || r.headers == nil || r.auth != nil && r.a.opts.Browser != nil && r.auth.NeedsLogin() {
		// Up, or not contacted yet because its secrets come with the
		// first call, or waiting for a login the call can run: let the
		// call find out.
		r.mu.Unlock()
		return true, "", nil
	}
	// Only the caller that starts a probe waits for it: while one runs,
	// others get the last known state at once.
	var ch chan struct{}
	if r.probing == nil && time.Since(r.last) >= r.a.opts.RetryGap {
		ch = make(chan struct{})
		r.probing = ch
		go r.probe(ch)
	}
	r.mu.Unlock()
	if ch != nil {
		t := time.NewTimer(r.a.opts.ProbeWait)
		select {
		case <-ch:
		case <-t.C:
		}
		t.Stop()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.down {
		return true, "", nil
	}
	return false, r.reason, r.cause
}

func (r *remote) probe(done chan struct{}) {
	defer func() {
		r.mu.Lock()
		r.probing = nil
		r.mu.Unlock()
		close(done)
	}()
	r.mu.Lock()
	hdrOK := r.headers != nil
	r.mu.Unlock()
	if !hdrOK {
		return // the secrets arrive with the first call
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.a.opts.ConnectTimeout)
	defer cancel()
	if _, err := r.connect(ctx); err == nil {
		r.log.Info("MCP server reachable again")
	}
}

func (r *remote) close() {
	r.mu.Lock()
	cs := r.session
	r.session = nil
	r.mu.Unlock()
	if cs != nil {
		cs.Close()
	}
}

// remoteTool is one allowed tool of a remote server.
type remoteTool struct {
	r    *remote
	name string // the server's name for it
	full string // the host's name: server/tool
	desc plugin.Descriptor
	// lateSchema: the server was down at load, so the host registered a
	// permissive schema; the manifest's schemas are enforced here.
	lateSchema bool
}

var (
	_ plugin.Tool             = (*remoteTool)(nil)
	_ plugin.Availability     = (*remoteTool)(nil)
	_ plugin.UnavailableCause = (*remoteTool)(nil)
)

func (t *remoteTool) Descriptor() plugin.Descriptor { return t.desc }

// Available implements plugin.Availability.
func (t *remoteTool) Available() (bool, string) {
	ok, why, _ := t.AvailableCause()
	return ok, why
}

// AvailableCause implements plugin.UnavailableCause: a server that needs a
// login says so with an *oauth.LoginRequiredError, taken with its reason.
func (t *remoteTool) AvailableCause() (bool, string, error) {
	if ok, why, cause := t.r.available(); !ok {
		return false, why, cause
	}
	if _, ok, why := t.r.manifestTool(t.name); !ok && why != "" {
		return false, why, nil
	}
	return true, "", nil
}

// callTrack notes, per attempt of a call, that a response went over the
// size cap, and that the server accepted the call's request (a POST
// answered 2xx): after that, a failure does not show that the call never
// ran, whatever the error says (a resumed stream refused, a session the
// server forgot mid-call).
type callTrack struct {
	mu                  sync.Mutex
	exceeded, delivered bool
}

type trackKey struct{}

// Call implements plugin.Tool.
func (t *remoteTool) Call(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
	r := t.r
	if err := r.setHeaders(req.Secrets); err != nil {
		return nil, plugin.Errorf(plugin.CodeToolUnavailable, "MCP server %q: %v", r.srv.Name, err)
	}
	backoff := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		res, err, retry := t.attempt(ctx, req)
		if !retry || attempt >= r.a.opts.Retries {
			return res, err
		}
		req.Log.Debug("retrying MCP call", "attempt", attempt+1, "error", err)
		timer := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
		backoff *= 2
	}
}

// attempt makes one try; retry says whether trying again is safe.
func (t *remoteTool) attempt(ctx context.Context, req *plugin.Request) (*plugin.Result, error, bool) {
	r := t.r
	ctx = r.loginContext(ctx)
	cs, err := r.connect(ctx)
	var own *asker // set when the call runs on a session of its own
	if err == nil && asks(req) {
		// A call that may be asked runs on a session of its own, so that
		// whatever the server asks on it is this call's to answer.
		if cs, own, err = r.askingSession(ctx, req); err == nil {
			// Ended in the background: a server that does not answer
			// the DELETE must not hold the call's result back.
			defer func() { go cs.Close() }()
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err(), false
		}
		if r.needsLogin(err) {
			return nil, &plugin.Error{Code: plugin.CodeToolUnavailable, Message: (&oauth.LoginRequiredError{Server: r.srv.Name}).Error(), Err: oauth.ErrLoginRequired}, false
		}
		return nil, plugin.Errorf(plugin.CodeToolUnavailable, "MCP server %q: %v", r.srv.Name, err), true
	}
	e, ok, why := r.manifestTool(t.name)
	if !ok {
		if why == "" {
			why = "the server's tools are not listed yet"
		}
		return nil, plugin.Errorf(plugin.CodeToolUnavailable, "tool %q: %s", t.full, why), false
	}
	if t.lateSchema {
		if err := e.input.ValidateJSON(req.Arguments); err != nil {
			return nil, plugin.Errorf(plugin.CodeInvalidRequest, "invalid arguments: %v", err), false
		}
	}
	args := req.Arguments
	if len(req.Answers) > 0 {
		// Answers to a question the server asked (a toolhost server puts
		// it in _meta) go back the way it said: in _answers.
		if args, err = withAnswers(args, req.Answers); err != nil {
			return nil, plugin.Errorf(plugin.CodeInvalidRequest, "answers: %v", err), false
		}
	}
	track := &callTrack{}
	res, err := cs.CallTool(context.WithValue(ctx, trackKey{}, track), &sdk.CallToolParams{Name: t.name, Arguments: json.RawMessage(args)})
	if err == nil {
		out, err := toPluginResult(res)
		if err == nil && t.lateSchema && e.output != nil && !out.IsError {
			if len(out.StructuredContent) == 0 {
				return nil, plugin.Errorf(plugin.CodeOutputInvalid, "tool %q has an output schema but returned no structured content", t.full), false
			}
			if verr := e.output.ValidateJSON(out.StructuredContent); verr != nil {
				return nil, plugin.Errorf(plugin.CodeOutputInvalid, "tool %q returned output that does not match its output schema: %v", t.full, verr), false
			}
		}
		return out, err, false
	}
	track.mu.Lock()
	exceeded, delivered := track.exceeded, track.delivered
	track.mu.Unlock()
	// A failed call's shared session is suspect and dropped; a session of
	// its own is closed with the call anyway.
	dropShared := func() {
		if own == nil {
			r.dropSession(cs)
		}
	}
	switch {
	case exceeded:
		dropShared()
		return nil, plugin.LimitError("http_response", "MCP server %q sent a response over %s", r.srv.Name, plugin.FormatSize(r.a.opts.MaxResponseBytes)), false
	case ctx.Err() != nil:
		return nil, ctx.Err(), false
	case r.needsLogin(err):
		// The token was refused mid-session (revoked, or a step-up) and
		// nobody can log in: the request never reached the tool.
		dropShared()
		return nil, &plugin.Error{Code: plugin.CodeToolUnavailable, Message: (&oauth.LoginRequiredError{Server: r.srv.Name}).Error(), Err: oauth.ErrLoginRequired}, false
	}
	if cause, ok := own.cause(err); ok {
		// The caller's client was not asked, or failed: the call says so
		// as the pipeline did.
		return nil, cause, false
	}
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		code := plugin.CodeToolExecutionFailed
		if werr.Code == -32602 {
			code = plugin.CodeInvalidRequest
		}
		return nil, plugin.Errorf(code, "MCP server %q: %s", r.srv.Name, werr.Message), false
	}
	// A transport failure: the session is suspect.
	dropShared()
	if !delivered && notDelivered(err) || req.Spec != nil && req.Spec.Tier == plugin.TierReadOnly {
		return nil, plugin.Errorf(plugin.CodeToolUnavailable, "MCP server %q: %v", r.srv.Name, err), true
	}
	r.markDown(err)
	return nil, plugin.Errorf(plugin.CodeToolUnavailable, "MCP server %q failed during the call (it may have run): %v", r.srv.Name, err), false
}

// notDelivered reports whether err shows that the request never reached
// the server's tool, so that retrying cannot repeat a side effect: the
// connection was refused, or the server no longer knew the session.
func notDelivered(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "connection refused") || strings.Contains(msg, "session not found") ||
		strings.Contains(msg, "404 Not Found") || strings.Contains(msg, "503 Service Unavailable")
}

// toPluginResult maps an MCP result to the host's. A server's tool error
// stays a tool error (isError); the pipeline gives it its code.
func toPluginResult(res *sdk.CallToolResult) (*plugin.Result, error) {
	out := &plugin.Result{IsError: res.IsError}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			out.Content = append(out.Content, plugin.Text(c.Text))
		case *sdk.ImageContent:
			// The model sees the image; the call keeps it as an artifact too,
			// so that it can be fetched by ID after the conversation moves on.
			out.Content = append(out.Content,
				plugin.Content{Type: "image", Data: c.Data, MIMEType: c.MIMEType},
				plugin.Content{Type: "resource", URI: plugin.ArtifactURIPrefix + fmt.Sprintf("image-%d%s", len(out.Content), imageExt(c.MIMEType)), MIMEType: c.MIMEType, Data: c.Data})
		case *sdk.AudioContent:
			out.Content = append(out.Content, plugin.Content{Type: "audio", Data: c.Data, MIMEType: c.MIMEType})
		case *sdk.ResourceLink:
			out.Content = append(out.Content, plugin.Content{Type: "resource_link", URI: c.URI, Name: c.Name, MIMEType: c.MIMEType})
		case *sdk.EmbeddedResource:
			rc := c.Resource
			switch {
			case rc == nil:
			case rc.Blob == nil:
				// Text resources are kept as artifacts of the call (the
				// pipeline stores toolhost-artifact: resources); the model
				// sees a line naming it, and clients of host serve a link.
				out.Content = append(out.Content,
					plugin.Textf("[resource %s (%s) kept as an artifact of this call]", rc.URI, plugin.FormatSize(int64(len(rc.Text)))),
					plugin.Content{Type: "resource", URI: plugin.ArtifactURIPrefix + artifactName(rc.URI), MIMEType: rc.MIMEType, Text: rc.Text})
			default:
				out.Content = append(out.Content,
					plugin.Textf("[resource %s (%s, %s) kept as an artifact of this call]", rc.URI, rc.MIMEType, plugin.FormatSize(int64(len(rc.Blob)))),
					plugin.Content{Type: "resource", URI: plugin.ArtifactURIPrefix + artifactName(rc.URI), MIMEType: rc.MIMEType, Data: rc.Blob})
			}
		}
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, plugin.Errorf(plugin.CodeOutputInvalid, "structured content: %v", err)
		}
		out.StructuredContent = b
	}
	if !res.IsError {
		// A question from a toolhost server: carried on as needs-input.
		if raw, ok := res.Meta[MetaQuestion]; ok {
			var q plugin.Question
			if b, err := json.Marshal(raw); err == nil && json.Unmarshal(b, &q) == nil && q.ID != "" {
				out.NeedsInput = &q
			}
		}
	} else if c, ok := res.Meta[MetaCode].(string); ok && slices.Contains(plugin.Codes(), plugin.Code(c)) {
		// A toolhost server's code survives the hop.
		out.Code = plugin.Code(c)
	}
	if len(res.InputRequests) > 0 {
		return nil, plugin.Errorf(plugin.CodeToolExecutionFailed, "the MCP server asked for input (elicitation), which toolhost does not forward")
	}
	return out, nil
}

// artifactName names the artifact of a resource after its URI's last
// segment.
func artifactName(uri string) string {
	name := uri
	if i := strings.LastIndexAny(name, "/:"); i >= 0 && i < len(name)-1 {
		name = name[i+1:]
	}
	if len(name) > 100 {
		name = name[:100]
	}
	return name
}

// withAnswers adds answers to the arguments as _answers.
func withAnswers(args json.RawMessage, answers map[string]json.RawMessage) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	a, err := json.Marshal(answers)
	if err != nil {
		return nil, err
	}
	m[AnswersArgument] = a
	return json.Marshal(m)
}

// remoteTransport adds the server's headers to every request and caps
// every response body.
type remoteTransport struct {
	r    *remote
	base http.RoundTripper
}

func (rt *remoteTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rt.r.mu.Lock()
	hdr := rt.r.headers
	rt.r.mu.Unlock()
	if len(hdr) > 0 {
		req = req.Clone(req.Context())
		for k, v := range hdr {
			req.Header[k] = slices.Clone(v)
		}
	}
	resp, err := rt.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	track, _ := req.Context().Value(trackKey{}).(*callTrack)
	if track != nil && req.Method == http.MethodPost && resp.StatusCode/100 == 2 {
		track.mu.Lock()
		track.delivered = true
		track.mu.Unlock()
	}
	resp.Body = &capReader{rc: resp.Body, left: rt.r.a.opts.MaxResponseBytes, track: track}
	return resp, nil
}

// errResponseTooLarge is returned by a capped body past its cap.
var errResponseTooLarge = errors.New("response over the size cap")

type capReader struct {
	rc    io.ReadCloser
	left  int64
	track *callTrack
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		if c.track != nil {
			c.track.mu.Lock()
			c.track.exceeded = true
			c.track.mu.Unlock()
		}
		return 0, errResponseTooLarge
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.rc.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		if c.track != nil {
			c.track.mu.Lock()
			c.track.exceeded = true
			c.track.mu.Unlock()
		}
		return n, errResponseTooLarge
	}
	return n, err
}

func (c *capReader) Close() error { return c.rc.Close() }

// imageExt returns a file extension for an image MIME type ("" if unknown).
func imageExt(mime string) string {
	switch mime {
	case "image/png":
		return ".png"
	case "image/jpeg":
		return ".jpg"
	case "image/gif":
		return ".gif"
	case "image/webp":
		return ".webp"
	case "image/svg+xml":
		return ".svg"
	}
	return ""
}
