package mcp

// Serving what the operator declared besides tools: prompts, fixed
// resources and resource templates (plugin/declared), with completions of
// their arguments and variables, and subscriptions to resources whose file
// can change. Each capability is advertised, and each method answered,
// only when something is configured for it; otherwise the method is
// refused with -32601 like any method the server does not offer.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/plugin/declared"
)

// maxCompletions is how many values one completion/complete answer
// carries at most (the specification's cap).
const maxCompletions = 100

// offer is what the server serves besides tools, indexed for its handlers.
type offer struct {
	prompts   map[string]*declared.Prompt
	resources map[string]*declared.Resource
	templates map[string]*declared.Template // by URI template
	completes bool                          // some argument or variable has completions
}

func newOffer(opts ServerOptions) (*offer, error) {
	o := &offer{prompts: map[string]*declared.Prompt{}, resources: map[string]*declared.Resource{}, templates: map[string]*declared.Template{}}
	for i := range opts.Prompts {
		p := &opts.Prompts[i]
		if p.Name == "" {
			return nil, errors.New("mcp: a prompt has no name")
		}
		if _, dup := o.prompts[p.Name]; dup {
			return nil, fmt.Errorf("mcp: prompt %q given twice", p.Name)
		}
		o.prompts[p.Name] = p
		for _, a := range p.Arguments {
			o.completes = o.completes || len(a.Completions) > 0
		}
	}
	for i := range opts.Resources {
		r := &opts.Resources[i]
		if u, err := url.Parse(r.URI); err != nil || u.Scheme == "" {
			return nil, fmt.Errorf("mcp: resource %q: not an absolute URI", r.URI)
		}
		if _, dup := o.resources[r.URI]; dup {
			return nil, fmt.Errorf("mcp: resource %q given twice", r.URI)
		}
		o.resources[r.URI] = r
	}
	for i := range opts.ResourceTemplates {
		t := &opts.ResourceTemplates[i]
		raw := t.URITemplate.String()
		if raw == "" {
			return nil, errors.New("mcp: a resource template has no URI template (build it with declared.ParseURITemplate)")
		}
		if _, dup := o.templates[raw]; dup {
			return nil, fmt.Errorf("mcp: resource template %q given twice", raw)
		}
		o.templates[raw] = t
		o.completes = o.completes || len(t.Completions) > 0
	}
	return o, nil
}

// refusals returns the methods refused for want of configuration, with
// the reason each is refused.
func (o *offer) refusals() map[string]string {
	out := map[string]string{}
	if len(o.prompts) == 0 {
		out["prompts/list"] = "no prompts are configured (prompt blocks)"
		out["prompts/get"] = out["prompts/list"]
	}
	if !o.completes {
		out["completion/complete"] = "no completions are configured (completions of a prompt argument or resource_template)"
	}
	if len(o.resources) == 0 {
		out["resources/subscribe"] = "no resources are configured (resource blocks), and artifacts never change once written"
		out["resources/unsubscribe"] = out["resources/subscribe"]
	}
	return out
}

// capabilities adds what o serves to caps.
func (o *offer) capabilities(caps *sdk.ServerCapabilities) {
	if len(o.prompts) > 0 {
		// The lists are fixed for the server's life: no listChanged.
		caps.Prompts = &sdk.PromptCapabilities{}
	}
	if o.completes {
		caps.Completions = &sdk.CompletionCapabilities{}
	}
}

func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// addDeclared registers the offer's prompts, resources and templates. The
// SDK panics on a URI or URI template it cannot parse; newOffer and
// declared.ParseURITemplate refuse those it is known to, and what slips
// past them is an error for the caller, not a crash of the host.
func (s *Server) addDeclared() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("mcp: %v", r)
		}
	}()
	for _, p := range s.offer.prompts {
		sp := &sdk.Prompt{Name: p.Name, Title: p.Title, Description: p.Description}
		for _, a := range p.Arguments {
			sp.Arguments = append(sp.Arguments, &sdk.PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
		}
		s.sdk.AddPrompt(sp, s.getPrompt(p))
	}
	for _, r := range s.offer.resources {
		s.sdk.AddResource(&sdk.Resource{URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType}, s.readDeclared(r))
	}
	for _, t := range s.offer.templates {
		s.sdk.AddResourceTemplate(&sdk.ResourceTemplate{
			URITemplate: t.URITemplate.String(), Name: t.Name, Title: t.Title, Description: t.Description, MIMEType: t.MIMEType,
		}, s.readTemplate(t))
	}
	return nil
}

// getPrompt answers prompts/get for p: arguments are checked (a missing
// required one, or one p does not take, is invalid params) and expanded
// into the messages in one pass.
func (s *Server) getPrompt(p *declared.Prompt) sdk.PromptHandler {
	return func(_ context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		args := req.Params.Arguments
		for name := range args {
			if _, ok := p.Argument(name); !ok {
				return nil, invalidParams("prompt %q has no argument %q%s", p.Name, name, argumentList(p))
			}
		}
		for _, a := range p.Arguments {
			if a.Required && args[a.Name] == "" {
				return nil, invalidParams("prompt %q: missing required argument %q", p.Name, a.Name)
			}
		}
		if n := promptLen(p, args); n > maxExpanded {
			return nil, invalidParams("prompt %q: the arguments make %s of messages, over the %s limit", p.Name, plugin.FormatSize(int64(n)), plugin.FormatSize(maxExpanded))
		}
		res := &sdk.GetPromptResult{Description: p.Description}
		for _, m := range p.Messages {
			pm := &sdk.PromptMessage{Role: sdk.Role(m.Role)}
			switch {
			case m.Text != nil:
				pm.Content = &sdk.TextContent{Text: m.Text.Expand(args)}
			case m.Image != nil:
				pm.Content = &sdk.ImageContent{Data: m.Image.Data, MIMEType: m.Image.MIMEType}
			case m.Resource != nil:
				uri := m.Resource.URI.Expand(args)
				if u, err := url.Parse(uri); err != nil || u.Scheme == "" {
					short, _ := plugin.Truncate(uri, 200)
					return nil, invalidParams("prompt %q: the arguments make the resource URI %q, which is not an absolute URI", p.Name, short)
				}
				rc := &sdk.ResourceContents{URI: uri, MIMEType: m.Resource.MIMEType, Blob: m.Resource.Blob}
				if m.Resource.Text != nil {
					rc.Text = m.Resource.Text.Expand(args)
				}
				pm.Content = &sdk.EmbeddedResource{Resource: rc}
			default:
				panic(fmt.Sprintf("prompt %q: a message without content", p.Name)) // the decoder refuses these
			}
			res.Messages = append(res.Messages, pm)
		}
		return res, nil
	}
}

func argumentList(p *declared.Prompt) string {
	if len(p.Arguments) == 0 {
		return "; it takes none"
	}
	names := make([]string, len(p.Arguments))
	for i, a := range p.Arguments {
		names[i] = fmt.Sprintf("%q", a.Name)
	}
	return "; it takes " + strings.Join(names, ", ")
}

// readDeclared serves a fixed resource, reading a path-backed one afresh.
func (s *Server) readDeclared(r *declared.Resource) sdk.ResourceHandler {
	return func(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		data, err := r.Read()
		if errors.Is(err, fs.ErrNotExist) {
			return nil, sdk.ResourceNotFoundError(r.URI)
		} else if err != nil {
			s.log.Warn("cannot read a configured resource", "uri", r.URI, "error", err)
			return nil, fmt.Errorf("reading %s: %w", r.URI, err)
		}
		text, blob := declared.TextOrBlob(r.MIMEType, data)
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: r.URI, MIMEType: r.MIMEType, Text: text, Blob: blob}}}, nil
	}
}

// readTemplate serves the resources of a template: its text with the URI's
// values put in.
func (s *Server) readTemplate(t *declared.Template) sdk.ResourceHandler {
	return func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		uri := req.Params.URI
		vars, ok := t.URITemplate.Match(uri)
		if !ok {
			return nil, sdk.ResourceNotFoundError(uri)
		}
		if n := t.Text.LenWith(vars, jsonLen); n > maxExpanded {
			return nil, invalidParams("resource %q: its values make %s of text, over the %s limit", uri, plugin.FormatSize(int64(n)), plugin.FormatSize(maxExpanded))
		}
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: t.MIMEType, Text: t.Text.Expand(vars)}}}, nil
	}
}

// maxExpanded bounds what a prompt's messages, or a template's text, come
// to once a client's values are put in, counted as encoded in the JSON
// answer. A placeholder repeated in the configuration multiplies the
// client's bytes (a value of 1 MiB in a message naming it 100 times would
// be 100 MiB), and JSON escaping multiplies them again: '<' sent raw
// comes back as \u003c, six bytes. The messages and texts themselves are
// small, and the declared files are capped at 10 MiB.
const maxExpanded = 16 << 20

// jsonLen returns at least the length of s encoded as the inside of a JSON
// string by encoding/json (which the SDK's answers use): six bytes for a
// control character, '<', '>', '&', U+2028, U+2029 or a byte of invalid
// UTF-8 (some take two, \n for one; this counts the most), two for '"'
// and a backslash, one for anything else.
func jsonLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6
			case c == '"' || c == '\\':
				n += 2
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// promptLen returns what p's messages come to with args put in.
func promptLen(p *declared.Prompt, args map[string]string) int {
	n := 0
	for _, m := range p.Messages {
		switch {
		case m.Text != nil:
			n += m.Text.LenWith(args, jsonLen)
		case m.Image != nil:
			n += len(m.Image.Data)
		case m.Resource != nil:
			n += m.Resource.URI.Len(args) + len(m.Resource.Blob)
			if m.Resource.Text != nil {
				n += m.Resource.Text.LenWith(args, jsonLen)
			}
		}
	}
	return n
}

// complete answers completion/complete from the configured values of a
// prompt argument or template variable: those starting with what was typed
// (ignoring case), at most maxCompletions, with the total.
func (s *Server) complete(_ context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
	ref, arg := req.Params.Ref, req.Params.Argument
	var values []string
	switch ref.Type {
	case "ref/prompt":
		p, ok := s.offer.prompts[ref.Name]
		if !ok {
			return nil, invalidParams("unknown prompt %q", ref.Name)
		}
		a, ok := p.Argument(arg.Name)
		if !ok {
			return nil, invalidParams("prompt %q has no argument %q%s", p.Name, arg.Name, argumentList(p))
		}
		values = a.Completions
	case "ref/resource":
		if ref.URI == ResourceURIPrefix+"{id}" {
			break // artifact IDs are not offered: they are for the results that link them
		}
		t, ok := s.offer.templates[ref.URI]
		if !ok {
			return nil, invalidParams("unknown resource template %q", ref.URI)
		}
		if !slices.Contains(t.URITemplate.Variables(), arg.Name) {
			return nil, invalidParams("resource template %q has no variable %q", ref.URI, arg.Name)
		}
		values = t.Completions[arg.Name]
	default:
		return nil, invalidParams("unknown reference type %q", ref.Type)
	}
	return &sdk.CompleteResult{Completion: completion(values, arg.Value)}, nil
}

func completion(values []string, typed string) sdk.CompletionResultDetails {
	out := sdk.CompletionResultDetails{Values: []string{}}
	typed = strings.ToLower(typed)
	for _, v := range values {
		if !strings.HasPrefix(strings.ToLower(v), typed) {
			continue
		}
		out.Total++
		if len(out.Values) < maxCompletions {
			out.Values = append(out.Values, v)
		}
	}
	out.HasMore = out.Total > len(out.Values)
	return out
}

// subscribe accepts a subscription to any resource the server has, and
// watches the file of a configured path-backed one; the rest (fixed text,
// template expansions, artifacts) never change, so no notification comes.
func (s *Server) subscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	uri := req.Params.URI
	if r, ok := s.offer.resources[uri]; ok {
		if r.Changes() {
			s.watch.add(r, req.Session)
		}
		return nil
	}
	if s.exists(ctx, uri) {
		return nil
	}
	return sdk.ResourceNotFoundError(uri)
}

// unsubscribe ends a subscription; ending one that does not exist is not
// an error.
func (s *Server) unsubscribe(_ context.Context, req *sdk.UnsubscribeRequest) error {
	s.watch.remove(req.Params.URI, req.Session)
	return nil
}

// exists reports whether uri names a template expansion or an artifact.
func (s *Server) exists(ctx context.Context, uri string) bool {
	for _, t := range s.offer.templates {
		if _, ok := t.URITemplate.Match(uri); ok {
			return true
		}
	}
	id, ok := strings.CutPrefix(uri, ResourceURIPrefix)
	if !ok {
		return false
	}
	_, rc, err := s.host.Artifact(ctx, id)
	if err != nil {
		return false
	}
	rc.Close()
	return true
}

// watcher polls the files of the path-backed resources that sessions
// subscribed to, and notifies the subscribers when one changes (its size
// or modification time). One goroutine per watched resource runs only
// while some session is subscribed to it; a session that ends without
// unsubscribing is dropped from every watch when it ends (one goroutine
// per subscribed session waits for that, as levelMiddleware's do).
type watcher struct {
	s        *Server
	interval time.Duration

	// ctx ends when the watcher closes: an update still being sent to a
	// client that stopped reading does not hold up Shutdown.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	closed   bool
	watches  map[string]*watch           // by URI
	sessions map[*sdk.ServerSession]bool // those waited for
	wg       sync.WaitGroup
}

type watch struct {
	res      *declared.Resource
	sessions map[*sdk.ServerSession]bool
	stop     chan struct{}
}

func (w *watcher) add(r *declared.Resource, ss *sdk.ServerSession) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	wt, ok := w.watches[r.URI]
	if !ok {
		wt = &watch{res: r, sessions: map[*sdk.ServerSession]bool{}, stop: make(chan struct{})}
		w.watches[r.URI] = wt
		// The stamp is taken now, so that a change right after the
		// subscription is answered is not missed.
		last, _ := r.Stamp()
		w.wg.Add(1)
		go w.poll(wt, last)
	}
	wt.sessions[ss] = true
	if !w.sessions[ss] {
		w.sessions[ss] = true
		go func() {
			_ = ss.Wait()
			w.drop(ss)
		}()
	}
}

func (w *watcher) remove(uri string, ss *sdk.ServerSession) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wt, ok := w.watches[uri]; ok {
		w.leave(wt, ss)
	}
}

// drop takes a session that ended out of every watch.
func (w *watcher) drop(ss *sdk.ServerSession) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.sessions, ss)
	for _, wt := range w.watches {
		w.leave(wt, ss)
	}
}

// leave takes ss out of wt, and ends wt when no session is left. w.mu is
// held.
func (w *watcher) leave(wt *watch, ss *sdk.ServerSession) {
	delete(wt.sessions, ss)
	if len(wt.sessions) == 0 {
		close(wt.stop)
		delete(w.watches, wt.res.URI)
	}
}

// close stops every watch and waits for the pollers to return.
func (w *watcher) close() {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		for uri, wt := range w.watches {
			close(wt.stop)
			delete(w.watches, uri)
		}
	}
	w.mu.Unlock()
	w.cancel()
	w.wg.Wait()
}

// watching returns the number of resources being watched.
func (w *watcher) watching() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.watches)
}

func (w *watcher) poll(wt *watch, last string) {
	defer w.wg.Done()
	tick := time.NewTicker(w.interval)
	defer tick.Stop()
	for {
		select {
		case <-wt.stop:
			return
		case <-tick.C:
		}
		// A file that cannot be stat'ed (removed) has the stamp "": its
		// going is a change too.
		stamp, _ := wt.res.Stamp()
		if stamp == last {
			continue
		}
		last = stamp
		if err := w.s.sdk.ResourceUpdated(w.ctx, &sdk.ResourceUpdatedNotificationParams{URI: wt.res.URI}); err != nil {
			w.s.log.Debug("resource update not sent", "uri", wt.res.URI, "error", err)
		}
	}
}
