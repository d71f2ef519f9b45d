package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxStdioMessage bounds one newline-delimited JSON-RPC message read on
// stdio, as the SDK's own stdio transport does.
const MaxStdioMessage = sdk.DefaultMaxLineLength

// stdioTransport is the stdio transport of ServeStdio: newline-delimited
// JSON-RPC (with JSON-RPC batches), like the SDK's IOTransport, built for a
// call's latency rather than generality.
//
//   - Each message is decoded once, on the goroutine that asks for it, and
//     one of the common shape without the SDK's decoder (decodeCommon,
//     wire.go). The SDK's transport decodes it on a goroutine of its own,
//     hands it over, and decodes it twice more (once as a batch). When the input can be
//     interrupted (SetReadDeadline: a pipe or socket made non-blocking),
//     reading is done on the session's own goroutine, which then runs the
//     handler on the same thread, with no hand-off between threads; on an
//     idle machine each hand-off is a thread woken from sleep.
//   - A response is written as its encoded result framed by its id, in one
//     write, without compacting the result again.
//   - A line that is not JSON, or not a JSON-RPC message, or longer than
//     MaxStdioMessage, is answered with a JSON-RPC error (-32700 or -32600)
//     and the session goes on; the SDK's transport ends the session. The
//     error carries the message's id when it can be read (a request with a
//     wrong "jsonrpc" member, say), so that the client's call fails at once
//     instead of waiting for an answer that never comes; null otherwise,
//     and null when a request still being served has that id.
//   - Batches are served as JSON-RPC says, under the protocol versions
//     that have them: once a session has agreed on 2025-06-18 or later,
//     which dropped batching from MCP, a batch is refused whole (-32600),
//     as the SDK's HTTP transport does. An initialize request is never
//     served inside a batch (2025-03-26 forbids it).
type stdioTransport struct {
	in  io.ReadCloser
	out io.WriteCloser
	log hclog.Logger
	max int
}

// deadliner is an input whose blocked Read a deadline interrupts.
type deadliner interface {
	SetReadDeadline(time.Time) error
}

func (t *stdioTransport) Connect(context.Context) (sdk.Connection, error) {
	max := t.max
	if max <= 0 {
		max = MaxStdioMessage
	}
	c := &stdioConn{
		in:     t.in,
		r:      bufio.NewReaderSize(t.in, 64<<10),
		out:    t.out,
		log:    t.log,
		max:    max,
		closed: make(chan struct{}),
	}
	if d, ok := t.in.(deadliner); ok && d.SetReadDeadline(time.Time{}) == nil {
		c.direct = d
	} else {
		// Close must end a Read waiting for input, which closing a
		// blocking descriptor does not do: read on a goroutine of our own.
		c.lines = make(chan lineOrErr)
		go c.readLines()
	}
	return c, nil
}

type lineOrErr struct {
	line []byte
	err  error
}

type stdioConn struct {
	in     io.ReadCloser
	r      *bufio.Reader
	out    io.WriteCloser
	log    hclog.Logger
	max    int
	direct deadliner      // set: Read reads the input itself
	lines  chan lineOrErr // else: what readLines read

	queue []jsonrpc.Message // the rest of a batch being read

	writeMu sync.Mutex
	buf     []byte // the write buffer, under writeMu

	batchMu sync.Mutex
	batches map[jsonrpc.ID]*stdioBatch // batched requests not yet answered

	// The ids of the requests read and not answered yet, under
	// inflightMu. An error for a message that reuses one of them is sent
	// with a null id: with the id, the client would take it for the
	// answer to the request still being served.
	inflightMu sync.Mutex
	inflight   map[jsonrpc.ID]struct{}
	// drained, when set, is closed once inflight empties: end of input
	// waits on it (drain).
	drained chan struct{}

	// The protocol version agreed by initialize: the id of the last
	// initialize request read, and the version its successful answer
	// named. Under versionMu.
	versionMu sync.Mutex
	initID    jsonrpc.ID
	version   string

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

// stdioBatch collects the responses to one JSON-RPC batch, which are sent
// together as an array once every request in it has been answered.
type stdioBatch struct {
	pending   int
	index     map[jsonrpc.ID]int
	responses []*jsonrpc.Response
}

func (c *stdioConn) SessionID() string { return "" }

// Read returns the next message. Lines that are not messages are answered
// with an error response and skipped.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	for {
		line, err := c.next()
		if err != nil {
			if tooLong := (*lineTooLongError)(nil); errors.As(err, &tooLong) {
				c.refuse(&rpcError{code: jsonrpc.CodeInvalidRequest, err: err})
				continue
			}
			if errors.Is(err, io.EOF) {
				// The SDK takes the end of reading for the end of the
				// session: it cancels the requests still being served
				// and refuses to write their answers. A client that
				// writes its requests and closes its end (a script, a
				// CI job) is owed every answer, so the end of input is
				// reported only once each request read is answered.
				c.drain()
			}
			return nil, err
		}
		msgs, err := c.decode(line)
		if err != nil {
			c.refuse(err)
			continue
		}
		if len(msgs) == 0 {
			continue // a blank line, or a batch with nothing to serve
		}
		c.queue = msgs[1:]
		if r, ok := msgs[0].(*jsonrpc.Request); ok && r.Method == "initialize" && r.IsCall() {
			c.versionMu.Lock()
			c.initID = r.ID
			c.versionMu.Unlock()
		}
		return msgs[0], nil
	}
}

// next returns the next line, without its line ending.
func (c *stdioConn) next() ([]byte, error) {
	if c.direct == nil {
		select {
		case l, ok := <-c.lines:
			if !ok {
				return nil, io.EOF
			}
			return l.line, l.err
		case <-c.closed:
			return nil, io.EOF
		}
	}
	line, err := c.readLine()
	if err != nil {
		select {
		case <-c.closed:
			return nil, io.EOF
		default:
		}
	}
	return line, err
}

// readLines feeds c.lines until the input ends or the connection closes.
func (c *stdioConn) readLines() {
	defer close(c.lines)
	for {
		line, err := c.readLine()
		if line != nil {
			// The reader's buffer is reused by the next read.
			line = bytes.Clone(line)
		}
		select {
		case c.lines <- lineOrErr{line, err}:
		case <-c.closed:
			return
		}
		if err != nil && !errors.As(err, new(*lineTooLongError)) {
			return
		}
	}
}

type lineTooLongError struct{ max int }

func (e *lineTooLongError) Error() string {
	return fmt.Sprintf("message longer than %d bytes", e.max)
}

// readLine reads one line of at most c.max bytes. A longer one is read to
// its end and dropped. The line may alias the reader's buffer.
func (c *stdioConn) readLine() ([]byte, error) {
	line, err := c.r.ReadSlice('\n')
	if err == nil {
		if len(line) > c.max+2 { // the cap, and CR LF
			return nil, &lineTooLongError{c.max}
		}
		return line, nil
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		if len(line) > 0 && errors.Is(err, io.EOF) {
			return line, nil // the last line has no newline
		}
		return nil, err
	}
	long := bytes.Clone(line)
	for errors.Is(err, bufio.ErrBufferFull) {
		line, err = c.r.ReadSlice('\n')
		if len(long) <= c.max {
			long = append(long, line...)
		}
	}
	if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
		return nil, err
	}
	if len(long) > c.max {
		return nil, &lineTooLongError{c.max}
	}
	return long, nil
}

// rpcError is a line that is not a message, with its JSON-RPC error code
// and, when it could be read, its id.
type rpcError struct {
	code int64
	err  error
	id   jsonrpc.ID
}

func (e *rpcError) Error() string { return e.err.Error() }

func codeOf(err error) int64 {
	if re, ok := err.(*rpcError); ok {
		return re.code
	}
	return jsonrpc.CodeInvalidRequest
}

// decode decodes a line into its messages: one, or a batch's.
func (c *stdioConn) decode(line []byte) ([]jsonrpc.Message, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, nil
	}
	if line[0] != '[' {
		valid := json.Valid(line)
		var m jsonrpc.Message
		if valid {
			m = decodeCommon(line)
		}
		if m == nil {
			var err error
			if m, err = jsonrpc.DecodeMessage(line); err != nil {
				return nil, c.decodeError(line, err)
			}
			if !valid {
				// The decoder stops after the first value: a line
				// holding two would lose the second without a word.
				return nil, &rpcError{code: jsonrpc.CodeParseError, err: errors.New("parse error: a line must hold exactly one JSON value")}
			}
		}
		if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() {
			c.inflightMu.Lock()
			c.startLocked(r.ID)
			c.inflightMu.Unlock()
		}
		return []jsonrpc.Message{m}, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(line, &raws); err != nil {
		return nil, &rpcError{code: jsonrpc.CodeParseError, err: fmt.Errorf("parse error: %v", err)}
	}
	if len(raws) == 0 {
		return nil, &rpcError{code: jsonrpc.CodeInvalidRequest, err: errors.New("empty batch")}
	}
	if v := c.protocolVersion(); v >= batchlessVersion {
		return nil, &rpcError{code: jsonrpc.CodeInvalidRequest, err: fmt.Errorf("JSON-RPC batches are not part of MCP %s (the session's protocol version); send one message per line", v)}
	}
	msgs := make([]jsonrpc.Message, 0, len(raws))
	b := &stdioBatch{index: map[jsonrpc.ID]int{}}
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	c.inflightMu.Lock()
	defer c.inflightMu.Unlock()
	for _, raw := range raws {
		m := decodeCommon(raw)
		var err error
		if m == nil {
			m, err = jsonrpc.DecodeMessage(raw)
		}
		if err != nil {
			// An element that is not a message is answered in the
			// batch's array, as JSON-RPC says; the others are served.
			b.responses = append(b.responses, errorResponse(c.decodeErrorLocked(raw, err)))
			continue
		}
		if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() {
			if _, taken := c.inflight[r.ID]; taken {
				// Not this request's id: it belongs to another.
				b.responses = append(b.responses, errorResponse(&rpcError{code: jsonrpc.CodeInvalidRequest, err: fmt.Errorf("request id %v is already in use", r.ID.Raw())}))
				continue
			}
			if r.Method == "initialize" {
				b.responses = append(b.responses, errorResponse(&rpcError{code: jsonrpc.CodeInvalidRequest, err: errors.New("initialize must not be part of a JSON-RPC batch"), id: r.ID}))
				continue
			}
			c.startLocked(r.ID)
			b.index[r.ID] = len(b.responses)
			b.responses = append(b.responses, nil)
		}
		msgs = append(msgs, m)
	}
	if b.pending = len(b.index); b.pending > 0 {
		if c.batches == nil {
			c.batches = map[jsonrpc.ID]*stdioBatch{}
		}
		for id := range b.index {
			c.batches[id] = b
		}
	} else if len(b.responses) > 0 {
		// Nothing in the batch awaits an answer: the errors go now.
		c.writeBatch(b.responses)
	}
	return msgs, nil
}

// errorResponse is the answer to a message that could not be served: with
// its id if it could be read, else with a null one, as JSON-RPC says.
func errorResponse(err error) *jsonrpc.Response {
	r := &jsonrpc.Response{Error: &jsonrpc.Error{Code: codeOf(err), Message: err.Error()}}
	if re, ok := err.(*rpcError); ok {
		r.ID = re.id
	}
	return r
}

// decodeError classifies a message that did not decode, and reads its id
// if it has one that no request in flight uses.
func (c *stdioConn) decodeError(raw []byte, err error) error {
	c.inflightMu.Lock()
	defer c.inflightMu.Unlock()
	return c.decodeErrorLocked(raw, err)
}

func (c *stdioConn) decodeErrorLocked(raw []byte, err error) error {
	if !json.Valid(raw) {
		return &rpcError{code: jsonrpc.CodeParseError, err: fmt.Errorf("parse error: %v", err)}
	}
	re := &rpcError{code: jsonrpc.CodeInvalidRequest, err: fmt.Errorf("invalid request: %v", err), id: readableID(raw)}
	if _, taken := c.inflight[re.id]; taken { // an unreadable id, ID{}, is never in flight
		re.err = fmt.Errorf("invalid request (its id %v belongs to a request still being served): %v", re.id.Raw(), err)
		re.id = jsonrpc.ID{}
	}
	return re
}

// startLocked records a request read; answered removes it.
func (c *stdioConn) startLocked(id jsonrpc.ID) {
	if c.inflight == nil {
		c.inflight = map[jsonrpc.ID]struct{}{}
	}
	c.inflight[id] = struct{}{}
}

func (c *stdioConn) answered(id jsonrpc.ID) {
	c.inflightMu.Lock()
	delete(c.inflight, id)
	if len(c.inflight) == 0 && c.drained != nil {
		close(c.drained)
		c.drained = nil
	}
	c.inflightMu.Unlock()
}

// drain waits until every request read has been answered, or the
// connection is closed (ServeStdio's shutdown, whose grace bounds the
// calls still running). A call's own deadline bounds how long it runs.
func (c *stdioConn) drain() {
	c.inflightMu.Lock()
	if len(c.inflight) == 0 {
		c.inflightMu.Unlock()
		return
	}
	if c.drained == nil {
		c.drained = make(chan struct{})
	}
	drained := c.drained
	c.inflightMu.Unlock()
	select {
	case <-drained:
	case <-c.closed:
	}
}

// readableID returns the id of a JSON object that is not a valid message,
// if it has a usable one: a string, or an integer a float64 holds exactly
// (what the SDK's IDs carry). Anything else is no id.
func readableID(raw []byte) jsonrpc.ID {
	var v struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(raw, &v) != nil || len(v.ID) == 0 {
		return jsonrpc.ID{}
	}
	var s string
	if json.Unmarshal(v.ID, &s) == nil {
		id, _ := jsonrpc.MakeID(s)
		return id
	}
	n, err := strconv.ParseInt(string(v.ID), 10, 64)
	if err != nil || n > 1<<53 || n < -(1<<53) {
		return jsonrpc.ID{}
	}
	id, _ := jsonrpc.MakeID(float64(n))
	return id
}

// refuse answers a line that was not a message.
func (c *stdioConn) refuse(err error) {
	r := errorResponse(err)
	if c.log != nil {
		c.log.Warn("stdio: refused a message", "code", codeOf(err), "error", err.Error(), "id", r.ID.Raw())
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	b, encErr := appendMessage(c.buf[:0], r)
	if encErr != nil {
		return
	}
	c.out.Write(append(b, '\n'))
}

// batchlessVersion is the first MCP protocol version without JSON-RPC
// batches.
const batchlessVersion = "2025-06-18"

// protocolVersion is the version the session's initialize agreed on, ""
// before.
func (c *stdioConn) protocolVersion() string {
	c.versionMu.Lock()
	defer c.versionMu.Unlock()
	return c.version
}

// noteVersion reads the protocol version out of the answer to initialize.
func (c *stdioConn) noteVersion(r *jsonrpc.Response) {
	c.versionMu.Lock()
	defer c.versionMu.Unlock()
	if !c.initID.IsValid() || r.ID != c.initID {
		return
	}
	c.initID = jsonrpc.ID{}
	if r.Error != nil {
		return
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(r.Result, &res) == nil {
		c.version = res.ProtocolVersion
	}
}

// Write writes one message on one line. A response to a request of a batch
// is held until the batch is complete.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if r, ok := msg.(*jsonrpc.Response); ok {
		if r.ID.IsValid() {
			c.answered(r.ID)
		}
		if coded := initializationError(r); coded != nil {
			msg, r = coded, coded
		}
		c.noteVersion(r)
		if batch, held := c.batched(r); held {
			if batch == nil {
				return nil
			}
			return c.writeBatch(batch)
		}
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	b, err := appendMessage(c.buf[:0], msg)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = c.out.Write(b)
	if cap(b) <= 1<<20 {
		c.buf = b // kept for the next message, unless large
	}
	return err
}

// initializationError gives the SDK's refusal of a request sent before
// initialize the code
// of an invalid request, -32600: the SDK sends it with code 0, which a
// client cannot tell from any other failure. Nil for any other response.
func initializationError(r *jsonrpc.Response) *jsonrpc.Response {
	if r.Error == nil {
		return nil
	}
	var coded *jsonrpc.Error
	if errors.As(r.Error, &coded) && coded.Code != 0 {
		return nil
	}
	msg := r.Error.Error()
	if !strings.HasSuffix(msg, "is invalid during session initialization") {
		return nil
	}
	return &jsonrpc.Response{ID: r.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: msg + " (send initialize first)"}}
}

// batched records r if it answers a request of a batch; the batch's
// responses are returned once r completes it.
func (c *stdioConn) batched(r *jsonrpc.Response) ([]*jsonrpc.Response, bool) {
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	b, ok := c.batches[r.ID]
	if !ok {
		return nil, false
	}
	delete(c.batches, r.ID)
	b.responses[b.index[r.ID]] = r
	if b.pending--; b.pending > 0 {
		return nil, true
	}
	return b.responses, true
}

func (c *stdioConn) writeBatch(rs []*jsonrpc.Response) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	b := append(c.buf[:0], '[')
	for i, r := range rs {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendMessage(b, r); err != nil {
			return err
		}
	}
	b = append(b, ']', '\n')
	_, err := c.out.Write(b)
	return err
}

// appendMessage appends msg's encoding. A successful response is its id and
// result, which the SDK marshalled just before, framed as is; anything else
// is encoded by the SDK.
func appendMessage(b []byte, msg jsonrpc.Message) ([]byte, error) {
	if r, ok := msg.(*jsonrpc.Response); ok && r.Error == nil && len(r.Result) > 0 && bytes.IndexByte(r.Result, '\n') < 0 {
		b = append(b, `{"jsonrpc":"2.0","id":`...)
		switch id := r.ID.Raw().(type) {
		case int64:
			b = strconv.AppendInt(b, id, 10)
		case string:
			q, err := json.Marshal(id)
			if err != nil {
				return b, err
			}
			b = append(b, q...)
		default:
			b = append(b, "null"...)
		}
		b = append(b, `,"result":`...)
		b = append(b, r.Result...)
		return append(b, '}'), nil
	}
	if r, ok := msg.(*jsonrpc.Response); ok && !r.ID.IsValid() && r.Error != nil {
		// The SDK leaves out an id it does not have; an error response
		// must name it null.
		we, ok := r.Error.(*jsonrpc.Error)
		if !ok {
			we = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: r.Error.Error()}
		}
		data, err := json.Marshal(struct {
			Version string         `json:"jsonrpc"`
			ID      *struct{}      `json:"id"`
			Error   *jsonrpc.Error `json:"error"`
		}{"2.0", nil, we})
		if err != nil {
			return b, fmt.Errorf("encoding message: %v", err)
		}
		return append(b, data...), nil
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return b, fmt.Errorf("encoding message: %v", err)
	}
	return append(b, data...), nil
}

// Close ends the connection; a Read waiting for input returns io.EOF.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		if c.direct != nil {
			c.direct.SetReadDeadline(time.Now())
		}
		c.closeErr = errors.Join(c.in.Close(), c.out.Close())
	})
	return c.closeErr
}
