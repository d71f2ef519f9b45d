package extism

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/toolhost/toolhost/extism/internal/callproto"
	"github.com/toolhost/toolhost/extism/internal/fuel"
	"github.com/toolhost/toolhost/internal/compilehook"
	"github.com/toolhost/toolhost/internal/netguard"
	"github.com/toolhost/toolhost/plugin"
)

type mode int

const (
	modeTools mode = iota // list_tools / call_tool
	modeRaw               // one plain export
)

// fastIOKey is the Extism config key that tells a guest it may read its
// input from stdin and write its output to stdout (docs/wasm.md).
const fastIOKey = "toolhost.fast_io"

// fastIOExport is exported by guests that take an empty Extism input to
// mean "the input is on stdin, write the output to stdout" (shared/guest
// does). Detecting it costs the guest one host call per call, where reading
// fastIOKey costs about ten.
const fastIOExport = "toolhost_fast_io_v1"

// wasmTool is one tool of one wasm plugin.
type wasmTool struct {
	a      *Adapter
	spec   *plugin.Spec
	mode   mode
	info   *moduleInfo
	fastIO bool // the guest exports fastIOExport
	where  string
	key    string // artifact hash + transforms
	limits plugin.Limits
	log    hclog.Logger

	transport *http.Transport

	code     []byte        // module bytes to compile; released after compiling
	start    sync.Once     // starts compile, or (Close) marks it never needed
	done     chan struct{} // closed when compile has finished or will never run
	compiled *extism.CompiledPlugin
	compErr  error
	snap     snapState // snapshot.go

	desc plugin.Descriptor
	// inputHead starts every call_tool input without answers:
	// {"params":{"name":"…","arguments":
	inputHead []byte

	pool    *instPool      // nil: no pool
	retired chan *instance // used instances waiting to be closed
	live    atomic.Int64   // instances not yet closed
	kick    chan struct{}
	// soon kicks the refill refillDelay after a call (refillSoon); armed
	// while it is pending.
	soon     *time.Timer
	armed    atomic.Bool
	quit     chan struct{}
	wg       sync.WaitGroup // the refill goroutine
	running  sync.WaitGroup // guest calls executing
	closeOne sync.Once
}

var (
	_ plugin.Tool   = (*wasmTool)(nil)
	_ plugin.Closer = (*wasmTool)(nil)
)

func newTool(a *Adapter, spec *plugin.Spec, m mode, info *moduleInfo, code []byte, key, where string) *wasmTool {
	lim := spec.Limits.WithDefaults(plugin.DefaultLimits())
	t := &wasmTool{
		a: a, spec: spec, mode: m, info: info, code: code, key: key, where: where,
		fastIO:  info.hasFunc(fastIOExport),
		limits:  lim,
		log:     a.log.Named(spec.Name),
		done:    make(chan struct{}),
		kick:    make(chan struct{}, 1),
		retired: make(chan *instance, 8),
		quit:    make(chan struct{}),
	}
	t.transport = netguard.NewTransport()
	t.inputHead = callproto.Head(guestToolName(spec))
	if lim.Pool > 0 {
		t.pool = newInstPool(lim.Pool)
		t.soon = time.AfterFunc(time.Hour, func() {
			t.armed.Store(false)
			t.refillLater()
		})
		t.soon.Stop()
	}
	t.desc = plugin.Descriptor{
		Name:         spec.Name,
		Description:  spec.Description,
		InputSchema:  spec.InputSchema,
		OutputSchema: spec.OutputSchema,
	}
	return t
}

// direct reports whether the tool's calls use the direct call (direct.go).
func (t *wasmTool) direct() bool { return t.fastIO && t.mode == modeTools }

// guestName is the tool's name inside a list_tools plugin.
func (t *wasmTool) guestName() string { return guestToolName(t.spec) }

// guestToolName is the name inside its plugin of the tool spec describes:
// Source.Tool, or else the tool's own name.
func guestToolName(spec *plugin.Spec) string {
	if spec.Source.Tool != "" {
		return spec.Source.Tool
	}
	return spec.Name
}

// compile runs once, in the background, from Load.
func (t *wasmTool) compile() {
	defer close(t.done)
	start := time.Now()
	if f := t.a.onCompile; f != nil {
		ev := CompileEvent{Tool: t.spec.Name, Cached: t.a.compiledBefore(t.key)}
		f(ev)
		defer func() {
			ev.Done, ev.Duration, ev.Err = true, time.Since(start), t.compErr
			f(ev)
		}()
	}
	code, err := t.a.transform(t.code, t.info, t.key, t.preinit())
	if err != nil {
		t.code = nil
		t.compErr = plugin.Errorf(plugin.CodeToolUnavailable, "%s: %v", t.where, err)
		t.log.Error("transforming the module failed", "error", err)
		return
	}
	t.code = code
	t.noteSnapshot(code)
	cfg := map[string]string{}
	for k, v := range t.spec.Source.Config {
		cfg[k] = v
	}
	cfg[fastIOKey] = "stdio"
	manifest := extism.Manifest{
		Wasm:         []extism.Wasm{extism.WasmData{Data: t.code, Name: "main"}},
		Config:       cfg,
		AllowedHosts: nil, // go-sdk's own http_request is never reached: modules importing it are routed to toolhost's (extismhttp.go)
		Memory: &extism.ManifestMemory{
			MaxVarBytes:          t.limits.VarSize,
			MaxHttpResponseBytes: 0,
		},
	}
	// Metered code stops itself at its deadline (the meter's refills
	// check the call's context); wazero's close-on-deadline would add a
	// check to every loop iteration (loops run ~40x slower) and, unlike the
	// refills, would not bring the guest back to a Go safe point.
	rc := wazero.NewRuntimeConfig().WithCompilationCache(t.a.cache)
	funcs := append(hostFunctions(), fuel.HostFunctions()...)
	ctx := context.Background()
	listen := ""
	if t.direct() {
		ctx = experimental.WithFunctionListenerFactory(ctx, directListener{})
		listen = fastIOExport
	}
	unlock := t.a.compileLock(t.code)
	compilehook.Before(t.code, t.a.cacheDir, listen) // tests under -race only
	c, err := extism.NewCompiledPlugin(ctx, manifest, extism.PluginConfig{
		RuntimeConfig: rc,
		EnableWasi:    true,
	}, funcs)
	unlock()
	t.code = nil
	if err != nil {
		t.compErr = plugin.Errorf(plugin.CodeToolUnavailable, "%s: compiling: %v", t.where, err)
		t.log.Error("compile failed", "error", err)
		return
	}
	t.compiled = c
	t.log.Debug("compiled", "duration", time.Since(start), "key", t.key)
	if t.pool != nil {
		t.wg.Add(1)
		go t.refill()
	}
}

// ready starts the compilation if needed and waits for it.
func (t *wasmTool) ready(ctx context.Context) error {
	t.start.Do(func() { go t.compile() })
	select {
	case <-t.done:
		return t.compErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// refill keeps the pool full until the tool closes.
//
// The pool starts filling on first use (the first call, or Adapter.Ready),
// not when compilation ends: a one-shot host (host call) would only build
// instances it never uses, competing with its one call.
func (t *wasmTool) refill() {
	defer t.wg.Done()
	background() // after the calls and their clients (background_linux.go)
	backoff := 10 * time.Millisecond
	for {
		select {
		case <-t.kick:
		case <-t.quit:
			return
		}
		for {
			// Used instances are closed first, and again before each new
			// one is made, so that their memories go back to the
			// adapter's pool before new ones are taken from it.
			t.closeRetired()
			if t.pool.full() {
				break
			}
			ctx, cancel := context.WithTimeout(context.Background(), t.limits.Timeout)
			inst, err := t.newInstance(ctx, t.spec)
			if err == nil && t.direct() {
				inst.prepareDirect(ctx)
			}
			cancel()
			if err != nil {
				t.log.Warn("pre-instantiating", "error", err)
				select {
				case <-time.After(backoff):
				case <-t.quit:
					return
				}
				backoff = min(2*backoff, 5*time.Second)
				continue
			}
			backoff = 10 * time.Millisecond
			if !t.pool.push(inst) {
				inst.close() // closed meanwhile
				return
			}
		}
	}
}

// take returns a fresh instance: from the pool if one is ready, else built
// now. Pooled instances carry the Load spec's mounts; a call whose spec
// mounts something else gets an instance built for it.
func (t *wasmTool) take(ctx context.Context, spec *plugin.Spec) (*instance, error) {
	if spec != t.spec && !slices.Equal(spec.Capabilities.Mounts, t.spec.Capabilities.Mounts) {
		return t.newInstance(ctx, spec)
	}
	if t.pool != nil {
		if inst := t.pool.pop(); inst != nil {
			return inst, nil
		}
		t.refillLater()
		// The refill lags (a burst, or a busy machine). Close the used
		// instances before making this one, as the refill does: a
		// recycled memory spares the new instance a page fault for every
		// page of its memory image, more than the closing costs.
		t.closeRetired()
	}
	return t.newInstance(ctx, t.spec)
}

// retire disposes of a used instance. Closing one (freeing its memory,
// removing its /tmp) takes a few hundred microseconds, so it is left to the
// background goroutine when there is one; the instance is never used again
// either way.
func (t *wasmTool) retire(inst *instance) {
	inst.stopBatch() // the call is over: no file is read for it after this
	if t.pool != nil {
		select {
		case <-t.quit:
		case t.retired <- inst:
			return
		default:
		}
	}
	inst.close()
}

func (t *wasmTool) closeRetired() {
	for {
		select {
		case inst := <-t.retired:
			inst.close()
		default:
			return
		}
	}
}

// refillDelay is how long after a call the pool starts refilling: long
// enough for the call's answer to reach its client. Kicked at once, the
// refill (several hundred microseconds of CPU at nice 19) ran while the
// host wrote the answer and the client woke to read it; over MCP on two
// CPUs a paced listing took 1,000-1,071 us at p50 with the immediate kick
// and 856-927 us with this delay (two runs each, alternating builds).
// A call that finds the pool empty still kicks it at once (take).
const refillDelay = 2 * time.Millisecond

// refillSoon asks the pool to refill refillDelay from now, unless that is
// already asked.
func (t *wasmTool) refillSoon() {
	if t.pool == nil || !t.armed.CompareAndSwap(false, true) {
		return
	}
	t.soon.Reset(refillDelay)
}

// refillLater asks the pool to refill now.
func (t *wasmTool) refillLater() {
	if t.pool == nil {
		return
	}
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// describe fills in the descriptor. A list_tools plugin is asked for it
// unless the Spec supplies the input schema.
func (t *wasmTool) describe(ctx context.Context) error {
	if t.mode == modeRaw || len(t.spec.InputSchema) > 0 {
		if len(t.desc.InputSchema) == 0 {
			return plugin.Errorf(plugin.CodeToolUnavailable, "tool %s has no input schema", t.spec.Name)
		}
		return nil
	}
	out, err := t.a.listTools(ctx, t)
	if err != nil {
		return fmt.Errorf("list_tools: %w", err)
	}
	var lt callproto.ListOutput
	if err := json.Unmarshal(out, &lt); err != nil {
		return plugin.Errorf(plugin.CodeOutputInvalid, "%s: list_tools output is not {\"tools\": [...]}: %v", t.where, err)
	}
	var names []string
	for _, d := range lt.Tools {
		names = append(names, d.Name)
		if d.Name != t.guestName() {
			continue
		}
		if len(d.InputSchema) == 0 {
			return plugin.Errorf(plugin.CodeOutputInvalid, "%s: tool %q has no inputSchema", t.where, d.Name)
		}
		if t.desc.Description == "" {
			t.desc.Description = d.Description
		}
		t.desc.Title = d.Title
		t.desc.InputSchema = d.InputSchema
		if len(t.desc.OutputSchema) == 0 {
			t.desc.OutputSchema = d.OutputSchema
		}
		t.desc.Annotations = d.Annotations
		return nil
	}
	return plugin.Errorf(plugin.CodeToolNotFound, "%s: plugin offers no tool %q (it offers %s)", t.where, t.guestName(), strings.Join(names, ", "))
}

// Descriptor implements plugin.Tool.
func (t *wasmTool) Descriptor() plugin.Descriptor { return t.desc }

// Call implements plugin.Tool: one call, one fresh instance.
func (t *wasmTool) Call(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
	// The pool is refilled after the call, once its answer is out
	// (refillDelay), so that the work competes neither with the call nor
	// with delivering its result.
	defer t.refillSoon()
	if err := t.ready(ctx); err != nil {
		return nil, t.wrap(ctx, err)
	}
	var export string
	var input []byte
	args := req.Arguments
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	if t.mode == modeRaw {
		export, input = t.spec.Source.Export, args
	} else {
		export = exportCallTool
		b, err := t.callToolInput(args, req.Answers)
		if err != nil {
			return nil, plugin.Errorf(plugin.CodeInvalidRequest, "arguments: %v", err)
		}
		input = b
	}
	out, fromStdout, used, err := t.run(ctx, req, export, input)
	if err != nil {
		var ge *guestError
		if errors.As(err, &ge) {
			return &plugin.Result{IsError: true, Code: plugin.CodeToolExecutionFailed, Content: []plugin.Content{plugin.Text(req.Secrets.Redact(ge.msg))}}, nil
		}
		return nil, t.wrap(ctx, err)
	}
	var meta *plugin.Meta
	if used > 0 {
		meta = &plugin.Meta{Fuel: used}
	}
	if t.mode == modeRaw {
		out = req.Secrets.RedactBytes(out)
		res := &plugin.Result{Content: []plugin.Content{plugin.Text(string(out))}, Meta: meta}
		if len(t.desc.OutputSchema) > 0 {
			if !json.Valid(out) || len(out) == 0 || out[0] != '{' {
				return nil, &plugin.Error{Code: plugin.CodeOutputInvalid, Tool: t.spec.Name,
					Message: fmt.Sprintf("export %s declared an output schema but returned %s", export, describeBytes(out))}
			}
			res.StructuredContent = json.RawMessage(out)
		}
		return res, nil
	}
	var tail []byte
	if fromStdout {
		out, tail = callproto.Split(out)
	}
	res, err := callproto.Decode(out, tail)
	if err != nil {
		return nil, &plugin.Error{Code: plugin.CodeOutputInvalid, Tool: t.spec.Name, Message: err.Error()}
	}
	res.Meta = meta
	// Secrets are redacted after decoding, so that the fast path's raw
	// offsets stay valid.
	for i := range res.Content {
		res.Content[i].Text = req.Secrets.Redact(res.Content[i].Text)
	}
	res.StructuredContent = req.Secrets.RedactBytes(res.StructuredContent)
	if res.IsError && res.Code == "" {
		res.Code = plugin.CodeToolExecutionFailed
	}
	return res, nil
}

// callToolInput encodes call_tool's input.
func (t *wasmTool) callToolInput(args json.RawMessage, answers map[string]json.RawMessage) ([]byte, error) {
	return callproto.Encode(t.inputHead, t.guestName(), args, answers)
}

func describeBytes(b []byte) string {
	if len(b) == 0 {
		return "nothing"
	}
	if len(b) > 64 {
		return fmt.Sprintf("%d bytes that are not a JSON object (%q…)", len(b), b[:64])
	}
	return fmt.Sprintf("%q, which is not a JSON object", b)
}

// wrap gives err the tool's name and the right code.
func (t *wasmTool) wrap(ctx context.Context, err error) error {
	var pe *plugin.Error
	if errors.As(err, &pe) {
		if pe.Tool == "" {
			c := *pe
			c.Tool = t.spec.Name
			return &c
		}
		return pe
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &plugin.Error{Code: plugin.CodeToolExecutionTimeout, Tool: t.spec.Name, Message: err.Error(), Err: err}
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return &plugin.Error{Code: plugin.CodeToolExecutionFailed, Tool: t.spec.Name, Message: err.Error(), Err: err}
}

// guestError is an error the guest reported itself (Extism error_set); the
// call completed and the tool is fine.
type guestError struct{ msg string }

func (e *guestError) Error() string { return e.msg }

// callResult is what a guest call returned.
type callResult struct {
	rc  uint32
	out []byte
	err error
}

// run calls export in a fresh instance and returns its output, whether it
// came from stdout (the fast path), and the fuel it used. req is nil for the
// host's own calls (list_tools).
func (t *wasmTool) run(ctx context.Context, req *plugin.Request, export string, input []byte) ([]byte, bool, uint64, error) {
	if req == nil {
		req = &plugin.Request{Name: t.spec.Name, Spec: t.spec, Secrets: plugin.NewSecrets(nil), Log: t.log}
	}
	if req.Secrets == nil {
		r := *req
		r.Secrets = plugin.NewSecrets(nil)
		req = &r
	}
	spec := req.Spec
	if spec == nil {
		spec = t.spec
	}
	limits := spec.Limits.WithDefaults(plugin.DefaultLimits())
	inst, err := t.take(ctx, spec)
	if err != nil {
		var pe *plugin.Error
		if errors.As(err, &pe) {
			return nil, false, 0, err
		}
		return nil, false, 0, plugin.Errorf(plugin.CodeToolUnavailable, "%v", err)
	}
	cctx, cancel := context.WithTimeout(ctx, limits.Timeout)
	defer cancel()
	inst.begin(cctx, req, spec, limits, cancel)
	inst.stdin.Reset(input)
	pdkInput := input
	if t.fastIO && t.mode == modeTools {
		// The guest takes an empty Extism input to mean "read stdin"
		// (docs/wasm.md): moving the input through Extism memory is slow.
		pdkInput = nil
	}
	// The guest runs on this goroutine and stops by itself: its meter
	// checks the deadline every slice of fuel, and host functions (sleeps,
	// HTTP) end at it. Without a fuel limit the budget is unbounded but
	// the guest is metered all the same.
	budget := int64(math.MaxInt64)
	if t.a.fuel {
		budget = int64(min(limits.Fuel, math.MaxInt64))
	}
	meter := fuel.NewMeter(budget)
	meter.Share(t.a.lanes)
	inst.meter = meter
	gctx := fuel.WithMeter(context.WithValue(cctx, instKey{}, inst), meter)
	var r callResult
	t.running.Add(1)
	r.rc, r.out, r.err = inst.call(gctx, export, pdkInput)
	t.running.Done()
	meter.Release()
	defer t.retire(inst)
	var used uint64
	if t.a.fuel && meter.Used() > 0 {
		used = uint64(meter.Used())
	}
	out, fromStdout, err := t.outcome(ctx, cctx, inst, req, limits, meter, export, r)
	return out, fromStdout, used, err
}

// outcome turns what a guest call returned into output (and whether it came
// from stdout) or an error.
func (t *wasmTool) outcome(ctx, cctx context.Context, inst *instance, req *plugin.Request, limits plugin.Limits, meter *fuel.Meter, export string, r callResult) ([]byte, bool, error) {
	rc, out, err := r.rc, r.out, r.err
	if ae := inst.aborted(); ae != nil {
		return nil, false, ae
	}
	if inst.mem.Hit() {
		return nil, false, plugin.LimitError("memory", "the tool needed more than its %s memory limit", plugin.FormatSize(limits.Memory))
	}
	if err != nil {
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, false, ctx.Err()
		}
		if errors.Is(err, fuel.ErrExhausted) || meter.Exhausted() {
			return nil, false, plugin.LimitError("fuel", "the tool ran out of fuel (%d instructions)", meter.Budget())
		}
		var exit *sys.ExitError
		if cctx.Err() != nil || (errors.As(err, &exit) && exit.ExitCode() == sys.ExitCodeDeadlineExceeded) {
			return nil, false, plugin.Errorf(plugin.CodeToolExecutionTimeout, "the tool did not finish within %s", limits.Timeout)
		}
		msg := err.Error()
		switch {
		case strings.Contains(msg, "Variable store is full"):
			return nil, false, plugin.LimitError("var_size", "the tool's variables exceed the %s limit", plugin.FormatSize(limits.VarSize))
		case errors.As(err, &exit):
			return nil, false, plugin.Errorf(plugin.CodeToolExecutionFailed, "the tool exited with code %d%s", exit.ExitCode(), inst.stderr.tail())
		case strings.Contains(msg, "wasm error") || strings.Contains(msg, "wasm stack trace") || strings.Contains(msg, "recovered by wazero"):
			return nil, false, plugin.Errorf(plugin.CodeToolExecutionFailed, "the tool crashed: %s%s", req.Secrets.Redact(firstLine(msg)), inst.stderr.tail())
		case strings.HasPrefix(msg, "unknown function"), strings.HasPrefix(msg, "module is closed"):
			return nil, false, plugin.Errorf(plugin.CodeToolExecutionFailed, "%s", msg)
		}
		return nil, false, &guestError{msg: msg}
	}
	if rc != 0 {
		return nil, false, &guestError{msg: fmt.Sprintf("%s returned status %d%s", export, rc, inst.stderr.tail())}
	}
	fromStdout := false
	if len(out) == 0 && inst.stdout.buf.Len() > 0 {
		out, fromStdout = inst.stdout.buf.Bytes(), true
	}
	if int64(len(out)) > limits.Output {
		return nil, false, plugin.LimitError("output", "the tool's output (%s) exceeds the %s output limit", plugin.FormatSize(int64(len(out))), plugin.FormatSize(limits.Output))
	}
	return out, fromStdout, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Close stops the pool and frees compiled code.
func (t *wasmTool) Close() error {
	t.closeOne.Do(func() {
		close(t.quit)
		if t.soon != nil {
			t.soon.Stop()
		}
		t.start.Do(func() { // never compiled: nothing to wait for
			t.compErr = plugin.Errorf(plugin.CodeToolUnavailable, "%s: closed", t.where)
			t.code = nil
			close(t.done)
		})
		<-t.done
		t.wg.Wait()
		// A call still running (Close does not wait for callers) stops at
		// its deadline at the latest; its memory and runtime must not go
		// away under it.
		t.running.Wait()
		t.closeRetired()
		if t.pool != nil {
			for _, inst := range t.pool.close() {
				inst.close()
			}
		}
		t.closePlain()
		if t.compiled != nil {
			_ = t.compiled.Close(context.Background())
		}
		t.transport.CloseIdleConnections()
	})
	return nil
}

// instPool holds a tool's pre-instantiated instances. It hands out the one
// made last: its memory was written most recently and is the most likely
// to be in the CPU caches, which a fresh instance's first call depends on.
type instPool struct {
	mu     sync.Mutex
	insts  []*instance
	max    int
	closed bool
}

func newInstPool(max int) *instPool { return &instPool{max: max} }

// pop returns the newest instance, or nil if there is none.
func (p *instPool) pop() *instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.insts)
	if n == 0 {
		return nil
	}
	inst := p.insts[n-1]
	p.insts[n-1] = nil
	p.insts = p.insts[:n-1]
	return inst
}

// push adds an instance; false if the pool is closed (the caller closes
// the instance). A full pool takes it all the same: only refill pushes,
// after checking full.
func (p *instPool) push(inst *instance) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.insts = append(p.insts, inst)
	return true
}

// full reports whether the pool holds its size.
func (p *instPool) full() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.insts) >= p.max
}

// close empties the pool for good and returns what it held.
func (p *instPool) close() []*instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	insts := p.insts
	p.insts, p.closed = nil, true
	return insts
}

// KeepsDeadline implements plugin.DeadlineKeeper. A guest runs on the
// caller's goroutine and stops within a slice of fuel (well under a
// millisecond) of its deadline: the meter checks the call's context at
// every refill, and sleeps and host calls end at the deadline.
func (t *wasmTool) KeepsDeadline() bool { return true }
