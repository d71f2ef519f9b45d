package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Descriptor describes a tool the way MCP does. It is what a model sees.
type Descriptor struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`
}

// Annotations are MCP's behavioural hints about a tool. They are hints for
// clients and models, never trusted for policy: policy comes from the Spec.
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    bool   `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  bool   `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Tool is one callable action. Implementations must be safe for concurrent
// use: the pipeline may call a read_only tool from several goroutines at once.
//
// Call runs the tool once. The pipeline has already checked policy and
// validated req.Arguments against the input schema, and ctx carries the
// call's deadline; Call must return promptly once ctx is done, releasing
// every resource it holds for the call (instance, process tree, connection).
// A tool reports a failure either as an error (an *Error keeps its code,
// anything else becomes TOOL_EXECUTION_FAILED, or TOOL_EXECUTION_TIMEOUT if
// ctx's deadline passed) or as a Result with IsError set.
type Tool interface {
	Descriptor() Descriptor
	Call(ctx context.Context, req *Request) (*Result, error)
}

// Closer is implemented by tools that hold resources (compiled modules,
// processes, connections). Host.Close calls it once.
type Closer interface {
	Close() error
}

// DeadlineKeeper is implemented by tools that return by their context's
// deadline, or promptly once it is cancelled, whatever runs behind them (an
// adapter that leaves a stuck guest or process on a goroutine of its own
// and reclaims it later). The host calls such a tool on the caller's
// goroutine and takes what it returns, when it returns; any other tool it
// calls on a goroutine of its own, which it abandons at the deadline. The hand-over to another goroutine can move a
// call to another CPU, where nothing it touches is in the caches.
type DeadlineKeeper interface {
	KeepsDeadline() bool
}

// Availability is implemented by tools whose backend can go away (a crashed
// plugin, an unreachable MCP server). An unavailable tool stays listed, marked
// unavailable, and its calls fail with TOOL_UNAVAILABLE.
type Availability interface {
	// Available reports whether the tool can currently be called and, if
	// not, why.
	Available() (ok bool, reason string)
}

// UnavailableCause is implemented by an Availability whose reason may have
// a cause callers can test with errors.Is and errors.As (an MCP server that
// needs a login: oauth.ErrLoginRequired). The pipeline asks it instead of
// Available, so that reason and cause come from one look at the tool; the
// TOOL_UNAVAILABLE error of a call wraps the cause (nil: none beyond the
// reason's text).
type UnavailableCause interface {
	AvailableCause() (ok bool, reason string, cause error)
}

// SecretHolder is implemented by tools that hold credentials the host did
// not resolve for them (an MCP server's OAuth tokens, which its adapter
// obtains and refreshes), so that the pipeline redacts them from results,
// errors and questions as it redacts granted secrets. It is asked when a
// call starts, before each report and question the tool sends while it
// runs, and when it returns (for its result or error), so a credential
// replaced during a call (a refreshed token) is redacted from the next
// report on; it must still be among those returned for as long as a call
// may have used it (oauth.Handler keeps the last four). It should be
// cheap and must not wait on the tool's calls. The names are what
// redaction shows ([REDACTED:NAME]).
type SecretHolder interface {
	HeldSecrets() map[string]string
}

// Request is one call as the tool sees it.
type Request struct {
	// ID identifies the call in logs, audit lines and artifacts.
	ID string
	// Name is the tool name the caller used.
	Name string
	// Arguments is the validated JSON object of arguments.
	Arguments json.RawMessage
	// Answers holds the caller's answers to questions the tool asked in an
	// earlier round (Result.NeedsInput), keyed by question ID.
	Answers map[string]json.RawMessage
	// Spec is the policy the tool runs under: effective capabilities
	// (declared ∩ granted) and limits with defaults applied. Adapters enforce
	// the parts that only they can (mounts, hosts, memory, counters).
	// It is the host's own copy, shared by every call of the tool: read it,
	// never write to it.
	Spec *Spec
	// Secrets resolves the secrets the tool was granted. Never nil.
	Secrets *Secrets
	// Invoker runs a nested tool call through the host pipeline, with the
	// callee's own policy, counted against this call's tool_invocations
	// limit and the host's depth cap. Nil when the tool may not invoke others.
	Invoker Invoker
	// Log is a logger named for the tool and carrying the call ID.
	Log hclog.Logger
	// Notify reports the call's progress and messages to the caller while
	// the tool runs (Notifier). Never nil: reports nobody listens to are
	// dropped. The host redacts and caps what passes through it.
	Notify Notifier
	// Client asks the caller's client for a completion from its LLM or
	// for its user's input while the tool runs (Client). Never nil: a tool
	// not granted client.sampling or client.elicitation is refused with
	// CAPABILITY_DENIED, and so is one whose caller has no client to ask
	// (errors.Is(err, ErrNoClient)). The host bounds, redacts and audits
	// what passes through it; requests end with the call.
	Client Client
}

// DecodeArguments unmarshals the arguments into v.
func (r *Request) DecodeArguments(v any) error {
	if err := json.Unmarshal(r.Arguments, v); err != nil {
		return Errorf(CodeInvalidRequest, "arguments: %v", err)
	}
	return nil
}

// Invoker runs a tool call through a host's pipeline.
type Invoker interface {
	Invoke(ctx context.Context, call Call) (*Result, error)
}

// Call is what a caller asks the host to run.
type Call struct {
	// ID is optional; the host assigns one when empty.
	ID string `json:"id,omitempty"`
	// Name is the tool name.
	Name string `json:"name"`
	// Arguments must be a JSON object (or empty, meaning {}).
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Answers answers a previous NeedsInput question, keyed by question ID.
	Answers map[string]json.RawMessage `json:"answers,omitempty"`
	// Notify, when set, receives the progress and messages the tool
	// reports while it runs (an MCP server sends them to its client).
	Notify Notifier `json:"-"`
	// Client, when set, answers the tool's sampling and elicitation
	// requests (an MCP server asks its client). Nested calls get none.
	Client Client `json:"-"`
}

// Content is one item of a result, shaped like MCP content.
type Content struct {
	// Type is "text", "image", "audio", "resource_link" or "resource".
	Type string `json:"type"`
	// Text, for type "text".
	Text string `json:"text,omitempty"`
	// Data is the raw bytes of an image or audio item (base64 in JSON).
	Data []byte `json:"data,omitempty"`
	// MIMEType of Data or of the linked resource.
	MIMEType string `json:"mimeType,omitempty"`
	// URI of a resource link or embedded resource.
	URI string `json:"uri,omitempty"`
	// Name of a resource link.
	Name string `json:"name,omitempty"`
}

// Text returns a text content item.
func Text(s string) Content { return Content{Type: "text", Text: s} }

// Textf returns a formatted text content item.
func Textf(format string, args ...any) Content { return Text(fmt.Sprintf(format, args...)) }

// Result is the outcome of a call.
type Result struct {
	Content           []Content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`

	// The fields below are filled in by the host.

	// Code is set when IsError is: the stable error code.
	Code Code `json:"code,omitempty"`
	// Limit names the limit hit, for CodeLimitExceeded.
	Limit string `json:"limit,omitempty"`
	// NeedsInput is set when the tool needs the caller to answer a question
	// before it can go on: call again with Call.Answers.
	NeedsInput *Question `json:"needsInput,omitempty"`
	// Truncated describes how the model-facing text was shortened.
	Truncated *Truncation `json:"truncated,omitempty"`
	// Artifacts lists artifacts kept for this call (the full output, files
	// a tool produced).
	Artifacts []ArtifactRef `json:"artifacts,omitempty"`
	// Meta carries facts about the call (call id, duration, fuel used).
	Meta *Meta `json:"meta,omitempty"`
}

// TextContent returns all text items joined by newlines.
func (r *Result) TextContent() string {
	var n int
	for _, c := range r.Content {
		if c.Type == "text" {
			n += len(c.Text) + 1
		}
	}
	b := make([]byte, 0, n)
	for _, c := range r.Content {
		if c.Type == "text" {
			if len(b) > 0 {
				b = append(b, '\n')
			}
			b = append(b, c.Text...)
		}
	}
	return string(b)
}

// Meta holds facts about a finished call.
type Meta struct {
	CallID   string        `json:"callId"`
	Tool     string        `json:"tool"`
	Duration time.Duration `json:"durationNs"`
	// Fuel is the instruction budget the call used, where the adapter meters it.
	Fuel uint64 `json:"fuel,omitempty"`
}

// Question is what a tool asks when it needs input from the caller.
type Question struct {
	ID   string `json:"id"`
	Text string `json:"text"`
	// Type is "boolean", "text" or "select".
	Type string `json:"type"`
	// Options are the choices of a "select" question.
	Options []string `json:"options,omitempty"`
}

// Question answer types.
const (
	AnswerBoolean = "boolean"
	AnswerText    = "text"
	AnswerSelect  = "select"
)

// Truncation describes how a result's text was shortened for the model.
type Truncation struct {
	OriginalBytes int    `json:"originalBytes"`
	ShownBytes    int    `json:"shownBytes"`
	OmittedBytes  int    `json:"omittedBytes"`
	ArtifactID    string `json:"artifactId,omitempty"`
}

// ArtifactRef names an artifact kept by the host.
type ArtifactRef struct {
	ID       string `json:"id"`
	Name     string `json:"name,omitempty"`
	MIMEType string `json:"mimeType,omitempty"`
	Size     int64  `json:"size"`
}

// Adapter turns one kind of tool source into tools. Each adapter handles the
// sources of one Kind ("wasm", "subprocess", "mcp", ...). Load is called once
// per tool spec at host start, in configuration order; it returns the tool
// the spec names, already checked against its own manifest (exports,
// schemas, hashes), but may defer expensive work (compilation, process
// start) to the first call or to the background.
type Adapter interface {
	Kind() string
	Load(ctx context.Context, spec *Spec) (Tool, error)
	Close() error
}
