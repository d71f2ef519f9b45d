package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// A tool may need what only its caller's client has: a completion from the
// LLM the client runs, or an answer from the client's user. MCP names them
// sampling (sampling/createMessage) and elicitation (elicitation/create);
// an MCP server that serves the call asks its client on the tool's behalf.
// Both are privileges — one spends the user's model, the other puts words
// of the tool's choosing in front of the user — so a tool asks only when
// its spec carries client.sampling or client.elicitation, granted by the
// operator, and every request passes the pipeline's checks below.

// Client asks the caller's client while a call runs. The pipeline hands
// every tool one (Request.Client) that checks the tool's rights, bounds
// and redacts what goes out and comes back, honours the call's deadline,
// and counts each request in the call's audit record; it passes the
// request on to the Client of the Call (an MCP server's session), or fails
// with ErrNoClient when there is none. Implementations must be safe for
// concurrent use and must return once ctx is done.
type Client interface {
	// Sample asks the client's LLM for a message.
	Sample(ctx context.Context, req *SampleRequest) (*SampleResult, error)
	// Elicit asks the client's user to fill in a form.
	Elicit(ctx context.Context, req *ElicitRequest) (*ElicitResult, error)
}

// ErrNoClient means nobody can answer a Client request: the call did not
// come from a client (`host call`, a nested call, a host application that
// set no Call.Client), or the client did not declare the capability the
// request needs. The pipeline returns it wrapped in a CAPABILITY_DENIED
// *Error; errors.Is finds both.
var ErrNoClient = errors.New("no client can answer")

// SampleRequest asks for one message from the client's LLM, shaped like
// the params of MCP's sampling/createMessage. The client (and its user)
// may change or refuse it.
type SampleRequest struct {
	// Messages are the conversation so far; at least one.
	Messages []SamplingMessage `json:"messages"`
	// SystemPrompt is a system prompt the tool would like used.
	SystemPrompt string `json:"systemPrompt,omitempty"`
	// MaxTokens bounds the answer; more than zero.
	MaxTokens int64 `json:"maxTokens"`
	// Temperature, when not zero.
	Temperature float64 `json:"temperature,omitempty"`
	// StopSequences end the answer where they occur.
	StopSequences []string `json:"stopSequences,omitempty"`
	// ModelPreferences say which model the tool would prefer.
	ModelPreferences *ModelPreferences `json:"modelPreferences,omitempty"`
}

// SamplingMessage is one message of a conversation: a role ("user" or
// "assistant") and one text, image or audio item.
type SamplingMessage struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// ModelPreferences are MCP's hints for the client's choice of model.
// Priorities are between 0 and 1.
type ModelPreferences struct {
	Hints                []ModelHint `json:"hints,omitempty"`
	CostPriority         float64     `json:"costPriority,omitempty"`
	SpeedPriority        float64     `json:"speedPriority,omitempty"`
	IntelligencePriority float64     `json:"intelligencePriority,omitempty"`
}

// ModelHint names a model, or part of a model's name.
type ModelHint struct {
	Name string `json:"name,omitempty"`
}

// SampleResult is the client's answer: the message its LLM produced.
type SampleResult struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
	// Model is the model that produced the message.
	Model string `json:"model"`
	// StopReason is why it stopped: "endTurn", "stopSequence",
	// "maxTokens" or another the client names.
	StopReason string `json:"stopReason,omitempty"`
}

// ElicitRequest asks the client's user to fill in a form, shaped like the
// params of MCP's elicitation/create in form mode.
type ElicitRequest struct {
	// Message is what the user is asked.
	Message string `json:"message"`
	// RequestedSchema describes the form: a JSON Schema object whose
	// properties are flat (string, number, integer, boolean, or an array
	// of enumerated strings), as MCP requires. It goes to the client as
	// the tool wrote it: titles, descriptions, defaults (SEP-1034) and
	// every enum form (enum, enumNames, oneOf/anyOf with const and title:
	// SEP-1330) included.
	RequestedSchema json.RawMessage `json:"requestedSchema"`
}

// Elicitation actions.
const (
	ElicitAccept  = "accept"
	ElicitDecline = "decline"
	ElicitCancel  = "cancel"
)

// ElicitResult is the user's answer.
type ElicitResult struct {
	// Action is "accept" (Content holds the form), "decline" or "cancel".
	Action string `json:"action"`
	// Content is the filled-in form, a JSON object valid against the
	// requested schema (the pipeline checks it); only when accepted.
	Content json.RawMessage `json:"content,omitempty"`
}

// Bounds on what passes between a tool and its caller's client, besides
// the client_requests limit: a tool cannot send the client (or hand its
// user) more than this, and a client's answer larger than
// MaxClientMessage is refused.
const (
	// MaxClientMessage is the largest request a tool may send to its
	// client and the largest answer it is given, in bytes of JSON.
	MaxClientMessage = 1 << 20
	// maxElicitRequest bounds a form: a message and a schema a person
	// reads.
	maxElicitRequest = 64 << 10
)

// ClientAnswer encodes for a tool what its request to the client came to,
// the same in every tier: {"result":{...}} when err is nil, else
// {"code":"…","error":"…","limit":"…"}. When the request passed a
// per-call limit (LIMIT_EXCEEDED), it also returns the error that ends the
// call, as every per-call counter does; the tool sees the answer only if
// it is still running.
func ClientAnswer(res any, err error) ([]byte, *Error) {
	type answer struct {
		Result any    `json:"result,omitempty"`
		Error  string `json:"error,omitempty"`
		Code   Code   `json:"code,omitempty"`
		Limit  string `json:"limit,omitempty"`
	}
	a := answer{Result: res}
	var stop *Error
	if err != nil {
		var pe *Error
		if !errors.As(err, &pe) {
			pe = &Error{Code: CodeOf(err), Message: err.Error()}
		}
		msg := pe.Message
		if msg == "" {
			msg = err.Error()
		}
		a = answer{Code: pe.Code, Limit: pe.Limit, Error: msg}
		if pe.Code == CodeLimitExceeded {
			stop = &Error{Code: pe.Code, Limit: pe.Limit, Message: pe.Message}
		}
	}
	b, merr := json.Marshal(a)
	if merr != nil {
		b, _ = json.Marshal(answer{Code: CodeToolExecutionFailed, Error: "encoding the answer: " + merr.Error()})
	}
	return b, stop
}

// newCallClient returns the Client a call's tool sees and the function
// that closes it when the call returns, recording in rec what reached the
// client. A tool granted neither right gets denied: nothing to allocate
// on the common path.
func newCallClient(to Client, spec *Spec, secrets *callSecrets, log hclog.Logger) (Client, func(*AuditRecord)) {
	c := spec.Capabilities
	if !c.Sampling && !c.Elicitation {
		return denied{}, noClose
	}
	cc := &callClient{
		to: to, sampling: c.Sampling, elicitation: c.Elicitation,
		max: spec.Limits.ClientRequests, secrets: secrets, log: log, over: make(chan struct{}),
	}
	return cc, cc.close
}

func noClose(*AuditRecord) {}

// denied is the Client of a tool granted neither client right.
type denied struct{}

func notGranted(cap, what string) *Error {
	return Errorf(CodeCapabilityDenied, "this tool may not ask the client %s: its configuration must declare capabilities = [%q], and the operator grant it", what, cap)
}

func (denied) Sample(context.Context, *SampleRequest) (*SampleResult, error) {
	return nil, notGranted(CapSampling, "for sampling")
}

func (denied) Elicit(context.Context, *ElicitRequest) (*ElicitResult, error) {
	return nil, notGranted(CapElicitation, "for input (elicitation)")
}

// callClient is the Client of a tool granted a client right. It checks
// each request, counts it against client_requests, redacts the call's
// secrets from what goes out and what comes back, and stops waiting when
// the call returns.
type callClient struct {
	to                    Client
	sampling, elicitation bool
	max                   int
	secrets               *callSecrets
	log                   hclog.Logger

	mu                    sync.Mutex
	admitted              int
	samples, elicitations int // requests that reached the client
	closed                bool
	over                  chan struct{} // closed when the call returns
}

// admit counts one request, or says why it may not go.
func (c *callClient) admit() *Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return Errorf(CodeToolExecutionFailed, "the call has returned: its client can no longer be asked")
	}
	if c.admitted >= c.max {
		return LimitError("client_requests", "the tool asked its client more than %d times in one call", c.max)
	}
	c.admitted++
	return nil
}

// close ends the call's requests and records what reached the client.
func (c *callClient) close(rec *AuditRecord) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		close(c.over)
	}
	rec.Samples, rec.Elicitations = c.samples, c.elicitations
}

// ask runs f with a context that ends with ctx or when the call returns,
// and turns its failure into an *Error for the tool.
func (c *callClient) ask(ctx context.Context, what string, count *int, f func(ctx context.Context) error) error {
	if c.to == nil {
		return &Error{Code: CodeCapabilityDenied, Err: ErrNoClient,
			Message: fmt.Sprintf("no client to ask %s: the call did not come from an MCP client (host call, a nested call, or an application that offers none)", what)}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-c.over:
			cancel()
		case <-stop:
		}
	}()
	c.mu.Lock()
	*count++
	c.mu.Unlock()
	start := time.Now()
	err := f(ctx)
	c.log.Debug("asked the client", "request", what, "duration", time.Since(start), "error", err)
	if err == nil {
		return nil
	}
	msg := c.secrets.Redact(err.Error())
	var pe *Error
	switch {
	case errors.As(err, &pe):
		m := pe.Message
		if m == "" && pe.Err != nil {
			m = pe.Err.Error()
		}
		return &Error{Code: pe.Code, Limit: pe.Limit, Message: c.secrets.Redact(m), Err: err}
	case errors.Is(err, ErrNoClient):
		return &Error{Code: CodeCapabilityDenied, Message: msg, Err: err}
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded):
		return &Error{Code: CodeToolExecutionTimeout, Message: "the call's deadline passed while the client was being asked " + what, Err: errors.Join(context.DeadlineExceeded, err)}
	case ctx.Err() != nil:
		return &Error{Code: CodeToolExecutionFailed, Message: "the request to the client was cancelled: " + msg, Err: errors.Join(ctx.Err(), err)}
	}
	return &Error{Code: CodeToolExecutionFailed, Message: "the client did not answer " + what + ": " + msg, Err: err}
}

// Sample implements Client.
func (c *callClient) Sample(ctx context.Context, req *SampleRequest) (*SampleResult, error) {
	if !c.sampling {
		return nil, notGranted(CapSampling, "for sampling")
	}
	if err := checkSample(req); err != nil {
		return nil, Errorf(CodeInvalidRequest, "sampling request: %v", err)
	}
	if err := c.admit(); err != nil {
		return nil, err
	}
	out := *req
	out.SystemPrompt = c.secrets.Redact(req.SystemPrompt)
	out.Messages = make([]SamplingMessage, len(req.Messages))
	for i, m := range req.Messages {
		if m.Content.Type == "text" {
			m.Content.Text = c.secrets.Redact(m.Content.Text)
		}
		out.Messages[i] = m
	}
	if len(req.StopSequences) > 0 {
		out.StopSequences = make([]string, len(req.StopSequences))
		for i, s := range req.StopSequences {
			out.StopSequences[i] = c.secrets.Redact(s)
		}
	}
	var res *SampleResult
	err := c.ask(ctx, "for sampling", &c.samples, func(ctx context.Context) (err error) {
		res, err = c.to.Sample(ctx, &out)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := checkSampleResult(res); err != nil {
		return nil, Errorf(CodeToolExecutionFailed, "the client's sampling answer: %v", err)
	}
	r := *res
	if r.Content.Type == "text" {
		r.Content.Text = c.secrets.Redact(r.Content.Text)
	}
	r.Model = c.secrets.Redact(r.Model)
	return &r, nil
}

// Elicit implements Client.
func (c *callClient) Elicit(ctx context.Context, req *ElicitRequest) (*ElicitResult, error) {
	if !c.elicitation {
		return nil, notGranted(CapElicitation, "for input (elicitation)")
	}
	schema, err := checkElicit(req)
	if err != nil {
		return nil, Errorf(CodeInvalidRequest, "elicitation request: %v", err)
	}
	if err := c.admit(); err != nil {
		return nil, err
	}
	out := ElicitRequest{Message: c.secrets.Redact(req.Message), RequestedSchema: c.secrets.redactJSON(req.RequestedSchema)}
	var res *ElicitResult
	err = c.ask(ctx, "for input (elicitation)", &c.elicitations, func(ctx context.Context) (err error) {
		res, err = c.to.Elicit(ctx, &out)
		return err
	})
	if err != nil {
		return nil, err
	}
	form, err := checkElicitResult(res, schema)
	if err != nil {
		return nil, Errorf(CodeToolExecutionFailed, "the client's elicitation answer: %v", err)
	}
	r := ElicitResult{Action: res.Action}
	if res.Action == ElicitAccept {
		r.Content = c.secrets.redactJSON(form)
	}
	return &r, nil
}

func checkSample(req *SampleRequest) error {
	if req == nil {
		return errors.New("no request")
	}
	if len(req.Messages) == 0 {
		return errors.New("messages: at least one message is needed")
	}
	for i, m := range req.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return fmt.Errorf("messages[%d].role is %q; want \"user\" or \"assistant\"", i, m.Role)
		}
		if err := checkSampleContent(m.Content); err != nil {
			return fmt.Errorf("messages[%d].content: %v", i, err)
		}
	}
	if req.MaxTokens <= 0 {
		return fmt.Errorf("maxTokens is %d; it must be more than 0", req.MaxTokens)
	}
	if !finite(req.Temperature) {
		return errors.New("temperature is not a finite number")
	}
	if p := req.ModelPreferences; p != nil {
		for _, v := range []float64{p.CostPriority, p.SpeedPriority, p.IntelligencePriority} {
			if !(v >= 0 && v <= 1) {
				return fmt.Errorf("modelPreferences: a priority is %v; priorities are between 0 and 1", v)
			}
		}
	}
	return checkSize(req, MaxClientMessage)
}

func checkSampleContent(c Content) error {
	switch c.Type {
	case "text":
	case "image", "audio":
		if len(c.Data) == 0 || c.MIMEType == "" {
			return fmt.Errorf("an %s item needs data and a mimeType", c.Type)
		}
	default:
		return fmt.Errorf("type %q; a message holds \"text\", \"image\" or \"audio\"", c.Type)
	}
	return nil
}

func checkSampleResult(res *SampleResult) error {
	if res == nil {
		return errors.New("no answer")
	}
	if res.Role != "user" && res.Role != "assistant" {
		return fmt.Errorf("role %q", res.Role)
	}
	if err := checkSampleContent(res.Content); err != nil {
		return err
	}
	return checkSize(res, MaxClientMessage)
}

// checkSize refuses v when its JSON exceeds max bytes.
func checkSize(v any, max int) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > max {
		return fmt.Errorf("it is %s of JSON, over the %s a client may be sent or answer", FormatSize(int64(len(b))), FormatSize(int64(max)))
	}
	return nil
}

// checkElicit checks a form request and compiles its schema, which the
// answer is checked against. MCP restricts forms to flat objects: each
// property a string, number, integer or boolean, or an array of strings
// chosen from an enumeration.
func checkElicit(req *ElicitRequest) (*Schema, error) {
	if req == nil {
		return nil, errors.New("no request")
	}
	if req.Message == "" {
		return nil, errors.New("message: the user must be told what is asked")
	}
	if n := len(req.Message) + len(req.RequestedSchema); n > maxElicitRequest {
		return nil, fmt.Errorf("the message and schema are %s, over the %s a form may take", FormatSize(int64(n)), FormatSize(maxElicitRequest))
	}
	var top struct {
		Type       any                        `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(req.RequestedSchema, &top); err != nil {
		return nil, fmt.Errorf("requestedSchema is not a JSON object: %v", err)
	}
	if top.Type != "object" {
		return nil, errors.New(`requestedSchema must be {"type": "object", "properties": {...}}`)
	}
	for name, raw := range top.Properties {
		var p struct {
			Type       any             `json:"type"`
			Properties json.RawMessage `json:"properties"`
			Items      json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, fmt.Errorf("requestedSchema property %q is not a schema object", name)
		}
		switch p.Type {
		case "string", "number", "integer", "boolean":
		case "array":
			if len(p.Items) == 0 {
				return nil, fmt.Errorf("requestedSchema property %q is an array without items (a multiple choice needs items with enum or anyOf)", name)
			}
		default:
			return nil, fmt.Errorf("requestedSchema property %q has type %v; a form holds string, number, integer, boolean or array (multiple choice) properties", name, p.Type)
		}
		if len(p.Properties) > 0 {
			return nil, fmt.Errorf("requestedSchema property %q has properties of its own; forms are flat", name)
		}
	}
	s, err := CompileSchema(req.RequestedSchema)
	if err != nil {
		return nil, fmt.Errorf("requestedSchema: %v", err)
	}
	return s, nil
}

// checkElicitResult checks the client's answer against the form's schema
// and returns the form it holds ({} for an accepted form without content);
// res is the client's and is not changed.
func checkElicitResult(res *ElicitResult, schema *Schema) (json.RawMessage, error) {
	if res == nil {
		return nil, errors.New("no answer")
	}
	switch res.Action {
	case ElicitDecline, ElicitCancel:
		return nil, nil
	case ElicitAccept:
	default:
		return nil, fmt.Errorf("action %q; want accept, decline or cancel", res.Action)
	}
	form := res.Content
	if len(form) == 0 {
		form = json.RawMessage("{}")
	}
	if len(form) > MaxClientMessage {
		return nil, fmt.Errorf("the form is %s, over %s", FormatSize(int64(len(form))), FormatSize(MaxClientMessage))
	}
	if !json.Valid(form) {
		return nil, errors.New("the form is not valid JSON")
	}
	if err := checkNumbers(form); err != nil {
		return nil, err
	}
	if err := schema.ValidateJSON(form); err != nil {
		return nil, fmt.Errorf("the form does not match the requested schema: %v", err)
	}
	return form, nil
}

var _ Client = (*callClient)(nil)
var _ Client = denied{}
