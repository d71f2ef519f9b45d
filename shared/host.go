package shared

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/toolhost/toolhost/shared/guest"
	"github.com/toolhost/toolhost/shared/pluginv1"
)

// What a call asks of its caller's client has the same shape in both tiers:
// these are the wasm guest SDK's types (package guest holds them because a
// wasm guest cannot import this package's gRPC dependencies).
type (
	// SampleRequest asks for one message from the client's LLM (MCP
	// sampling/createMessage params).
	SampleRequest = guest.SampleRequest
	// SamplingMessage is one message of a SampleRequest. Its Content is
	// guest.Content, whose JSON is the same as Content's.
	SamplingMessage = guest.SamplingMessage
	// ModelPreferences say which model a SampleRequest would prefer.
	ModelPreferences = guest.ModelPreferences
	// ModelHint names a model, or part of a name.
	ModelHint = guest.ModelHint
	// SampleResult is the client's message.
	SampleResult = guest.SampleResult
	// ElicitRequest asks the client's user to fill in a form (MCP
	// elicitation/create params, form mode).
	ElicitRequest = guest.ElicitRequest
	// ElicitResult is the user's answer: accepted with the form's content,
	// declined or cancelled.
	ElicitResult = guest.ElicitResult
	// ClientError is a request to the caller's client that the host refused
	// or that failed: Code is toolhost's error code (CAPABILITY_DENIED when
	// the tool is not granted client.sampling or client.elicitation, or the
	// caller has no client that can answer; LIMIT_EXCEEDED past the call's
	// client_requests).
	ClientError = guest.ClientError
)

// UserText is a user message holding text, for a SampleRequest.
func UserText(text string) SamplingMessage { return guest.UserText(text) }

// ErrNoHost is returned by Progress, Log, Sample and Elicit when ctx is not
// the context of a call the host made with CallToolSession: a test calling
// CallTool directly, or a call with nobody listening and no client right,
// which the host makes with plain CallTool (nothing would reach anyone).
var ErrNoHost = errors.New("shared: no host to report to: ctx is not a call's context")

// Progress reports how far the call whose context ctx is has got: progress
// out of total (0 when the total is unknown), with an optional message. An
// MCP client that asked for progress receives notifications/progress. The
// host redacts the call's secrets, drops progress that does not increase,
// caps how much one call reports, and drops anything sent after the call
// returned.
func Progress(ctx context.Context, progress, total float64, message string) error {
	type report struct {
		Progress float64 `json:"progress"`
		Total    float64 `json:"total,omitempty"`
		Message  string  `json:"message,omitempty"`
	}
	return notify(ctx, struct {
		Progress report `json:"progress"`
	}{report{progress, total, message}})
}

// Log sends a message to the call's caller at level: "debug", "info",
// "notice", "warning", "error", "critical", "alert" or "emergency" (RFC
// 5424, as MCP). An MCP client receives it as notifications/message at the
// level it asked for. It is not the plugin's own log: write that to stderr,
// which the host logs.
func Log(ctx context.Context, level, message string) error {
	type entry struct {
		Level   string `json:"level"`
		Message string `json:"message"`
	}
	return notify(ctx, struct {
		Log entry `json:"log"`
	}{entry{level, message}})
}

// Sample asks the caller's client for a completion from its LLM and waits
// for it, within the call's deadline. The tool needs client.sampling in its
// tool block, granted by the operator. A refusal or failure is a
// *ClientError.
func Sample(ctx context.Context, req SampleRequest) (*SampleResult, error) {
	return ask[SampleResult](ctx, "sampling", req)
}

// Elicit asks the caller's client to put a form to its user and waits for
// the answer, within the call's deadline: give the tool a timeout a person
// can answer in. The tool needs client.elicitation, granted. A user who
// declines or cancels is an answer, not an error. A refusal or failure is a
// *ClientError.
func Elicit(ctx context.Context, req ElicitRequest) (*ElicitResult, error) {
	return ask[ElicitResult](ctx, "elicitation", req)
}

// session is a call's CallToolSession as the plugin sees it: sends are
// serialised (a gRPC stream allows one sender at a time) and answers are
// matched to asks by id.
type session struct {
	stream pluginv1.Tools_CallToolSessionServer

	sendMu sync.Mutex

	mu      sync.Mutex
	nextID  uint64
	waiting map[uint64]chan []byte
	err     error // the stream broke: every ask fails with it
}

type sessionKey struct{}

func (s *session) send(m *pluginv1.PluginMessage) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	return s.stream.Send(m)
}

// receive delivers the host's answers until the stream ends.
func (s *session) receive() {
	for {
		m, err := s.stream.Recv()
		if err != nil {
			s.mu.Lock()
			s.err = fmt.Errorf("the call's session with the host ended: %w", err)
			for id, ch := range s.waiting {
				close(ch)
				delete(s.waiting, id)
			}
			s.mu.Unlock()
			return
		}
		a := m.GetAnswer()
		if a == nil {
			continue // the call came first; nothing else is defined
		}
		s.mu.Lock()
		ch := s.waiting[a.GetId()]
		delete(s.waiting, a.GetId())
		s.mu.Unlock()
		if ch != nil {
			ch <- a.GetJson()
		}
	}
}

func sessionFrom(ctx context.Context) (*session, error) {
	s, _ := ctx.Value(sessionKey{}).(*session)
	if s == nil {
		return nil, ErrNoHost
	}
	return s, nil
}

func notify(ctx context.Context, v any) error {
	s, err := sessionFrom(ctx)
	if err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.send(&pluginv1.PluginMessage{Message: &pluginv1.PluginMessage_Notification{Notification: &pluginv1.Notification{Json: b}}})
}

func ask[T SampleResult | ElicitResult](ctx context.Context, kind string, req any) (*T, error) {
	s, err := sessionFrom(ctx)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	ch := make(chan []byte, 1)
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return nil, s.err
	}
	s.nextID++
	id := s.nextID
	s.waiting[id] = ch
	s.mu.Unlock()
	forget := func() {
		s.mu.Lock()
		delete(s.waiting, id)
		s.mu.Unlock()
	}
	if err := s.send(&pluginv1.PluginMessage{Message: &pluginv1.PluginMessage_Ask{Ask: &pluginv1.AskRequest{Id: id, Kind: kind, Json: b}}}); err != nil {
		forget()
		return nil, err
	}
	var answer []byte
	select {
	case a, ok := <-ch:
		if !ok {
			s.mu.Lock()
			err := s.err
			s.mu.Unlock()
			return nil, err
		}
		answer = a
	case <-ctx.Done():
		forget()
		return nil, ctx.Err()
	}
	return guest.DecodeClientAnswer[T](answer)
}
