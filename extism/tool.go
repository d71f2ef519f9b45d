package extism

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
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
	// wasCalled is set at the first call: Ready has nothing to warm up.
	wasCalled atomic.Bool
	refills   refillState // pool.go
	quit      chan struct{}
	wg        sync.WaitGroup // the refill goroutine
	running   sync.WaitGroup // guest calls executing
	closeOne  sync.Once
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
		retired: make(chan *instance, 8),
		quit:    make(chan struct{}),
	}
	t.transport = netguard.NewTransport()
	t.inputHead = callproto.Head(guestToolName(spec))
	if lim.Pool > 0 {
		t.refills.init()
		t.refills.burstExtra = min(refillBurstExtra, lim.Pool)
		t.pool = newInstPool(lim.Pool, t.refills.extra)
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
	// with delivering its result (pool.go).
	defer t.used()
	t.a.calls.begin() // warm-up waits (warmup.go)
	defer t.a.calls.end()
	if !t.wasCalled.Load() {
		t.wasCalled.Store(true)
	}
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

// KeepsDeadline implements plugin.DeadlineKeeper. A guest runs on the
// caller's goroutine and stops within a slice of fuel (well under a
// millisecond) of its deadline: the meter checks the call's context at
// every refill, and sleeps and host calls end at the deadline.
func (t *wasmTool) KeepsDeadline() bool { return true }
