package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/plugin"
)

// A tool's sampling and elicitation requests (plugin.Client) go to the
// MCP client of the call. The pipeline has already checked the tool's
// grant, bounded and redacted them; here they become MCP requests.
//
// Under protocols before 2026-07-28 the server sends them in the middle of
// the call (sampling/createMessage, elicitation/create) and the tool goes
// on with the answer. From 2026-07-28 on a server may not send requests of
// its own (multi round-trip requests): the call stops at the tool's first
// unanswered request and returns it as an input request; the client
// answers and calls again, and the tool runs again from the start, its
// earlier requests answered from the sealed request state (matched by
// order and by a hash of the request, so that a tool asking something else
// the second time asks the client anew).

// Input request keys of a tool's own requests.
const (
	inputSample = "toolhost_sample"
	inputElicit = "toolhost_elicit"
)

// maxRecordedAnswers bounds the answers a multi round-trip call carries in
// its request state from round to round (the client sends it back with
// every round, within the server's body limit).
const maxRecordedAnswers = 1 << 20

// askedRecord is one of a tool's requests answered in an earlier round.
type askedRecord struct {
	Kind   string          `json:"k"` // inputSample or inputElicit
	Hash   string          `json:"h"`
	Answer json.RawMessage `json:"r"` // plugin.SampleResult or plugin.ElicitResult
}

// pendingAsk is a tool's request that ends a multi round-trip round.
type pendingAsk struct {
	Kind string `json:"k"`
	Hash string `json:"h"`
	// params is what the client is asked; not sealed.
	params sdk.InputRequest
}

// errAsking ends a tool's run in a multi round-trip round: its request
// goes to the client in the result, and the tool runs again with the
// answer.
var errAsking = errors.New("the request goes to the MCP client, and the call runs again with its answer")

// A callState is the plugin.Client of its MCP tool call.
var _ plugin.Client = (*callState)(nil)

// canAsk reports whether the call's client declared what kind needs.
func (cs *callState) canAsk(kind string) error {
	switch kind {
	case inputSample:
		if caps := cs.req.ClientCapabilities(); caps == nil || caps.Sampling == nil {
			return fmt.Errorf("%w: the MCP client did not declare the sampling capability", plugin.ErrNoClient)
		}
	case inputElicit:
		if !cs.canElicit() {
			return fmt.Errorf("%w: the MCP client did not declare the elicitation capability (form mode)", plugin.ErrNoClient)
		}
	}
	return nil
}

// Sample implements plugin.Client.
func (cs *callState) Sample(ctx context.Context, req *plugin.SampleRequest) (*plugin.SampleResult, error) {
	if err := cs.canAsk(inputSample); err != nil {
		return nil, err
	}
	params := sampleParams(req)
	return roundTrip(ctx, cs, inputSample, params, func(ctx context.Context) (*plugin.SampleResult, error) {
		res, err := cs.session.CreateMessage(ctx, params)
		if err != nil {
			return nil, err
		}
		return sampleResult(res.Role, []sdk.Content{res.Content}, res.Model, res.StopReason)
	})
}

// Elicit implements plugin.Client.
func (cs *callState) Elicit(ctx context.Context, req *plugin.ElicitRequest) (*plugin.ElicitResult, error) {
	if err := cs.canAsk(inputElicit); err != nil {
		return nil, err
	}
	params := &sdk.ElicitParams{Mode: "form", Message: req.Message, RequestedSchema: req.RequestedSchema}
	return roundTrip(ctx, cs, inputElicit, params, func(ctx context.Context) (*plugin.ElicitResult, error) {
		res, err := cs.session.Elicit(ctx, params)
		if err != nil {
			return nil, err
		}
		return elicitResult(res)
	})
}

// roundTrip puts a tool's request to the client: in the middle of the call
// (send) under protocols before 2026-07-28, else from the answers of
// earlier rounds or by ending the round (replay).
func roundTrip[R any](ctx context.Context, cs *callState, kind string, params sdk.InputRequest, send func(context.Context) (*R, error)) (*R, error) {
	if cs.legacy {
		return send(ctx)
	}
	out := new(R)
	if err := cs.replay(kind, params, out); err != nil {
		return nil, err
	}
	return out, nil
}

// replay answers a multi round-trip request from the answers of earlier
// rounds into out, or records it as the one the round asks the client and
// ends the round.
func (cs *callState) replay(kind string, params sdk.InputRequest, out any) error {
	b, err := json.Marshal(params)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(append([]byte(kind+"\x00"), b...))
	hash := hex.EncodeToString(sum[:12])
	cs.mu.Lock()
	defer cs.mu.Unlock()
	i := cs.asked
	cs.asked++
	st := cs.st
	if i < len(st.Asked) {
		if a := st.Asked[i]; a.Kind == kind && a.Hash == hash {
			return json.Unmarshal(a.Answer, out)
		}
		// The tool asks something else this time: what it was told
		// after this point no longer applies.
		st.Asked = st.Asked[:i]
	}
	if cs.ask == nil {
		cs.ask = &pendingAsk{Kind: kind, Hash: hash, params: params}
		if cs.endRound != nil {
			cs.endRound()
		}
	}
	return errAsking
}

// record keeps the client's answer to the request the last round asked.
func (st *roundState) record(resp sdk.InputResponse) error {
	p := st.Asking
	st.Asking = nil
	var answer any
	var err error
	switch r := resp.(type) {
	case *sdk.CreateMessageWithToolsResult:
		if p.Kind == inputSample {
			answer, err = sampleResult(r.Role, r.Content, r.Model, r.StopReason)
		}
	case *sdk.CreateMessageResult:
		if p.Kind == inputSample {
			answer, err = sampleResult(r.Role, []sdk.Content{r.Content}, r.Model, r.StopReason)
		}
	case *sdk.ElicitResult:
		if p.Kind == inputElicit {
			answer, err = elicitResult(r)
		}
	}
	if err != nil {
		return err
	}
	if answer == nil {
		return fmt.Errorf("the answer to %s is a %T", p.Kind, resp)
	}
	b, err := json.Marshal(answer)
	if err != nil {
		return err
	}
	n := len(b)
	for _, a := range st.Asked {
		n += len(a.Answer)
	}
	if n > maxRecordedAnswers {
		return fmt.Errorf("the client's answers in this call come to %s, over the %s a call carries between rounds", plugin.FormatSize(int64(n)), plugin.FormatSize(maxRecordedAnswers))
	}
	st.Asked = append(st.Asked, askedRecord{Kind: p.Kind, Hash: p.Hash, Answer: b})
	return nil
}

func sampleParams(req *plugin.SampleRequest) *sdk.CreateMessageParams {
	p := &sdk.CreateMessageParams{
		MaxTokens: req.MaxTokens, SystemPrompt: req.SystemPrompt, Temperature: req.Temperature,
		StopSequences: req.StopSequences, Messages: make([]*sdk.SamplingMessage, len(req.Messages)),
	}
	for i, m := range req.Messages {
		p.Messages[i] = &sdk.SamplingMessage{Role: sdk.Role(m.Role), Content: toContent(m.Content)}
	}
	if mp := req.ModelPreferences; mp != nil {
		p.ModelPreferences = &sdk.ModelPreferences{CostPriority: mp.CostPriority, SpeedPriority: mp.SpeedPriority, IntelligencePriority: mp.IntelligencePriority}
		for _, h := range mp.Hints {
			p.ModelPreferences.Hints = append(p.ModelPreferences.Hints, &sdk.ModelHint{Name: h.Name})
		}
	}
	return p
}

// sampleResult is a client's sampling answer for the tool: one text, image
// or audio message.
func sampleResult(role sdk.Role, content []sdk.Content, model, stop string) (*plugin.SampleResult, error) {
	if len(content) != 1 {
		return nil, fmt.Errorf("the client answered with %d content items; a tool takes one", len(content))
	}
	c, err := samplingContent(content[0])
	if err != nil {
		return nil, fmt.Errorf("the client answered with %w", err)
	}
	return &plugin.SampleResult{Role: string(role), Content: c, Model: model, StopReason: stop}, nil
}

func elicitResult(res *sdk.ElicitResult) (*plugin.ElicitResult, error) {
	r := &plugin.ElicitResult{Action: res.Action}
	if res.Action == plugin.ElicitAccept && res.Content != nil {
		b, err := json.Marshal(res.Content)
		if err != nil {
			return nil, err
		}
		r.Content = b
	}
	return r, nil
}
