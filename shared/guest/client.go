package guest

import (
	"encoding/json"
	"errors"
)

// A tool may ask the client its call came from — the MCP client of the
// agent that called it — for a completion from the client's LLM (Sample,
// MCP sampling) or for its user's input in a form (Elicit, MCP
// elicitation). Either is a right the operator grants the tool
// (capabilities = ["client.sampling"] / ["client.elicitation"] in its
// block and in grants); toolhost checks, bounds and redacts every request
// (docs/wasm.md, "Asking the caller's client"). The JSON shapes are MCP's.

// SampleRequest asks the client's LLM for one message.
type SampleRequest struct {
	// Messages are the conversation so far; at least one.
	Messages []SamplingMessage `json:"messages"`
	// SystemPrompt is a system prompt the tool would like used.
	SystemPrompt string `json:"systemPrompt,omitempty"`
	// MaxTokens bounds the answer; required, more than zero.
	MaxTokens int64 `json:"maxTokens"`
	// Temperature, when not zero.
	Temperature float64 `json:"temperature,omitempty"`
	// StopSequences end the answer where they occur.
	StopSequences []string `json:"stopSequences,omitempty"`
	// ModelPreferences say which model the tool would prefer; the client
	// decides.
	ModelPreferences *ModelPreferences `json:"modelPreferences,omitempty"`
}

// SamplingMessage is one message: a role ("user" or "assistant") and one
// "text", "image" or "audio" item.
type SamplingMessage struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// UserText is a user message holding text.
func UserText(text string) SamplingMessage {
	return SamplingMessage{Role: "user", Content: Content{Type: "text", Text: text}}
}

// ModelPreferences are hints for the client's choice of model; priorities
// are between 0 and 1.
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

// SampleResult is the message the client's LLM produced.
type SampleResult struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
	// Model is the model that produced it.
	Model string `json:"model"`
	// StopReason is why it stopped ("endTurn", "stopSequence",
	// "maxTokens", ...).
	StopReason string `json:"stopReason,omitempty"`
}

// ElicitRequest asks the client's user to fill in a form.
type ElicitRequest struct {
	// Message tells the user what is asked.
	Message string `json:"message"`
	// RequestedSchema describes the form: {"type": "object",
	// "properties": {...}} with flat properties — string (optionally an
	// enum, or oneOf const/title for titled choices), number, integer,
	// boolean, or an array of such strings (items with enum or anyOf) —
	// with titles, descriptions and defaults. It reaches the client as
	// written.
	RequestedSchema json.RawMessage `json:"requestedSchema"`
}

// ElicitResult is the user's answer.
type ElicitResult struct {
	// Action is "accept" (Content holds the form), "decline" or "cancel".
	Action string `json:"action"`
	// Content is the filled-in form when accepted; toolhost has checked it
	// against the requested schema.
	Content json.RawMessage `json:"content,omitempty"`
}

// Accepted reports whether the user filled in the form.
func (r *ElicitResult) Accepted() bool { return r != nil && r.Action == "accept" }

// Bind decodes the accepted form into v.
func (r *ElicitResult) Bind(v any) error {
	if !r.Accepted() {
		return errors.New("the form was not accepted")
	}
	return json.Unmarshal(r.Content, v)
}

// ClientError is a request to the caller's client that was refused or
// failed, with toolhost's stable code: CAPABILITY_DENIED (the tool was not
// granted the right, or the call has no client that can answer — `host
// call`, or a client without the capability), INVALID_REQUEST (a request
// toolhost does not send), LIMIT_EXCEEDED (client_requests: the call
// stops), TOOL_EXECUTION_TIMEOUT (the call's deadline passed while the
// client was asked) or TOOL_EXECUTION_FAILED (the client failed).
type ClientError struct {
	Code    string `json:"code"`
	Limit   string `json:"limit,omitempty"`
	Message string `json:"error"`
}

func (e *ClientError) Error() string { return e.Code + ": " + e.Message }

// clientAnswer is the host's answer to a request.
type clientAnswer[T any] struct {
	Result *T `json:"result"`
	ClientError
}

// DecodeClientAnswer reads the host's JSON answer to a Sample or Elicit
// request: the result, or a *ClientError. Both tiers answer in this JSON:
// the wasm host functions (Sample, Elicit here) and a subprocess plugin's
// call session (package shared).
func DecodeClientAnswer[T SampleResult | ElicitResult](b []byte) (*T, error) {
	var a clientAnswer[T]
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, err
	}
	if a.Code != "" || a.Result == nil {
		if a.Code == "" {
			a.Code, a.Message = "TOOL_EXECUTION_FAILED", "the host answered without a result"
		}
		e := a.ClientError
		return nil, &e
	}
	return a.Result, nil
}
