// Package plugintest is the conformance suite every toolhost adapter runs,
// the way every io/fs implementation runs testing/fstest.TestFS.
//
// An adapter's test provides a [Harness] whose Load returns fixture tools
// loaded through the adapter under test (a wasm module, a plugin process, an
// MCP server), and calls [Run]. Run registers the fixtures in a fresh
// plugin.Host and checks them through Host.Invoke, so the adapter is
// exercised the way a host application meets it: behind the pipeline.
//
// # Fixtures
//
// The fixtures are a contract: other engineers implement them as wasm
// guests, subprocess plugins and MCP servers. Each fixture's descriptor
// comes from the tool itself. Its name must be the fixture name (or end in
// "/" + the fixture name, for namespaced sources), and its inputSchema must
// be a JSON Schema object describing the input below.
//
//	echo
//	    input  {"text": string}, "text" required
//	    result one text content equal to text, byte for byte (any Unicode,
//	           up to at least 64 KiB)
//
//	structured
//	    input  {"a": integer, "b": integer}, both required
//	    result structuredContent {"sum": a+b} (a text content with the same
//	           JSON may accompany it)
//	    outputSchema, declared in the descriptor:
//	           {"type":"object","properties":{"sum":{"type":"integer"}},"required":["sum"]}
//
//	fail
//	    input  {} (any object)
//	    result a tool-level error: IsError true (no Go error) and no code
//	           of its own (the host makes it TOOL_EXECUTION_FAILED), with a
//	           text content containing "boom"
//
//	sleep
//	    input  {"ms": integer ≥ 0}, "ms" required
//	    result sleeps ms milliseconds, then one text content (any text). When
//	           ctx is done first, it returns early with ctx's error (or an
//	           error result); it must not keep running.
//
//	big
//	    input  {"bytes": integer ≥ 0}, "bytes" required
//	    result one text content of exactly that many bytes: the pattern
//	           "0123456789" repeated and cut, so byte i is '0' + i%10
//
//	ask
//	    input  {} (any object)
//	    result without an answer for "confirm" in Request.Answers: a Result
//	           whose NeedsInput is {ID: "confirm", Type: "boolean", Text:
//	           a non-empty question}, IsError false; with Answers
//	           {"confirm": true}: one text content "confirmed"; with
//	           {"confirm": false}: one text content "cancelled"
//
//	crash
//	    input  {} (any object)
//	    result the backend dies abruptly: an in-process tool panics, a wasm
//	           guest traps (e.g. unreachable), a plugin process exits without
//	           answering. The adapter must turn this into an error
//	           (TOOL_EXECUTION_FAILED or TOOL_UNAVAILABLE) promptly (within
//	           the suite's 10 s call timeout), and the other fixtures must
//	           keep working afterwards.
//
// # What Run checks
//
// Descriptors (names, object input schemas, structured's outputSchema);
// echo round trips including non-ASCII and 64 KiB texts; structured output;
// fail's code and text; sleep past a 200ms timeout returning
// TOOL_EXECUTION_TIMEOUT within a bounded time, after which the host keeps
// serving; big over the 16 KiB preview being truncated with the full text
// kept as an artifact; the ask round trip; crash and recovery; 16
// concurrent echo calls each getting its own answer; cancellation by the
// caller.
//
// Run closes the tools it registered (Host.Close calls plugin.Closer) when
// the test ends; Load may register its own cleanups too, so Close must be
// safe to call after the backend is gone.
package plugintest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/plugin"
)

// Harness provides the fixture tools, loaded through the adapter under test.
type Harness struct {
	// Load returns the named fixture tool as the adapter under test loads
	// it. It may be called more than once for the same fixture (Run builds
	// more than one host); each call returns a tool ready to register. Load
	// reports its own failures with t.Fatal.
	Load func(t testing.TB, fixture string) plugin.Tool

	// Crashes reports whether "crash" kills the backend (process or
	// instance), so that Run checks recovery harder: crash is called
	// twice, and calls made while the backend restarts may fail with
	// TOOL_UNAVAILABLE for up to RecoveryTimeout before they must succeed.
	Crashes bool

	// RecoveryTimeout bounds how long a crashed backend may take to serve
	// again (default 10s). Only used when Crashes is set.
	RecoveryTimeout time.Duration
}

// Fixtures lists the fixture names every harness must provide.
func Fixtures() []string {
	return []string{"echo", "structured", "fail", "sleep", "big", "ask", "crash"}
}

// Bounds the suite holds adapters to. They are containment checks (a
// timeout or cancellation must not hang the caller), not performance tests,
// so they are generous.
const (
	sleepTimeout  = 200 * time.Millisecond
	returnBound   = 3 * time.Second // how late a timed-out or cancelled call may return
	callTimeout   = 10 * time.Second
	previewBytes  = 16 << 10
	echoPreview   = 1 << 20 // echo round trips 64 KiB without truncation
	concurrentN   = 16
	outputSchema  = `{"type":"object","properties":{"sum":{"type":"integer"}},"required":["sum"]}`
	bigTruncation = 100_000
)

// Run runs the conformance suite over the harness.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.Load == nil {
		t.Fatal("plugintest: Harness.Load is nil")
	}
	if h.RecoveryTimeout <= 0 {
		h.RecoveryTimeout = 10 * time.Second
	}
	s := &suite{h: h}
	s.host = s.newHost(t, nil)

	t.Run("Descriptors", s.testDescriptors)
	t.Run("Echo", s.testEcho)
	t.Run("Structured", s.testStructured)
	t.Run("Fail", s.testFail)
	t.Run("Sleep", s.testSleep)
	t.Run("Big", s.testBig)
	t.Run("Ask", s.testAsk)
	t.Run("Concurrent", s.testConcurrent)
	t.Run("Cancel", s.testCancel)
	// Crash last: whatever it breaks must not fail the checks above for
	// the wrong reason, and recovery is checked explicitly.
	t.Run("Crash", s.testCrash)
}

type suite struct {
	h     Harness
	host  *plugin.Host
	tools map[string]plugin.Tool // as loaded for s.host
}

// spec returns the policy a fixture runs under in the suite.
func spec(name string) plugin.Spec {
	sp := plugin.Spec{
		Name:   name,
		Source: plugin.Source{Kind: "plugintest"},
		Tier:   plugin.TierSideEffecting,
		Limits: plugin.Limits{Timeout: callTimeout, Preview: previewBytes},
	}
	switch name {
	case "echo":
		sp.Tier = plugin.TierReadOnly
		sp.Limits.Preview = echoPreview
	case "structured", "big":
		sp.Tier = plugin.TierReadOnly
	case "sleep":
		sp.Limits.Timeout = sleepTimeout
	}
	return sp
}

// newHost returns a host with every fixture registered; override may change
// a fixture's spec.
func (s *suite) newHost(t *testing.T, override func(*plugin.Spec)) *plugin.Host {
	t.Helper()
	host, err := plugin.NewHost(plugin.Options{})
	if err != nil {
		t.Fatalf("NewHost: %v", err)
	}
	t.Cleanup(func() {
		if err := host.Close(); err != nil {
			t.Errorf("Host.Close: %v", err)
		}
	})
	tools := map[string]plugin.Tool{}
	for _, name := range Fixtures() {
		tool := s.h.Load(t, name)
		if tool == nil {
			t.Fatalf("Harness.Load(%q) returned nil", name)
		}
		sp := spec(name)
		if override != nil {
			override(&sp)
		}
		if err := host.Register(sp, tool); err != nil {
			t.Fatalf("registering fixture %q: %v", name, err)
		}
		tools[name] = tool
	}
	if s.tools == nil {
		s.tools = tools
	}
	return host
}

// call invokes a tool with arguments given as a Go value.
func call(t *testing.T, host *plugin.Host, name string, args any) (*plugin.Result, error) {
	t.Helper()
	return callCtx(t, context.Background(), host, plugin.Call{Name: name, Arguments: mustJSON(t, args)})
}

func callCtx(t *testing.T, ctx context.Context, host *plugin.Host, c plugin.Call) (*plugin.Result, error) {
	t.Helper()
	res, err := host.Invoke(ctx, c)
	if res == nil {
		t.Fatalf("Invoke(%s) returned a nil Result (err %v)", c.Name, err)
	}
	if (err != nil) != res.IsError {
		t.Fatalf("Invoke(%s): err = %v but Result.IsError = %v", c.Name, err, res.IsError)
	}
	return res, err
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal arguments: %v", err)
	}
	return b
}

// wantText checks a successful result with exactly one text content.
func wantText(t *testing.T, res *plugin.Result, err error, want string) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	var texts []string
	for _, c := range res.Content {
		if c.Type == "text" {
			texts = append(texts, c.Text)
		}
	}
	if len(texts) != 1 {
		t.Fatalf("got %d text contents, want 1: %q", len(texts), texts)
	}
	if texts[0] != want {
		t.Fatalf("text = %s, want %s", abbrev(texts[0]), abbrev(want))
	}
}

func abbrev(s string) string {
	if len(s) <= 80 {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q...%q (%d bytes)", s[:40], s[len(s)-20:], len(s))
}

func wantCode(t *testing.T, res *plugin.Result, err error, codes ...plugin.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("got success %q, want an error with code %v", res.TextContent(), codes)
	}
	if !slices.Contains(codes, res.Code) {
		t.Fatalf("code = %s, want %v (error: %v)", res.Code, codes, err)
	}
	if got := plugin.CodeOf(err); got != res.Code {
		t.Fatalf("CodeOf(err) = %s, Result.Code = %s", got, res.Code)
	}
}

func (s *suite) testDescriptors(t *testing.T) {
	for _, name := range Fixtures() {
		t.Run(name, func(t *testing.T) {
			d := s.tools[name].Descriptor()
			if d.Name != name && !strings.HasSuffix(d.Name, "/"+name) {
				t.Errorf("descriptor name = %q, want %q", d.Name, name)
			}
			if !plugin.ValidToolName(d.Name) {
				t.Errorf("descriptor name %q is not a valid tool name", d.Name)
			}
			if len(d.InputSchema) == 0 {
				t.Fatal("descriptor has no inputSchema")
			}
			if _, err := plugin.CompileSchema(d.InputSchema); err != nil {
				t.Fatalf("inputSchema: %v", err)
			}
			var top struct {
				Type string `json:"type"`
			}
			if err := json.Unmarshal(d.InputSchema, &top); err != nil || top.Type != "object" {
				t.Errorf("inputSchema %s: want \"type\": \"object\"", d.InputSchema)
			}
			info, ok := s.host.Tool(name)
			if !ok {
				t.Fatalf("host does not list %q", name)
			}
			if !info.Available {
				t.Errorf("%q is listed unavailable: %s", name, info.Unavailable)
			}
		})
	}
	t.Run("structured/outputSchema", func(t *testing.T) {
		d := s.tools["structured"].Descriptor()
		if len(d.OutputSchema) == 0 {
			t.Fatalf("structured declares no outputSchema; want %s", outputSchema)
		}
		sch, err := plugin.CompileSchema(d.OutputSchema)
		if err != nil {
			t.Fatalf("outputSchema: %v", err)
		}
		for _, tc := range []struct {
			doc string
			ok  bool
		}{
			{`{"sum":3}`, true},
			{`{"sum":-3}`, true},
			{`{}`, false},
			{`{"sum":"3"}`, false},
			{`{"sum":1.5}`, false},
			{`[3]`, false},
		} {
			if err := sch.ValidateJSON([]byte(tc.doc)); (err == nil) != tc.ok {
				t.Errorf("outputSchema validating %s: err = %v, want ok = %v (schema %s, want %s)", tc.doc, err, tc.ok, d.OutputSchema, outputSchema)
			}
		}
	})
}

func (s *suite) testEcho(t *testing.T) {
	for _, tc := range []struct {
		name, text string
	}{
		{"ascii", "hello, world"},
		{"empty", ""},
		{"non-ascii", "héllo wörld — 世界 🌍 \u0000 \"quoted\" \\ \n\ttabbed"},
		{"json-looking", `{"text":"not parsed"}`},
		{"64KiB", strings.Repeat("αβγ-δ", 64<<10/len("αβγ-δ"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := call(t, s.host, "echo", map[string]string{"text": tc.text})
			wantText(t, res, err, tc.text)
			if res.Truncated != nil {
				t.Errorf("echo of %d bytes was truncated: %+v", len(tc.text), res.Truncated)
			}
		})
	}
	t.Run("missing text", func(t *testing.T) {
		res, err := call(t, s.host, "echo", map[string]any{})
		wantCode(t, res, err, plugin.CodeInvalidRequest)
		if !strings.Contains(err.Error(), `missing required field "text"`) {
			t.Errorf("error %q does not name the missing field", err)
		}
	})
	t.Run("text not a string", func(t *testing.T) {
		res, err := call(t, s.host, "echo", map[string]any{"text": 42})
		wantCode(t, res, err, plugin.CodeInvalidRequest)
	})
}

func (s *suite) testStructured(t *testing.T) {
	for _, tc := range []struct {
		a, b, sum int64
	}{
		{2, 3, 5},
		{-7, 3, -4},
		{0, 0, 0},
		{1 << 40, 1 << 40, 1 << 41},
	} {
		t.Run(fmt.Sprintf("%d+%d", tc.a, tc.b), func(t *testing.T) {
			res, err := call(t, s.host, "structured", map[string]int64{"a": tc.a, "b": tc.b})
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if len(res.StructuredContent) == 0 {
				t.Fatalf("no structuredContent; content %q", res.TextContent())
			}
			var got struct {
				Sum *json.Number `json:"sum"`
			}
			dec := json.NewDecoder(strings.NewReader(string(res.StructuredContent)))
			dec.UseNumber()
			if err := dec.Decode(&got); err != nil || got.Sum == nil {
				t.Fatalf("structuredContent %s: want {\"sum\": %d} (%v)", res.StructuredContent, tc.sum, err)
			}
			if n, err := got.Sum.Int64(); err != nil || n != tc.sum {
				t.Fatalf("sum = %s, want %d", got.Sum, tc.sum)
			}
		})
	}
}

func (s *suite) testFail(t *testing.T) {
	res, err := call(t, s.host, "fail", map[string]any{})
	wantCode(t, res, err, plugin.CodeToolExecutionFailed)
	if !errors.Is(err, plugin.ErrToolExecutionFailed) {
		t.Errorf("errors.Is(err, ErrToolExecutionFailed) = false for %v", err)
	}
	if !strings.Contains(res.TextContent(), "boom") {
		t.Errorf("error text %q does not contain \"boom\"", res.TextContent())
	}
}

func (s *suite) testSleep(t *testing.T) {
	t.Run("within timeout", func(t *testing.T) {
		res, err := call(t, s.host, "sleep", map[string]int{"ms": 1})
		if err != nil {
			t.Fatalf("sleep 1ms: %v (%q)", err, res.TextContent())
		}
	})
	t.Run("past timeout", func(t *testing.T) {
		start := time.Now()
		res, err := call(t, s.host, "sleep", map[string]int{"ms": 60_000})
		elapsed := time.Since(start)
		wantCode(t, res, err, plugin.CodeToolExecutionTimeout)
		if !errors.Is(err, plugin.ErrToolExecutionTimeout) {
			t.Errorf("errors.Is(err, ErrToolExecutionTimeout) = false for %v", err)
		}
		if elapsed > sleepTimeout+returnBound {
			t.Errorf("a call with a %s timeout returned after %s", sleepTimeout, elapsed)
		}
	})
	t.Run("host keeps serving", func(t *testing.T) {
		res, err := call(t, s.host, "echo", map[string]string{"text": "after timeout"})
		wantText(t, res, err, "after timeout")
		res, err = call(t, s.host, "sleep", map[string]int{"ms": 1})
		if err != nil {
			t.Fatalf("sleep after a timeout: %v (%q)", err, res.TextContent())
		}
	})
}

func bigPattern(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = '0' + byte(i%10)
	}
	return string(b)
}

func (s *suite) testBig(t *testing.T) {
	for _, n := range []int{0, 1, 25, previewBytes} {
		t.Run(fmt.Sprintf("%d bytes", n), func(t *testing.T) {
			res, err := call(t, s.host, "big", map[string]int{"bytes": n})
			if n == 0 {
				// An empty text may travel as no content at all.
				if err != nil || res.TextContent() != "" {
					t.Fatalf("big 0: err %v, text %q", err, res.TextContent())
				}
				return
			}
			wantText(t, res, err, bigPattern(n))
			if res.Truncated != nil {
				t.Errorf("%d bytes (preview %d) were truncated", n, previewBytes)
			}
		})
	}
	t.Run("over preview", func(t *testing.T) {
		res, err := call(t, s.host, "big", map[string]int{"bytes": bigTruncation})
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		tr := res.Truncated
		if tr == nil {
			t.Fatalf("%d bytes over a %d preview were not truncated", bigTruncation, previewBytes)
		}
		text := res.TextContent()
		if len(text) > previewBytes {
			t.Errorf("preview is %d bytes, over %d", len(text), previewBytes)
		}
		if tr.OriginalBytes != bigTruncation || tr.ShownBytes != len(text) {
			t.Errorf("Truncated = %+v, want OriginalBytes %d, ShownBytes %d", tr, bigTruncation, len(text))
		}
		marker := fmt.Sprintf("[... truncated %d bytes ...]", tr.OmittedBytes)
		if !strings.Contains(text, marker) {
			t.Errorf("preview lacks the marker %q", marker)
		}
		full := bigPattern(bigTruncation)
		if !strings.HasPrefix(full, text[:strings.Index(text, "\n[... truncated")]) {
			t.Error("preview head is not the start of the output")
		}
		if tr.ArtifactID == "" {
			t.Fatal("no artifact ID for the full output")
		}
		_, rc, err := s.host.Artifact(context.Background(), tr.ArtifactID)
		if err != nil {
			t.Fatalf("Artifact(%q): %v", tr.ArtifactID, err)
		}
		defer rc.Close()
		got, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != full {
			t.Errorf("artifact is %s, want the full %d-byte pattern", abbrev(string(got)), bigTruncation)
		}
	})
}

func (s *suite) testAsk(t *testing.T) {
	res, err := call(t, s.host, "ask", map[string]any{})
	if err != nil {
		t.Fatalf("ask without answers: %v", err)
	}
	q := res.NeedsInput
	if q == nil {
		t.Fatalf("ask without answers returned no question: %q", res.TextContent())
	}
	if q.ID != "confirm" || q.Type != plugin.AnswerBoolean || q.Text == "" {
		t.Errorf("question = %+v, want ID \"confirm\", Type \"boolean\", a text", q)
	}
	if res.TextContent() == "" {
		t.Error("a question result has no text for the model")
	}
	for _, tc := range []struct {
		answer bool
		want   string
	}{{true, "confirmed"}, {false, "cancelled"}} {
		t.Run(fmt.Sprint(tc.answer), func(t *testing.T) {
			res, err := callCtx(t, context.Background(), s.host, plugin.Call{
				Name:      "ask",
				Arguments: json.RawMessage(`{}`),
				Answers:   map[string]json.RawMessage{q.ID: mustJSON(t, tc.answer)},
			})
			if res.NeedsInput != nil {
				t.Fatalf("answered ask asked again: %+v", res.NeedsInput)
			}
			wantText(t, res, err, tc.want)
		})
	}
}

func (s *suite) testConcurrent(t *testing.T) {
	t.Run("goroutines", func(t *testing.T) {
		start := make(chan struct{})
		var wg sync.WaitGroup
		errs := make([]error, concurrentN)
		for i := range concurrentN {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				text := fmt.Sprintf("caller %d says %s", i, strings.Repeat(string(rune('a'+i)), 100*i))
				res, err := s.host.Invoke(context.Background(), plugin.Call{Name: "echo", Arguments: mustJSON(t, map[string]string{"text": text})})
				switch {
				case err != nil:
					errs[i] = err
				case res.TextContent() != text:
					errs[i] = fmt.Errorf("got %s, want %s", abbrev(res.TextContent()), abbrev(text))
				}
			}()
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			}
		}
	})
	t.Run("batch", func(t *testing.T) {
		calls := make([]plugin.Call, concurrentN)
		for i := range calls {
			calls[i] = plugin.Call{Name: "echo", Arguments: mustJSON(t, map[string]string{"text": fmt.Sprintf("batch item %d ✓", i)})}
		}
		for i, o := range s.host.InvokeBatch(context.Background(), calls) {
			if o.Err != nil {
				t.Errorf("item %d: %v", i, o.Err)
				continue
			}
			if want := fmt.Sprintf("batch item %d ✓", i); o.Result.TextContent() != want {
				t.Errorf("item %d: got %q, want %q", i, o.Result.TextContent(), want)
			}
		}
	})
}

// startSignal wraps a tool to report when a call has reached it, so the
// cancellation test cancels a call in flight without guessing with sleeps.
type startSignal struct {
	plugin.Tool
	once    sync.Once
	started chan struct{}
}

func (s *startSignal) Call(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
	s.once.Do(func() { close(s.started) })
	return s.Tool.Call(ctx, req)
}

func (s *startSignal) Close() error {
	if c, ok := s.Tool.(plugin.Closer); ok {
		return c.Close()
	}
	return nil
}

func (s *suite) testCancel(t *testing.T) {
	host, err := plugin.NewHost(plugin.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close() })
	sleep := &startSignal{Tool: s.h.Load(t, "sleep"), started: make(chan struct{})}
	echo := s.h.Load(t, "echo")
	sp := spec("sleep")
	sp.Limits.Timeout = callTimeout
	if err := host.Register(sp, sleep); err != nil {
		t.Fatal(err)
	}
	if err := host.Register(spec("echo"), echo); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type outcome struct {
		res *plugin.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := host.Invoke(ctx, plugin.Call{Name: "sleep", Arguments: json.RawMessage(`{"ms":60000}`)})
		done <- outcome{res, err}
	}()
	select {
	case <-sleep.started:
	case o := <-done:
		t.Fatalf("sleep returned before it was cancelled: %v", o.err)
	case <-time.After(callTimeout):
		t.Fatal("sleep was never called")
	}
	cancelled := time.Now()
	cancel()
	select {
	case o := <-done:
		if o.res == nil || o.err == nil || !o.res.IsError {
			t.Fatalf("cancelled call: result %+v, err %v; want an error result", o.res, o.err)
		}
		if o.res.Code == plugin.CodeToolExecutionTimeout {
			t.Errorf("a call cancelled by its caller reports %s", o.res.Code)
		}
		if !errors.Is(o.err, context.Canceled) {
			t.Errorf("errors.Is(err, context.Canceled) = false for %v", o.err)
		}
	case <-time.After(returnBound):
		t.Fatalf("a cancelled call had not returned %s after cancellation", time.Since(cancelled))
	}
	res, err := call(t, host, "echo", map[string]string{"text": "after cancel"})
	wantText(t, res, err, "after cancel")
	res, err = call(t, host, "sleep", map[string]int{"ms": 1})
	if err != nil {
		t.Fatalf("sleep after a cancelled sleep: %v (%q)", err, res.TextContent())
	}
}

func (s *suite) testCrash(t *testing.T) {
	rounds := 1
	if s.h.Crashes {
		rounds = 2
	}
	for round := range rounds {
		start := time.Now()
		res, err := s.callRecovering(t, "crash", `{}`)
		wantCode(t, res, err, plugin.CodeToolExecutionFailed, plugin.CodeToolUnavailable)
		if elapsed := time.Since(start); elapsed > callTimeout {
			t.Errorf("round %d: crash took %s to report", round, elapsed)
		}
		for _, text := range []string{"still here", "还在 ✓"} {
			res, err := s.callRecovering(t, "echo", string(mustJSON(t, map[string]string{"text": text})))
			wantText(t, res, err, text)
		}
		res, err = s.callRecovering(t, "structured", `{"a":20,"b":22}`)
		if err != nil {
			t.Fatalf("structured after crash: %v", err)
		}
	}
}

// callRecovering calls a tool; when the harness crashes its backend, a
// TOOL_UNAVAILABLE answer is retried until RecoveryTimeout, since a
// restarting backend may legitimately be unavailable for a while.
func (s *suite) callRecovering(t *testing.T, name, args string) (*plugin.Result, error) {
	t.Helper()
	deadline := time.Now().Add(s.h.RecoveryTimeout)
	for {
		res, err := callCtx(t, context.Background(), s.host, plugin.Call{Name: name, Arguments: json.RawMessage(args)})
		if !s.h.Crashes || name == "crash" || res.Code != plugin.CodeToolUnavailable || time.Now().After(deadline) {
			return res, err
		}
		// Polling is the only way to observe an external backend restart.
		time.Sleep(50 * time.Millisecond)
	}
}
