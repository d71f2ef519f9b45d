package mcp

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/plugin"
)

// Input request keys toolhost uses in multi round-trip results.
const (
	inputApproval = "toolhost_approval"
	inputAnswer   = "toolhost_answer"
)

// protocolMRTR is the first protocol version in which servers may not send
// elicitation requests of their own: they return input requests instead
// and the client calls again (multi round-trip requests).
const protocolMRTR = "2026-07-28"

// maxRounds bounds the questions one call may ask before it answers.
const maxRounds = 8

// callState is what one MCP tool call knows about approvals and answers. It
// travels in the context given to Host.Invoke, where [Approver] finds it.
type callState struct {
	session   *sdk.ServerSession
	req       *sdk.CallToolRequest
	canElicit func() bool // the client takes form elicitations (decoded once, when first asked)
	legacy    bool        // the client takes server-initiated elicitation requests
	st        *roundState

	mu       sync.Mutex
	pending  *pendingApproval   // an approval to ask for (multi round-trip)
	asked    int                // the tool's client requests so far in this round
	ask      *pendingAsk        // a tool's request to put to the client (multi round-trip)
	endRound context.CancelFunc // stops the tool once it has asked (multi round-trip)
}

// roundState survives the rounds of a multi round-trip call, sealed in
// its requestState.
type roundState struct {
	Tool      string                     `json:"t"`
	Args      string                     `json:"a"` // hash of the arguments
	Expires   int64                      `json:"e"`
	Approvals []approvalRecord           `json:"ap,omitempty"`
	Answers   map[string]json.RawMessage `json:"an,omitempty"`
	Pending   *pendingApproval           `json:"p,omitempty"`
	Question  *plugin.Question           `json:"q,omitempty"`
	// Asked are the answers to the tool's own client requests (ask.go),
	// in the order it made them; Asking is the request the last round
	// put to the client.
	Asked  []askedRecord `json:"as,omitempty"`
	Asking *pendingAsk   `json:"ak,omitempty"`
}

type approvalRecord struct {
	Tool string `json:"t"`
	Args string `json:"a"`
	OK   bool   `json:"ok"`
}

type pendingApproval struct {
	Tool        string `json:"t"`
	Args        string `json:"a"`
	Description string `json:"d,omitempty"`
	Tier        string `json:"r,omitempty"`
	Arguments   string `json:"-"`
}

type stateKey struct{}

// Approver returns the approver to give the host that `host serve` runs:
// a call that comes from an MCP client whose client supports elicitation
// is approved or denied by asking that client's user; any other call is
// decided by fallback (nil: no one can be asked, the call fails with
// APPROVAL_REQUIRED).
func Approver(fallback plugin.Approver) plugin.Approver {
	return plugin.ApproverFunc(func(ctx context.Context, req plugin.ApprovalRequest) (bool, error) {
		cs, _ := ctx.Value(stateKey{}).(*callState)
		if cs == nil {
			if fallback != nil {
				return fallback.Approve(ctx, req)
			}
			return false, plugin.ErrCannotAsk
		}
		return cs.approve(ctx, req)
	})
}

func (cs *callState) approve(ctx context.Context, req plugin.ApprovalRequest) (bool, error) {
	if !cs.canElicit() {
		return false, fmt.Errorf("%w: the MCP client does not support elicitation", plugin.ErrCannotAsk)
	}
	p := &pendingApproval{Tool: req.Tool, Args: hashArgs(req.Arguments), Description: req.Description, Tier: req.Tier.String(), Arguments: string(req.Arguments)}
	cs.mu.Lock()
	for _, a := range cs.st.Approvals {
		if a.Tool == p.Tool && a.Args == p.Args {
			cs.mu.Unlock()
			return a.OK, nil
		}
	}
	cs.mu.Unlock()
	if !cs.legacy {
		// Multi round-trip: the handler returns the question, the client
		// asks its user and calls again with the answer.
		cs.mu.Lock()
		cs.pending = p
		cs.mu.Unlock()
		return false, fmt.Errorf("%w: asking the MCP client's user", plugin.ErrCannotAsk)
	}
	res, err := cs.session.Elicit(ctx, approvalElicitation(p))
	if err != nil {
		return false, fmt.Errorf("elicitation failed: %w", err)
	}
	ok := approved(res)
	cs.mu.Lock()
	cs.st.Approvals = append(cs.st.Approvals, approvalRecord{Tool: p.Tool, Args: p.Args, OK: ok})
	cs.mu.Unlock()
	return ok, nil
}

func approved(res *sdk.ElicitResult) bool {
	if res == nil || res.Action != "accept" {
		return false
	}
	v, ok := res.Content["approve"].(bool)
	return ok && v
}

func approvalElicitation(p *pendingApproval) *sdk.ElicitParams {
	args := p.Arguments
	if len(args) > 2000 {
		args = args[:2000] + "…"
	}
	msg := fmt.Sprintf("Allow the %s tool %q to run?", p.Tier, p.Tool)
	if p.Description != "" {
		msg += "\n" + firstLine(p.Description)
	}
	if args != "" {
		msg += "\nArguments: " + args
	}
	return &sdk.ElicitParams{
		Mode:    "form",
		Message: msg,
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"approve":{"type":"boolean","title":"Approve",` +
			`"description":"Run the tool with these arguments"}},"required":["approve"]}`),
	}
}

func questionElicitation(q *plugin.Question) *sdk.ElicitParams {
	var prop any
	switch q.Type {
	case plugin.AnswerBoolean:
		prop = map[string]any{"type": "boolean", "title": q.Text}
	case plugin.AnswerSelect:
		prop = map[string]any{"type": "string", "title": q.Text, "enum": q.Options}
	default:
		prop = map[string]any{"type": "string", "title": q.Text}
	}
	schema, _ := json.Marshal(map[string]any{
		"type": "object", "properties": map[string]any{"answer": prop}, "required": []string{"answer"},
	})
	return &sdk.ElicitParams{Mode: "form", Message: q.Text, RequestedSchema: json.RawMessage(schema)}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func hashArgs(args []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, args) == nil {
		args = buf.Bytes()
	}
	sum := sha256.Sum256(args)
	return hex.EncodeToString(sum[:12])
}

// call runs one tools/call request: it asks for approvals and answers by
// elicitation as needed, and maps the host's result to MCP.
func (s *Server) call(ctx context.Context, name string, req *sdk.CallToolRequest, notify plugin.Notifier) *sdk.CallToolResult {
	args, answers, err := splitAnswers(req.Params.Arguments)
	if err != nil {
		return errorResult(plugin.Errorf(plugin.CodeInvalidRequest, "%v", err))
	}
	cs := &callState{
		session: req.Session,
		req:     req,
		// Asked only when a call needs an approval or an answer: the SDK
		// decodes the capabilities from the request's _meta anew on every
		// asking, a noticeable part of a plain call's cost.
		canElicit: sync.OnceValue(func() bool {
			caps := req.ClientCapabilities()
			return caps != nil && caps.Elicitation != nil && (caps.Elicitation.Form != nil || caps.Elicitation.URL == nil)
		}),
		legacy: req.ProtocolVersion() < protocolMRTR,
	}
	argHash := hashArgs(args)
	if rs := req.Params.RequestState; rs != "" {
		st, err := s.seal.open(rs)
		if err != nil || st.Tool != name || st.Args != argHash {
			return errorResult(plugin.Errorf(plugin.CodeInvalidRequest, "requestState does not belong to this call (or has expired); call the tool again without it"))
		}
		cs.st = st
	} else {
		cs.st = &roundState{Tool: name, Args: argHash}
	}
	st := cs.st
	if st.Answers == nil {
		st.Answers = map[string]json.RawMessage{}
	}
	for id, v := range answers {
		st.Answers[id] = v
	}
	// Answers to the questions of the previous round.
	declined := false
	for key, resp := range req.Params.InputResponses {
		er, _ := resp.(*sdk.ElicitResult)
		switch {
		case key == inputApproval && st.Pending != nil:
			st.Approvals = append(st.Approvals, approvalRecord{Tool: st.Pending.Tool, Args: st.Pending.Args, OK: approved(er)})
			st.Pending = nil
		case key == inputAnswer && st.Question != nil:
			if v, ok := answerValue(st.Question, er); ok {
				st.Answers[st.Question.ID] = v
			} else {
				declined = true // the question comes back as text
			}
			st.Question = nil
		case st.Asking != nil && key == st.Asking.Kind:
			if err := st.record(resp); err != nil {
				return errorResult(plugin.Errorf(plugin.CodeToolExecutionFailed, "the client's answer to the tool's request: %v", err))
			}
		}
	}
	st.Asking = nil // unanswered: the tool asks again
	ctx = context.WithValue(ctx, stateKey{}, cs)
	for round := 0; ; round++ {
		rctx, endRound := context.WithCancel(ctx)
		cs.mu.Lock()
		cs.endRound = endRound
		cs.mu.Unlock()
		res, err := s.host.Invoke(rctx, plugin.Call{Name: name, Arguments: args, Answers: st.Answers, Notify: notify, Client: cs})
		endRound()
		cs.mu.Lock()
		pending, ask := cs.pending, cs.ask
		cs.pending, cs.ask, cs.asked = nil, nil, 0
		cs.mu.Unlock()
		if pending != nil && errors.Is(err, plugin.ErrApprovalRequired) {
			st.Pending = pending
			return s.inputRequired(st, inputApproval, approvalElicitation(pending))
		}
		if ask != nil {
			// The tool asked its client (multi round-trip): the round
			// ended there, and the call runs again with the answer.
			st.Asking = ask
			return s.inputRequired(st, ask.Kind, ask.params)
		}
		q := res.NeedsInput
		if q == nil || declined || !cs.canElicit() || round >= maxRounds {
			return toResult(res, err)
		}
		ep := questionElicitation(q)
		if !cs.legacy {
			st.Question = q
			return s.inputRequired(st, inputAnswer, ep)
		}
		er, eerr := req.Session.Elicit(ctx, ep)
		if eerr != nil {
			s.log.Debug("elicitation failed; returning the question as text", "tool", name, "error", eerr)
			return toResult(res, err)
		}
		v, ok := answerValue(q, er)
		if !ok {
			return toResult(res, err) // declined: the question stays open
		}
		st.Answers[q.ID] = v
	}
}

// inputRequired returns a multi round-trip result asking one question.
func (s *Server) inputRequired(st *roundState, key string, ep sdk.InputRequest) *sdk.CallToolResult {
	st.Expires = time.Now().Add(15 * time.Minute).Unix()
	state, err := s.seal.seal(st)
	if err != nil {
		return errorResult(plugin.Errorf(plugin.CodeToolExecutionFailed, "sealing request state: %v", err))
	}
	return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{key: ep}, RequestState: state}
}

// answerValue converts an elicitation answer to the JSON the tool expects.
func answerValue(q *plugin.Question, er *sdk.ElicitResult) (json.RawMessage, bool) {
	if er == nil || er.Action != "accept" {
		return nil, false
	}
	v, ok := er.Content["answer"]
	if !ok {
		return nil, false
	}
	switch q.Type {
	case plugin.AnswerBoolean:
		if _, isBool := v.(bool); !isBool {
			return nil, false
		}
	default:
		if _, isString := v.(string); !isString {
			return nil, false
		}
	}
	b, err := json.Marshal(v)
	return b, err == nil
}

// splitAnswers removes the _answers argument from args.
func splitAnswers(raw json.RawMessage) (json.RawMessage, map[string]json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 || !bytes.Contains(raw, []byte(`"`+AnswersArgument+`"`)) {
		return raw, nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return raw, nil, nil // the pipeline reports malformed arguments
	}
	a, ok := m[AnswersArgument]
	if !ok {
		return raw, nil, nil
	}
	var answers map[string]json.RawMessage
	if err := json.Unmarshal(a, &answers); err != nil {
		return nil, nil, fmt.Errorf("%s must be an object mapping question IDs to answers", AnswersArgument)
	}
	delete(m, AnswersArgument)
	out, err := json.Marshal(m)
	return out, answers, err
}

// sealer authenticates request states, so that a client cannot forge the
// approvals a multi round-trip call carries from round to round.
type sealer struct{ key []byte }

func newSealer() (*sealer, error) {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	return &sealer{key: k}, nil
}

func (s *sealer) mac(b []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write(b)
	return m.Sum(nil)
}

func (s *sealer) seal(st *roundState) (string, error) {
	b, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString(b) + "." + enc.EncodeToString(s.mac(b)), nil
}

func (s *sealer) open(state string) (*roundState, error) {
	enc := base64.RawURLEncoding
	p, m, ok := strings.Cut(state, ".")
	if !ok {
		return nil, errors.New("malformed state")
	}
	b, err1 := enc.DecodeString(p)
	mac, err2 := enc.DecodeString(m)
	if err1 != nil || err2 != nil || !hmac.Equal(mac, s.mac(b)) {
		return nil, errors.New("state is not authentic")
	}
	var st roundState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, err
	}
	if time.Now().Unix() > st.Expires {
		return nil, errors.New("state expired")
	}
	return &st, nil
}
