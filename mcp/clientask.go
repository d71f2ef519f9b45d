package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/plugin"
)

// A remote server may ask its client, while a tool runs, for a completion
// from the client's LLM (sampling/createMessage) or for its user's input
// in a form (elicitation/create). toolhost has neither an LLM nor a user
// of its own; the caller of the call may (an MCP client of host serve, an
// application with a Call.Client). So a remote tool whose mcp_server block
// declares client.sampling or client.elicitation, granted by the operator,
// has the server's requests carried to the caller through the call's
// plugin.Client, which checks, bounds, redacts and audits them as it does
// a local tool's own (plugin/client.go).
//
// The server's requests must reach the right call. A server sends them on
// the call's event stream, on the session's standalone stream (the SDK's
// TypeScript server does when the request is not tied to the call), or,
// from protocol 2026-07-28, in the call's result as input requests; the
// first two arrive without saying which call they belong to. So a call
// that may be asked runs on a session of its own, opened for the call with
// the capabilities the call was granted and closed after it: whatever the
// server asks on it belongs to that call. Other calls share the server's
// session, which declares neither capability; a request on it is refused
// by the SDK at once (when it comes on a stream the client reads).

// asks reports whether a call's tool may ask its caller's client.
func asks(req *plugin.Request) bool {
	return req.Spec != nil && (req.Spec.Capabilities.Sampling || req.Spec.Capabilities.Elicitation) && req.Client != nil
}

// askingSession opens a session for one call whose tool may ask its
// caller's client, declaring the capabilities the tool was granted and
// carrying the server's requests to req.Client until ctx ends. The caller
// closes it.
func (r *remote) askingSession(ctx context.Context, req *plugin.Request) (*sdk.ClientSession, *asker, error) {
	a := &asker{client: req.Client, call: ctx, refused: map[refusalKey]error{}}
	opts := &sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{}}
	if req.Spec.Capabilities.Sampling {
		opts.CreateMessageHandler = a.sample
	}
	if req.Spec.Capabilities.Elicitation {
		opts.ElicitationHandler = a.elicit
	}
	cs, err := connectBounded(ctx, r.client(opts), r.transport(false))
	if err != nil {
		return nil, nil, fmt.Errorf("connecting a session for the call: %w", err)
	}
	return cs, a, nil
}

// asker carries one call's server requests to the call's client.
type asker struct {
	client plugin.Client
	// call is the call's context: a request arriving on a stream of the
	// session is handled under the session's context, and must end with
	// the call all the same.
	call context.Context

	mu sync.Mutex
	// refused maps each refusal sent to the server to its cause: the call
	// reports a refusal that fails it as the pipeline's error it was
	// (CAPABILITY_DENIED, LIMIT_EXCEEDED, ...), not the server's. Under
	// protocol 2026-07-28 the SDK's client answers input requests itself
	// and fails the call with the refusal, which it may wrap or copy;
	// before, the server gets it and fails the call with an error of the
	// same code whose message holds the refusal's (the Go SDK's: "...:
	// calling \"elicitation/create\": <refusal>"). So a refusal is known
	// by its code and a message that holds its own.
	refused map[refusalKey]error
}

type refusalKey struct {
	code int64
	msg  string
}

// refuse returns the JSON-RPC error the server gets when the caller's
// client could not be asked or did not answer. A call that may not ask, or
// whose caller has no client that can (CAPABILITY_DENIED), is refused as
// the SDK refuses a request its client has no handler for (-32602); other
// failures are internal errors. The message is the pipeline's, with the
// call's secrets already redacted.
func (a *asker) refuse(err error) *jsonrpc.Error {
	var code int64 = jsonrpc.CodeInternalError
	var pe *plugin.Error
	if errors.Is(err, plugin.ErrNoClient) || errors.As(err, &pe) && pe.Code == plugin.CodeCapabilityDenied {
		code = jsonrpc.CodeInvalidParams
	}
	we := &jsonrpc.Error{Code: code, Message: err.Error()}
	a.mu.Lock()
	a.refused[refusalKey{we.Code, we.Message}] = err
	a.mu.Unlock()
	return we
}

// cause returns the pipeline's error behind a refusal err carries, if any.
func (a *asker) cause(err error) (error, bool) {
	var we *jsonrpc.Error
	if a == nil || !errors.As(err, &we) {
		return nil, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.refused[refusalKey{we.Code, we.Message}]; ok {
		return c, true
	}
	for k, c := range a.refused {
		if k.code == we.Code && strings.Contains(we.Message, k.msg) {
			return c, true
		}
	}
	return nil, false
}

// bind returns ctx ended also when the call ends.
func (a *asker) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(a.call, cancel)
	return ctx, func() { stop(); cancel() }
}

// elicit carries a form to the caller's client. The pipeline checks the
// form as it checks a tool's own; the SDK then checks the answer against
// the schema and fills in the defaults (SEP-1034) of the fields the user
// left out before the server gets it.
func (a *asker) elicit(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	ctx, cancel := a.bind(ctx)
	defer cancel()
	p := req.Params
	if p.Mode == "url" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "toolhost carries form elicitation only; a URL elicitation has no one to open it"}
	}
	schema, err := json.Marshal(p.RequestedSchema)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("requestedSchema: %v", err)}
	}
	res, err := a.client.Elicit(ctx, &plugin.ElicitRequest{Message: p.Message, RequestedSchema: schema})
	if err != nil {
		return nil, a.refuse(err)
	}
	out := &sdk.ElicitResult{Action: res.Action}
	if res.Action == plugin.ElicitAccept {
		// Never nil when accepted, so that the defaults are filled in.
		out.Content = map[string]any{}
		if len(res.Content) > 0 {
			if err := json.Unmarshal(res.Content, &out.Content); err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("the form: %v", err)}
			}
		}
	}
	return out, nil
}

// sample carries a sampling request to the caller's client. What toolhost
// cannot pass on is left out: includeContext (the caller's client has no
// context of this server to include) and metadata.
func (a *asker) sample(ctx context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
	ctx, cancel := a.bind(ctx)
	defer cancel()
	p := req.Params
	sr := &plugin.SampleRequest{SystemPrompt: p.SystemPrompt, MaxTokens: p.MaxTokens, Temperature: p.Temperature, StopSequences: p.StopSequences}
	for i, m := range p.Messages {
		if m == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("messages[%d] is null", i)}
		}
		c, err := samplingContent(m.Content)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("messages[%d]: %v", i, err)}
		}
		sr.Messages = append(sr.Messages, plugin.SamplingMessage{Role: string(m.Role), Content: c})
	}
	if mp := p.ModelPreferences; mp != nil {
		sr.ModelPreferences = &plugin.ModelPreferences{CostPriority: mp.CostPriority, SpeedPriority: mp.SpeedPriority, IntelligencePriority: mp.IntelligencePriority}
		for _, h := range mp.Hints {
			if h != nil {
				sr.ModelPreferences.Hints = append(sr.ModelPreferences.Hints, plugin.ModelHint{Name: h.Name})
			}
		}
	}
	res, err := a.client.Sample(ctx, sr)
	if err != nil {
		return nil, a.refuse(err)
	}
	return &sdk.CreateMessageResult{Role: sdk.Role(res.Role), Content: toContent(res.Content), Model: res.Model, StopReason: res.StopReason}, nil
}

// samplingContent is the content of one sampling message, a server's for
// the caller's client or a client's answer for a tool: text, image or
// audio.
func samplingContent(c sdk.Content) (plugin.Content, error) {
	switch c := c.(type) {
	case *sdk.TextContent:
		return plugin.Text(c.Text), nil
	case *sdk.ImageContent:
		return plugin.Content{Type: "image", Data: c.Data, MIMEType: c.MIMEType}, nil
	case *sdk.AudioContent:
		return plugin.Content{Type: "audio", Data: c.Data, MIMEType: c.MIMEType}, nil
	case nil:
		return plugin.Content{}, errors.New("no content")
	}
	return plugin.Content{}, fmt.Errorf("%T content; a message holds text, image or audio", c)
}
