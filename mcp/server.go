package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/plugin/declared"
)

// ResourceURIPrefix starts the URI under which every artifact is offered
// as an MCP resource: toolhost://artifacts/{id}. (Not to be confused with
// plugin.ArtifactURIPrefix, which marks content a tool wants kept.)
const ResourceURIPrefix = "toolhost://artifacts/"

// Keys toolhost adds to the _meta of tools and results.
const (
	// MetaName is the tool's toolhost name (the MCP name is its wire name).
	MetaName = "dev.toolhost/name"
	// MetaTier is the tool's safety tier.
	MetaTier = "dev.toolhost/tier"
	// MetaAvailable is false on a tool whose backend is down.
	MetaAvailable = "dev.toolhost/available"
	// MetaUnavailable says why a tool is unavailable.
	MetaUnavailable = "dev.toolhost/unavailable"
	// MetaCallID is the host's call ID (audit line, artifacts).
	MetaCallID = "dev.toolhost/callId"
	// MetaCode is the stable error code of a failed call.
	MetaCode = "dev.toolhost/code"
	// MetaLimit names the limit a LIMIT_EXCEEDED call hit.
	MetaLimit = "dev.toolhost/limit"
	// MetaTruncated describes how a result's text was shortened.
	MetaTruncated = "dev.toolhost/truncated"
	// MetaQuestion is the question of a call that needs input.
	MetaQuestion = "dev.toolhost/question"
)

// AnswersArgument is the argument a client without elicitation adds to a
// call to answer the question a tool asked: {"_answers": {"id": value}}.
// It is removed from the arguments before the call reaches the pipeline.
const AnswersArgument = "_answers"

// ServerOptions configure NewServer.
type ServerOptions struct {
	// Name and Version identify the server to clients (default "toolhost"
	// and "dev").
	Name, Version string
	// Instructions are sent to clients that show them to the model.
	Instructions string
	// Logger is the parent logger; the server names it "mcp". Nil logs nothing.
	Logger hclog.Logger
	// ProgressInterval is how long a call runs before the first progress
	// notification, and the interval between them (default 1s). Only calls
	// whose request carries a progress token get them.
	ProgressInterval time.Duration
	// MaxResourceBytes caps the size of an artifact read as a resource
	// (default 64 MiB); larger ones are read with `host artifact ID`.
	MaxResourceBytes int64

	// Prompts, Resources and ResourceTemplates are served besides the
	// tools (a configuration's prompt, resource and resource_template
	// blocks: config.Config has them). The prompts capability is
	// advertised only when there are prompts, completions only when some
	// argument or variable lists values, and resource subscriptions only
	// when there are resources.
	Prompts           []declared.Prompt
	Resources         []declared.Resource
	ResourceTemplates []declared.Template
	// ResourcePollInterval is how often the file of a path-backed resource
	// that a client subscribed to is checked for changes (default 2s). Files
	// are only watched while someone is subscribed.
	ResourcePollInterval time.Duration
}

// Server is toolhost's MCP front-end: it offers a plugin.Host's tools to MCP
// clients. One Server serves any number of sessions (stdio, HTTP) at once.
// The tools offered are those registered when NewServer is called.
type Server struct {
	host *plugin.Host
	opts ServerOptions
	log  hclog.Logger
	sdk  *sdk.Server
	seal *sealer

	offer  *offer
	refuse map[string]string // methods refused with -32601, and why
	watch  *watcher
	// logging holds the sessions that set a log level
	// (logging/setLevel): their calls' log messages reach them.
	logging sync.Map // *sdk.ServerSession -> struct{}

	// stop is cancelled to abort every in-flight call (Shutdown's deadline).
	stop     context.Context
	stopAll  context.CancelFunc
	mu       sync.Mutex
	inflight int
	idle     chan struct{} // closed and replaced when inflight drops to 0
	closing  bool
}

// NewServer returns an MCP server for the tools of h.
func NewServer(h *plugin.Host, opts ServerOptions) (*Server, error) {
	if h == nil {
		return nil, errors.New("mcp: nil host")
	}
	if opts.Name == "" {
		opts.Name = "toolhost"
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.ProgressInterval <= 0 {
		opts.ProgressInterval = time.Second
	}
	if opts.MaxResourceBytes <= 0 {
		opts.MaxResourceBytes = 64 << 20
	}
	if opts.ResourcePollInterval <= 0 {
		opts.ResourcePollInterval = 2 * time.Second
	}
	off, err := newOffer(opts)
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	seal, err := newSealer()
	if err != nil {
		return nil, err
	}
	s := &Server{host: h, opts: opts, log: log.Named("mcp"), seal: seal, idle: make(chan struct{}), offer: off, refuse: off.refusals()}
	s.watch = &watcher{s: s, interval: opts.ResourcePollInterval, watches: map[string]*watch{}, sessions: map[*sdk.ServerSession]bool{}}
	s.watch.ctx, s.watch.cancel = context.WithCancel(context.Background())
	close(s.idle)
	s.stop, s.stopAll = context.WithCancel(context.Background())
	// What is advertised is what is served: logging/setLevel is answered
	// by the SDK; prompts, completions and resource subscriptions only
	// when configured, and refused otherwise (refuseUnserved).
	sopts := &sdk.ServerOptions{
		Instructions: opts.Instructions,
		Capabilities: &sdk.ServerCapabilities{
			Tools:     &sdk.ToolCapabilities{},
			Resources: &sdk.ResourceCapabilities{},
			Logging:   &sdk.LoggingCapabilities{},
		},
	}
	off.capabilities(sopts.Capabilities)
	if off.completes {
		sopts.CompletionHandler = s.complete
	}
	if len(off.resources) > 0 {
		// The SDK adds subscribe: true to the resources capability.
		sopts.SubscribeHandler, sopts.UnsubscribeHandler = s.subscribe, s.unsubscribe
	}
	s.sdk = sdk.NewServer(&sdk.Implementation{Name: opts.Name, Title: "toolhost", Version: opts.Version}, sopts)
	for _, info := range h.Tools() {
		t, err := mcpTool(info)
		if err != nil {
			return nil, fmt.Errorf("mcp: tool %q: %w", info.Descriptor.Name, err)
		}
		s.sdk.AddTool(t, s.toolHandler(info.Descriptor.Name))
	}
	s.sdk.AddResourceTemplate(&sdk.ResourceTemplate{
		Name:        "artifact",
		Title:       "toolhost artifact",
		URITemplate: ResourceURIPrefix + "{id}",
		Description: "The full output of a truncated tool result, or a file a tool produced. Results link to them.",
	}, s.readArtifact)
	if err := s.addDeclared(); err != nil {
		return nil, err
	}
	s.sdk.AddReceivingMiddleware(s.refuseUnserved, s.availabilityMiddleware, s.levelMiddleware)
	return s, nil
}

// levelMiddleware notes the sessions that set a log level, so that a call
// knows whether the log messages of its tool reach anyone
// (clientNotifier.Listening).
func (s *Server) levelMiddleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		if method != "logging/setLevel" || err != nil {
			return res, err
		}
		ss, ok := req.GetSession().(*sdk.ServerSession)
		if !ok {
			return res, err
		}
		if _, loaded := s.logging.LoadOrStore(ss, struct{}{}); !loaded {
			go func() {
				_ = ss.Wait()
				s.logging.Delete(ss)
			}()
		}
		return res, err
	}
}

// mcpTool describes a registered tool to MCP clients.
func mcpTool(info plugin.ToolInfo) (*sdk.Tool, error) {
	d := info.Descriptor
	if !json.Valid(d.InputSchema) {
		return nil, errors.New("input schema is not valid JSON")
	}
	t := &sdk.Tool{
		Name:        plugin.WireName(d.Name),
		Title:       d.Title,
		Description: d.Description,
		InputSchema: d.InputSchema,
		Meta:        sdk.Meta{MetaName: d.Name, MetaTier: info.Tier.String()},
	}
	if len(d.OutputSchema) > 0 {
		t.OutputSchema = d.OutputSchema
	}
	if a := d.Annotations; a != nil {
		t.Annotations = &sdk.ToolAnnotations{
			Title: a.Title, ReadOnlyHint: a.ReadOnlyHint, DestructiveHint: a.DestructiveHint,
			IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint,
		}
	}
	if !info.Available {
		t.Meta[MetaAvailable] = false
		t.Meta[MetaUnavailable] = info.Unavailable
	}
	return t, nil
}

// refuseUnserved answers the methods of capabilities not advertised
// (s.refuse: the SDK would answer them with empty lists, or errors without
// a code) with "method not found" (-32601), as JSON-RPC says of a method
// the server does not offer, and gives a duplicate initialize the code of
// an invalid request (-32600) instead of the SDK's code 0, which clients
// cannot tell from any other failure.
func (s *Server) refuseUnserved(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if why, ok := s.refuse[method]; ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method %q not found: %s", method, why)}
		}
		res, err := next(ctx, method, req)
		if err != nil && method == "initialize" {
			// The SDK's one uncoded failure of initialize is a second
			// initialize on the session.
			var werr *jsonrpc.Error
			if !errors.As(err, &werr) {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: err.Error()}
			}
		}
		return res, err
	}
}

// availabilityMiddleware rewrites tools/list answers with each tool's
// current availability: a tool whose backend went away stays listed, marked
// unavailable, and one that came back loses the mark.
func (s *Server) availabilityMiddleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		lr, ok := res.(*sdk.ListToolsResult)
		if err != nil || method != "tools/list" || !ok {
			return res, err
		}
		out := *lr
		out.Tools = make([]*sdk.Tool, len(lr.Tools))
		for i, t := range lr.Tools {
			out.Tools[i] = t
			name, ok := s.host.ResolveWireName(t.Name)
			if !ok {
				continue
			}
			info, ok := s.host.Tool(name)
			if !ok {
				continue
			}
			_, marked := t.Meta[MetaAvailable]
			if info.Available == !marked {
				continue
			}
			c := *t
			c.Meta = maps.Clone(t.Meta)
			if info.Available {
				delete(c.Meta, MetaAvailable)
				delete(c.Meta, MetaUnavailable)
			} else {
				c.Meta[MetaAvailable] = false
				c.Meta[MetaUnavailable] = info.Unavailable
			}
			out.Tools[i] = &c
		}
		return &out, nil
	}
}

// ServeStdio serves one MCP session over in and out (newline-delimited
// JSON-RPC, as `host serve --stdio` does on the process's stdin and
// stdout) until the client disconnects or ctx is done. When ctx is done it
// shuts down like Shutdown: calls in flight get up to grace to finish, then
// are cancelled, and the session is closed after they returned.
//
// When in has a SetReadDeadline method that works (a pipe or socket opened
// non-blocking, as `host serve` opens its stdin), messages are read on the session's own
// goroutine, which saves a hand-off between threads per call; otherwise a
// goroutine reads in, so that closing the session never waits for input.
// Lines that are not JSON-RPC messages are answered with a JSON-RPC error
// and the session goes on.
func (s *Server) ServeStdio(ctx context.Context, in io.ReadCloser, out io.WriteCloser, grace time.Duration) error {
	ss, err := s.sdk.Connect(context.WithoutCancel(ctx), &stdioTransport{in: in, out: out, log: s.log}, nil)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case err = <-done:
		// The client went away: its calls were cancelled with the
		// session; wait for them to return before the host closes.
		sctx, cancel := context.WithTimeout(context.Background(), grace)
		s.Shutdown(sctx)
		cancel()
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), grace)
		s.Shutdown(sctx)
		cancel()
		ss.Close()
		err = <-done
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) {
		err = nil
	}
	return err
}

// begin counts a call in flight; it fails once Shutdown has begun.
func (s *Server) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	if s.inflight == 0 {
		s.idle = make(chan struct{})
	}
	s.inflight++
	return true
}

func (s *Server) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight--
	if s.inflight == 0 {
		close(s.idle)
	}
}

// Shutdown refuses new calls, lets the calls in flight finish until ctx is
// done, then cancels those still running (their tools are stopped: the
// context passed to Host.Invoke is cancelled) and waits for them to return.
func (s *Server) Shutdown(ctx context.Context) error {
	s.watch.close()
	s.mu.Lock()
	s.closing = true
	idle := s.idle
	s.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
	}
	s.log.Warn("cancelling calls still running at shutdown")
	s.stopAll()
	<-idle
	return ctx.Err()
}

// InFlight returns the number of calls running.
func (s *Server) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight
}

// toolHandler runs calls to the named tool through the host.
func (s *Server) toolHandler(name string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		if !s.begin() {
			return errorResult(plugin.Errorf(plugin.CodeToolUnavailable, "the server is shutting down")), nil
		}
		defer s.end()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(s.stop, cancel)()
		cn := &clientNotifier{ctx: ctx, ss: req.Session, token: req.Params.GetProgressToken(), tool: name, log: s.log}
		_, cn.logging = s.logging.Load(req.Session)
		if lvl, ok := req.Params.GetMeta()[sdk.MetaKeyLogLevel].(string); ok && lvl != "" {
			cn.logging = true // a request of protocol 2026-07-28 or later carries its level
		}
		if cn.token != nil {
			defer s.progress(ctx, cn)()
		}
		return s.call(ctx, name, req, cn), nil
	}
}

// clientNotifier passes what a tool reports while it runs to the client
// that called it: progress as notifications/progress (when the request
// carried a progress token), log messages as notifications/message (at the
// level the client set with logging/setLevel; none before it sets one).
type clientNotifier struct {
	ctx   context.Context
	ss    *sdk.ServerSession
	token any // nil: the client asked for no progress
	// logging is set when the client may take the call's log messages
	// (it set a level for the session, or for the request).
	logging bool
	tool    string
	log     hclog.Logger

	mu   sync.Mutex
	sent bool    // a progress notification was sent
	last float64 // the last progress sent (each must be greater)
	own  bool    // the tool reports its own progress: the ticker stops
}

// Listening reports whether anything the tool reports can reach the
// client (plugin.Listening): an adapter need not carry reports otherwise.
func (c *clientNotifier) Listening() bool { return c.token != nil || c.logging }

// Progress implements plugin.Notifier.
func (c *clientNotifier) Progress(progress, total float64, message string) {
	if c.token == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.own = true
	if c.sent && progress <= c.last {
		return
	}
	c.send(progress, total, message)
}

// tick sends the server's own progress while the tool reports none.
func (c *clientNotifier) tick(n int, message string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.own || (c.sent && float64(n) <= c.last) {
		return
	}
	c.send(float64(n), 0, message)
}

// send sends one progress notification; c.mu is held.
func (c *clientNotifier) send(progress, total float64, message string) {
	c.sent, c.last = true, progress
	err := c.ss.NotifyProgress(c.ctx, &sdk.ProgressNotificationParams{
		ProgressToken: c.token, Progress: progress, Total: total, Message: message,
	})
	if err != nil {
		c.log.Debug("progress notification not sent", "tool", c.tool, "error", err)
	}
}

// Log implements plugin.Notifier.
func (c *clientNotifier) Log(level, message string) {
	err := c.ss.Log(c.ctx, &sdk.LoggingMessageParams{Level: sdk.LoggingLevel(level), Logger: c.tool, Data: message})
	if err != nil {
		c.log.Debug("log notification not sent", "tool", c.tool, "error", err)
	}
}

// progress sends a progress notification every interval while a call runs
// and its tool reports no progress of its own; the returned function stops
// it.
func (s *Server) progress(ctx context.Context, cn *clientNotifier) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		tick := time.NewTicker(s.opts.ProgressInterval)
		defer tick.Stop()
		for n := 1; ; n++ {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			cn.tick(n, fmt.Sprintf("%s running for %s", cn.tool, time.Since(start).Round(time.Second)))
		}
	}()
	return func() { close(done); wg.Wait() }
}

// readArtifact serves toolhost://artifacts/{id}.
func (s *Server) readArtifact(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	id, ok := strings.CutPrefix(uri, ResourceURIPrefix)
	if !ok {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	ref, rc, err := s.host.Artifact(ctx, id)
	if errors.Is(err, plugin.ErrArtifactNotFound) {
		return nil, sdk.ResourceNotFoundError(uri)
	} else if err != nil {
		return nil, err
	}
	defer rc.Close()
	if ref.Size > s.opts.MaxResourceBytes {
		return nil, fmt.Errorf("artifact %s is %s, over the %s a resource read returns; read it with `host artifact %s`",
			id, plugin.FormatSize(ref.Size), plugin.FormatSize(s.opts.MaxResourceBytes), id)
	}
	data, err := io.ReadAll(io.LimitReader(rc, s.opts.MaxResourceBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > s.opts.MaxResourceBytes {
		return nil, fmt.Errorf("artifact %s is over the %s a resource read returns", id, plugin.FormatSize(s.opts.MaxResourceBytes))
	}
	rcont := &sdk.ResourceContents{URI: uri, MIMEType: ref.MIMEType}
	if isText(ref.MIMEType) && utf8.Valid(data) {
		rcont.Text = string(data)
	} else {
		rcont.Blob = data
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{rcont}}, nil
}

func isText(mime string) bool {
	return mime == "" || strings.HasPrefix(mime, "text/") || strings.HasPrefix(mime, "application/json")
}
