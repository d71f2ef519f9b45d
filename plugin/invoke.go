package plugin

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// callFrame is the nesting state of a call, carried in its context so that
// a nested invocation knows its depth and parent.
type callFrame struct {
	id    string
	depth int
}

type frameKey struct{}

func frameFrom(ctx context.Context) *callFrame {
	f, _ := ctx.Value(frameKey{}).(*callFrame)
	return f
}

// callState is what one call hands its tool: the call's context (the
// deadline context carrying the call's frame, as context.WithValue would)
// and the Request, allocated together since every call needs all three.
type callState struct {
	context.Context
	frame callFrame
	req   Request
}

// Value implements context.Context.
func (c *callState) Value(key any) any {
	if key == (frameKey{}) {
		return &c.frame
	}
	return c.Context.Value(key)
}

// resultBox allocates a Result together with its Meta, which the host
// always fills in.
type resultBox struct {
	res  Result
	meta Meta
}

// newResult returns a copy of r (or an empty Result) whose Meta is owned by
// the host, carrying over the tool's Fuel.
func newResult(r *Result) *Result {
	b := new(resultBox)
	if r != nil {
		b.res = *r
		if r.Meta != nil {
			b.meta.Fuel = r.Meta.Fuel
		}
	}
	b.res.Meta = &b.meta
	return &b.res
}

// Invoke runs one call through the pipeline:
//
//	lookup → arguments well-formed and within size → capability check →
//	safety tier / approval → input validation → deadline → execute →
//	output validation → redaction → truncation (full output kept as an
//	artifact) → audit → result
//
// It always returns a non-nil Result that can be shown to a model. When the
// call failed, the Result has IsError and Code set, and the error is the
// corresponding *Error (errors.Is(err, ErrInvalidRequest) and the like work).
// A tool's answer asking for input (Result.NeedsInput) is not an error.
func (h *Host) Invoke(ctx context.Context, call Call) (*Result, error) {
	return h.invoke(ctx, call, nil)
}

// invoke runs call; caller is the calling tool's invoker for nested calls.
func (h *Host) invoke(ctx context.Context, call Call, caller *nestedInvoker) (*Result, error) {
	start := time.Now()
	if call.ID == "" {
		call.ID = newCallID()
	}
	rec := AuditRecord{Time: start, CallID: call.ID, Tool: call.Name, BytesIn: len(call.Arguments), Decision: DecisionRejected}
	parent := frameFrom(ctx)
	if parent != nil {
		rec.ParentID = parent.id
	}
	res, err := h.run(ctx, call, caller, parent, &rec)
	if err != nil {
		e := asError(call.Name, err)
		// The pipeline's own messages can be long too (every unexpected
		// field of a huge argument object): cut them like output.
		if msg, n := Truncate(e.Message, int(h.defaults.Preview)); n > 0 {
			c := *e
			c.Message = msg
			e = &c
		}
		res = errorResult(e)
		err = e
		rec.Code, rec.Limit = e.Code, e.Limit
	}
	// res comes from newResult: its Meta is the host's to fill in.
	*res.Meta = Meta{CallID: call.ID, Tool: call.Name, Duration: time.Since(start), Fuel: res.Meta.Fuel}
	rec.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	rec.BytesOut = resultSize(res)
	rec.Truncated = res.Truncated != nil
	rec.Fuel = res.Meta.Fuel
	rec.NeedsInput = res.NeedsInput != nil
	if h.auditor != nil {
		h.auditor.Audit(rec)
	}
	return res, err
}

func errorResult(e *Error) *Result {
	res := newResult(nil)
	res.Content = []Content{Text(e.Error())}
	res.IsError, res.Code, res.Limit = true, e.Code, e.Limit
	return res
}

func (h *Host) run(ctx context.Context, call Call, caller *nestedInvoker, parent *callFrame, rec *AuditRecord) (*Result, error) {
	// A nested call counts against its caller's budget whatever becomes
	// of it, and is audited like any other call when refused.
	if caller != nil && caller.used.Add(1) > caller.budget {
		return nil, LimitError("tool_invocations", "tool %q may invoke at most %d tools per call", caller.caller.spec.Name, caller.budget)
	}
	// Lookup.
	e, err := h.lookup(call.Name)
	if err != nil {
		return nil, err
	}
	spec := &e.spec
	rec.Tier = spec.Tier.String()

	// Arguments: a JSON object within the size cap. Checked before approval
	// so that an approver is only ever shown a well-formed request.
	args, err := normalizeArguments(call.Arguments, spec.Limits.Arguments)
	if err != nil {
		return nil, err
	}
	// Answers are checked against their question by the tool
	// (Request.Answer), which alone knows what it asked; here only that
	// each is JSON at all.
	if len(call.Answers) > 0 {
		for _, id := range slices.Sorted(maps.Keys(call.Answers)) {
			if !json.Valid(call.Answers[id]) {
				return nil, Errorf(CodeInvalidRequest, "answer %q is not valid JSON: %s", id, abbreviate(string(call.Answers[id])))
			}
		}
	}

	// Capability check. The composition rule was applied at registration;
	// here a nested call must be allowed by its caller, within depth.
	if caller != nil && !caller.caller.spec.Capabilities.CanInvoke(call.Name) {
		return nil, Errorf(CodeCapabilityDenied, "tool %q may not invoke %q (not in its invoke capability)", caller.caller.spec.Name, call.Name)
	}
	depth := 0
	if parent != nil {
		depth = parent.depth + 1
	}
	if depth > h.maxDepth {
		return nil, LimitError("depth", "nested tool invocations are limited to a depth of %d", h.maxDepth)
	}
	if ok, why, cause := availabilityCause(e.tool); !ok {
		err := Errorf(CodeToolUnavailable, "tool %q is unavailable: %s", call.Name, why)
		err.Err = cause
		return nil, err
	}

	// Safety tier / approval.
	rec.Decision = DecisionAllowed
	if e.needsApproval() {
		if err := h.approve(ctx, call, e, args, rec); err != nil {
			return nil, err
		}
	}

	// Input validation.
	if err := e.input.ValidateJSON(args); err != nil {
		var se *SchemaError
		if errors.As(err, &se) {
			return nil, &Error{Code: CodeInvalidRequest, Message: "invalid arguments: " + se.Error(), Err: se}
		}
		return nil, Errorf(CodeInvalidRequest, "invalid arguments: %v", err)
	}

	// Secrets.
	resolved, err := h.resolveSecrets(ctx, spec)
	if err != nil {
		return nil, err
	}
	live := newCallSecrets(resolved, e.tool, heldBy(e.tool))
	secrets := live.cur // what the tool holds as the call starts

	// Deadline, then execute.
	// The call ends at its own timeout or at the caller's deadline,
	// whichever comes first; say which when it passes.
	d, ok := ctx.Deadline()
	byCaller := ok && time.Until(d) < spec.Limits.Timeout
	tctx, cancel := context.WithTimeout(ctx, spec.Limits.Timeout)
	defer cancel()
	cs := &callState{Context: tctx, frame: callFrame{id: call.ID, depth: depth}}
	ctx = cs
	req := &cs.req
	notify, closeNotify := newCallNotifier(call.Notify, live)
	defer closeNotify()
	*req = Request{
		ID: call.ID, Name: call.Name, Arguments: args, Answers: call.Answers,
		Spec: spec, Secrets: secrets, Log: e.log, Notify: notify,
	}
	if e.log.IsError() {
		// Only a logger that writes anything needs the call ID attached.
		req.Log = e.log.With("call_id", call.ID)
	}
	client, closeClient := newCallClient(call.Client, spec, live, req.Log)
	defer closeClient(rec)
	req.Client = client
	if len(spec.Capabilities.Invoke) > 0 {
		req.Invoker = &nestedInvoker{h: h, caller: e, frame: &cs.frame, budget: int64(spec.Limits.ToolInvocations)}
	}
	res, err := h.execute(ctx, e, req, byCaller)
	// A credential the tool holds may have changed during the call (a
	// refreshed token): what it holds now is redacted too.
	secrets = live.current()
	if err != nil {
		return nil, toolError(call.Name, secrets, int(spec.Limits.Preview), err)
	}
	return h.finish(ctx, e, call, secrets, res)
}

// toolError prepares an error a tool returned for the model: the call's
// secret values are replaced in its message, so that a tool cannot leak a
// secret through an error text, and the message is cut to the preview
// size like any output (a tool may fail with megabytes of stderr). The
// cause stays reachable for errors.Is and errors.As; only the text changes.
func toolError(tool string, secrets *Secrets, preview int, err error) error {
	e := asError(tool, err)
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	short, _ := Truncate(secrets.Redact(msg), preview)
	if short == msg {
		return e
	}
	c := *e
	c.Message = short
	return &c
}

// normalizeArguments checks that raw is a JSON object within max bytes and
// returns it compacted ("{}" for empty input).
func normalizeArguments(raw json.RawMessage, max int64) (json.RawMessage, error) {
	if int64(len(raw)) > max {
		return nil, LimitError("arguments", "arguments are %s, over the %s limit", FormatSize(int64(len(raw))), FormatSize(max))
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid(trimmed) {
		var v any
		err := json.Unmarshal(trimmed, &v)
		return nil, Errorf(CodeInvalidRequest, "arguments are not valid JSON: %v", err)
	}
	if trimmed[0] != '{' {
		var v any
		_ = json.Unmarshal(trimmed, &v)
		return nil, Errorf(CodeInvalidRequest, "arguments must be a JSON object, got %s", jsonKind(v))
	}
	if err := checkNumbers(trimmed); err != nil {
		return nil, Errorf(CodeInvalidRequest, "arguments: %v", err)
	}
	return json.RawMessage(trimmed), nil
}

// Bounds on the numbers in arguments. The schema validator checks numbers
// exactly, with math/big, before the call's deadline exists: a 12-byte
// 1e1000000 costs it ~100 ms and a number of a million digits seconds, so
// one request within the size limit could hold a core for hours. No real
// argument comes near these bounds (a float64 spans ±1.8e308).
const (
	maxNumberLen      = 100
	maxNumberExponent = 400
)

// checkNumbers refuses numbers beyond maxNumberLen characters or with an
// exponent beyond ±maxNumberExponent. doc must be valid JSON.
func checkNumbers(doc []byte) error {
	inString := false
	for i := 0; i < len(doc); i++ {
		switch c := doc[i]; {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '-' || '0' <= c && c <= '9':
			end, exp := scanNumber(doc, i)
			if end-i > maxNumberLen || exp > maxNumberExponent {
				tok := string(doc[i:end])
				if len(tok) > 40 {
					tok = tok[:30] + "..." + tok[len(tok)-7:]
				}
				return fmt.Errorf("the number %s is out of range (at most %d characters, exponent at most %d)", tok, maxNumberLen, maxNumberExponent)
			}
			i = end - 1
		}
	}
	return nil
}

// scanNumber returns the end of the JSON number starting at doc[i] and the
// magnitude of its exponent (counted no further than just past
// maxNumberExponent).
func scanNumber(doc []byte, i int) (end, exp int) {
	inExp := false
	for end = i; end < len(doc); end++ {
		switch d := doc[end]; {
		case d == 'e' || d == 'E':
			inExp = true
		case '0' <= d && d <= '9':
			if inExp && exp <= maxNumberExponent {
				exp = exp*10 + int(d-'0')
			}
		case d == '.' || d == '-' || d == '+':
		default:
			return end, exp
		}
	}
	return end, exp
}

// availabilityCause is availability with the reason's cause, when the
// tool gives one (UnavailableCause).
func availabilityCause(t Tool) (bool, string, error) {
	if c, ok := t.(UnavailableCause); ok {
		return c.AvailableCause()
	}
	ok, why := availability(t)
	return ok, why, nil
}

func availability(t Tool) (bool, string) {
	if a, ok := t.(Availability); ok {
		return a.Available()
	}
	return true, ""
}

func (h *Host) approve(ctx context.Context, call Call, e *entry, args json.RawMessage, rec *AuditRecord) error {
	if h.approver == nil {
		rec.Decision = DecisionApprovalRequired
		return Errorf(CodeApprovalRequired, "tool %q (%s) needs approval and no approver is configured", call.Name, e.spec.Tier)
	}
	ok, err := h.approver.Approve(ctx, ApprovalRequest{
		CallID: call.ID, Tool: call.Name, Description: e.desc.Description, Tier: e.spec.Tier, Arguments: args,
	})
	switch {
	case errors.Is(err, ErrCannotAsk):
		rec.Decision = DecisionApprovalRequired
		return Errorf(CodeApprovalRequired, "tool %q (%s) needs approval: %v", call.Name, e.spec.Tier, err)
	case err != nil:
		rec.Decision = DecisionApprovalRequired
		return &Error{Code: CodeApprovalRequired, Message: fmt.Sprintf("tool %q needs approval; asking failed: %v", call.Name, err), Err: err}
	case !ok:
		rec.Decision = DecisionDenied
		return Errorf(CodeApprovalDenied, "the call to %q was not approved", call.Name)
	}
	rec.Decision = DecisionApproved
	return nil
}

func (h *Host) resolveSecrets(ctx context.Context, spec *Spec) (*Secrets, error) {
	if len(spec.Capabilities.Secrets) == 0 {
		return noSecrets, nil
	}
	if h.secrets == nil {
		return nil, Errorf(CodeToolUnavailable, "tool %q needs secrets and the host has no secret source", spec.Name)
	}
	vals := make(map[string]string, len(spec.Capabilities.Secrets))
	for _, n := range spec.Capabilities.Secrets {
		v, err := h.secrets.LookupSecret(ctx, n)
		if err != nil {
			// The error names the secret, never its value.
			return nil, Errorf(CodeToolUnavailable, "tool %q: %v", spec.Name, err)
		}
		vals[n] = v
	}
	return NewSecrets(vals), nil
}

// execute calls the tool, recovering a panic and bounding the wait by the
// deadline: a tool that ignores ctx is abandoned (its adapter is expected
// to reclaim it), and the caller gets TOOL_EXECUTION_TIMEOUT on time.
func (h *Host) execute(ctx context.Context, e *entry, req *Request, byCaller bool) (*Result, error) {
	type outcome struct {
		res *Result
		err error
	}
	call := func() (o outcome) {
		defer func() {
			if p := recover(); p != nil {
				req.Log.Error("tool panicked", "panic", req.Secrets.Redact(fmt.Sprint(p)), "stack", string(debug.Stack()))
				o = outcome{err: Errorf(CodeToolExecutionFailed, "tool %q crashed: %v", req.Name, p)}
			}
		}()
		o.res, o.err = e.tool.Call(ctx, req)
		return o
	}
	var o outcome
	if dk, ok := e.tool.(DeadlineKeeper); ok && dk.KeepsDeadline() {
		o = call()
	} else {
		done := make(chan outcome, 1)
		go func() { done <- call() }()
		select {
		case o = <-done:
		case <-ctx.Done():
			select {
			case o = <-done:
			default:
				o.err = ctx.Err()
			}
		}
	}
	if ctxErr := ctx.Err(); ctxErr != nil && (o.err != nil || o.res != nil && o.res.IsError) {
		// The tool failed once its context was done: however it reported
		// that (ctx's error, an error of its own, an error result), the
		// failure is the deadline's or the caller's.
		if o.err == nil {
			o.err = &Error{Code: cmp.Or(o.res.Code, CodeToolExecutionFailed), Limit: o.res.Limit, Message: o.res.TextContent()}
		}
		deadline := fmt.Sprintf("within %s", e.spec.Limits.Timeout)
		if byCaller {
			deadline = "before the caller's deadline"
		}
		return nil, contextError(ctxErr, req.Name, deadline, o.err)
	}
	if o.err != nil {
		return nil, o.err
	}
	if o.res == nil {
		return nil, Errorf(CodeOutputInvalid, "tool %q returned no result", req.Name)
	}
	return o.res, nil
}

// contextError is the error of a call whose context ended (ctxErr) while
// the tool failed with err. A deadline makes it TOOL_EXECUTION_TIMEOUT unless
// the tool reported something more specific (a limit hit, say); otherwise
// the tool's code stays. Either way errors.Is(result, ctxErr) holds, so a
// caller can tell a timeout or its own cancellation from a tool's failure.
func contextError(ctxErr error, tool, deadline string, err error) error {
	cause := err
	if !errors.Is(err, ctxErr) {
		cause = errors.Join(ctxErr, err)
	}
	var pe *Error
	if errors.Is(ctxErr, context.DeadlineExceeded) {
		if !errors.As(err, &pe) || pe.Code == CodeToolExecutionFailed || pe.Code == CodeToolUnavailable {
			return &Error{Code: CodeToolExecutionTimeout, Message: fmt.Sprintf("tool %q did not finish %s", tool, deadline), Err: cause}
		}
	}
	c := *asError(tool, err)
	if c.Message == "" && c.Err != nil {
		c.Message = c.Err.Error()
	}
	c.Err = cause
	return &c
}

// finish validates the tool's result, redacts secrets, and truncates the
// text for the model.
func (h *Host) finish(ctx context.Context, e *entry, call Call, secrets *Secrets, res *Result) (*Result, error) {
	spec := &e.spec
	if n := resultSize(res); int64(n) > spec.Limits.Output {
		return nil, LimitError("output", "tool %q produced %s of output, over the %s limit", call.Name, FormatSize(int64(n)), FormatSize(spec.Limits.Output))
	}
	out := newResult(res)
	// The host's fields are the host's: a tool cannot claim truncation or
	// artifacts (perhaps another call's), nor put an error code on a
	// success. out shares the tool's other slices: replace them, never
	// write into them.
	out.Truncated, out.Artifacts = nil, nil
	if !out.IsError {
		out.Code, out.Limit = "", ""
		// Without an output schema nothing else looks at it, and a result
		// holding invalid JSON cannot even be encoded for a client.
		if len(out.StructuredContent) > 0 && !json.Valid(out.StructuredContent) {
			return nil, Errorf(CodeOutputInvalid, "tool %q returned structured content that is not valid JSON", call.Name)
		}
	}
	if len(secrets.values) > 0 {
		out.Content = slices.Clone(res.Content)
		for i := range out.Content {
			if out.Content[i].Type == "text" {
				out.Content[i].Text = secrets.Redact(out.Content[i].Text)
			}
		}
	}
	if len(out.StructuredContent) > 0 {
		out.StructuredContent = secrets.redactJSON(out.StructuredContent)
	}

	// An error is an error, even if it also asks a question.
	if out.IsError {
		if out.Code == "" {
			out.Code = CodeToolExecutionFailed
		}
		msg, _ := Truncate(out.TextContent(), int(spec.Limits.Preview))
		return nil, &Error{Code: out.Code, Limit: out.Limit, Message: msg}
	}

	if out.NeedsInput != nil {
		q := *out.NeedsInput
		q.Text = secrets.Redact(q.Text)
		if len(q.Options) > 0 {
			q.Options = slices.Clone(q.Options)
			for i := range q.Options {
				q.Options[i] = secrets.Redact(q.Options[i])
			}
		}
		out.NeedsInput = &q
		if err := checkQuestion(out.NeedsInput); err != nil {
			return nil, Errorf(CodeOutputInvalid, "tool %q asked an invalid question: %v", call.Name, err)
		}
		if len(out.Content) == 0 {
			out.Content = []Content{Text(questionText(out.NeedsInput))}
		}
		return out, nil
	}

	if e.output != nil {
		if len(out.StructuredContent) == 0 {
			// A tool with an output schema may answer in a single text item.
			if t := out.TextContent(); json.Valid([]byte(t)) && len(out.Content) == 1 {
				out.StructuredContent = json.RawMessage(t)
			} else {
				return nil, Errorf(CodeOutputInvalid, "tool %q has an output schema but returned no structured content", call.Name)
			}
		}
		// Output is as untrusted as arguments (see checkNumbers).
		if err := checkNumbers(out.StructuredContent); err != nil {
			return nil, Errorf(CodeOutputInvalid, "tool %q returned output that cannot be checked against its output schema: %v", call.Name, err)
		}
		if err := e.output.ValidateJSON(out.StructuredContent); err != nil {
			return nil, &Error{Code: CodeOutputInvalid, Message: fmt.Sprintf("tool %q returned output that does not match its output schema: %v", call.Name, err), Err: err}
		}
		if len(out.Content) == 0 {
			out.Content = []Content{Text(string(out.StructuredContent))}
		}
	}
	h.keepArtifacts(ctx, call, secrets, out)
	if err := h.truncate(ctx, e, call, out); err != nil {
		return nil, err
	}
	return out, nil
}

func checkQuestion(q *Question) error {
	if q.ID == "" || q.Text == "" {
		return errors.New("a question needs an id and a text")
	}
	switch q.Type {
	case AnswerBoolean, AnswerText:
	case AnswerSelect:
		if len(q.Options) == 0 {
			return errors.New("a select question needs options")
		}
	default:
		return fmt.Errorf("question type %q: want boolean, text or select", q.Type)
	}
	return nil
}

func questionText(q *Question) string {
	s := "Input needed (" + q.ID + "): " + q.Text
	switch q.Type {
	case AnswerBoolean:
		s += " [yes/no]"
	case AnswerSelect:
		s += " [one of: " + joinQuoted(q.Options) + "]"
	}
	return s + "\nCall the tool again with answers: {\"" + q.ID + "\": <answer>}."
}

func joinQuoted(s []string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// truncate shortens the result's text to the preview size, keeping the full
// text as an artifact.
func (h *Host) truncate(ctx context.Context, e *entry, call Call, res *Result) error {
	total, items := 0, 0
	for _, c := range res.Content {
		if c.Type == "text" {
			total += len(c.Text)
			items++
		}
	}
	preview := int(e.spec.Limits.Preview)
	if total <= preview {
		return nil
	}
	full := res.TextContent()
	ref, err := h.artifacts.Put(ctx, ArtifactMeta{Name: call.ID + ".txt", MIMEType: "text/plain; charset=utf-8", CallID: call.ID, Tool: call.Name}, []byte(full))
	if err != nil {
		h.log.Warn("full output not kept", "tool", call.Name, "call_id", call.ID, "error", err)
	}
	short, omitted := Truncate(full, preview)
	content := make([]Content, 0, len(res.Content)-items+1)
	content = append(content, Text(short))
	for _, c := range res.Content {
		if c.Type != "text" {
			content = append(content, c)
		}
	}
	res.Content = content
	res.Truncated = &Truncation{OriginalBytes: len(full), ShownBytes: len(short), OmittedBytes: omitted}
	if err == nil {
		res.Truncated.ArtifactID = ref.ID
		res.Artifacts = append(res.Artifacts, ref)
	}
	return nil
}

func resultSize(r *Result) int {
	if r == nil {
		return 0
	}
	n := len(r.StructuredContent)
	for _, c := range r.Content {
		n += len(c.Text) + len(c.Data)
	}
	return n
}

// nestedInvoker lets a tool call other tools through the pipeline.
type nestedInvoker struct {
	h      *Host
	caller *entry
	frame  *callFrame // the calling call's
	budget int64
	used   atomic.Int64
}

// Invoke implements Invoker. ctx should be (derived from) the context the
// calling tool was given, so that the caller's deadline and cancellation
// reach the nested call. The nesting depth does not depend on it: it comes
// from the invoker, so a tool that detaches its context cannot recurse
// past the depth cap.
func (n *nestedInvoker) Invoke(ctx context.Context, call Call) (*Result, error) {
	if frameFrom(ctx) != n.frame {
		ctx = context.WithValue(ctx, frameKey{}, n.frame)
	}
	return n.h.invoke(ctx, call, n)
}

// Outcome is one call's result in a batch.
type Outcome struct {
	Result *Result
	Err    error
}

// maxBatchConcurrency bounds how many read_only calls of a batch run at
// once, so that a batch of thousands cannot start thousands of sandboxes.
const maxBatchConcurrency = 16

// InvokeBatch runs calls and returns their outcomes in request order.
// Consecutive read_only calls run concurrently (at most 16 at a time); any
// other call runs alone, after everything before it finished and before
// anything after it starts, so side effects happen in the order requested.
func (h *Host) InvokeBatch(ctx context.Context, calls []Call) []Outcome {
	out := make([]Outcome, len(calls))
	i := 0
	for i < len(calls) {
		if !h.readOnly(calls[i].Name) {
			r, err := h.Invoke(ctx, calls[i])
			out[i] = Outcome{r, err}
			i++
			continue
		}
		j := i
		for j < len(calls) && h.readOnly(calls[j].Name) {
			j++
		}
		var wg sync.WaitGroup
		slots := make(chan struct{}, maxBatchConcurrency)
		for k := i; k < j; k++ {
			slots <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-slots; wg.Done() }()
				r, err := h.Invoke(ctx, calls[k])
				out[k] = Outcome{r, err}
			}()
		}
		wg.Wait()
		i = j
	}
	return out
}

// readOnly reports whether name is a registered read_only tool. Unknown
// names count as read-only: they fail at lookup without side effects.
func (h *Host) readOnly(name string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	e, ok := h.tools[name]
	return !ok || e.spec.Tier == TierReadOnly
}
