package extism

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/experimental/sysfs"

	"github.com/toolhost/toolhost/extism/internal/fuel"
	"github.com/toolhost/toolhost/extism/internal/guestmem"
	"github.com/toolhost/toolhost/extism/internal/hostfs"
	"github.com/toolhost/toolhost/internal/netguard"
	"github.com/toolhost/toolhost/plugin"
)

// instance is one pre-instantiated guest, used for exactly one call and
// then closed. Everything a call can touch (memory, /tmp, stdio, counters)
// belongs to the instance, so nothing survives into the next call.
type instance struct {
	t      *wasmTool
	p      *extism.Plugin
	tmp    *hostfs.TmpDir
	tmpFS  *hostfs.FS
	mounts []*hostfs.FS

	stdin  bytes.Reader
	stdout capWriter
	stderr lineLogger
	mem    guestmem.Allocator

	// Per call; set by begin.
	spec      *plugin.Spec
	limits    plugin.Limits
	guard     *netguard.Guard
	req       *plugin.Request
	callDone  <-chan struct{}
	meter     *fuel.Meter // set by wasmTool.run
	log       hclog.Logger
	cancel    context.CancelFunc
	fileBytes atomic.Int64
	batch     *hostfs.BatchReader // toolhost_fs_submit's reading, if any
	direct    *directCall         // call_tool without go-sdk's per-call work (direct.go)
	httpCount int
	// extismHTTP is the last response of Extism's own http_request.
	extismHTTP extismHTTPState
	invokes    int
	logs       atomic.Int64

	mu       sync.Mutex
	abortErr *plugin.Error
	closed   bool
}

type instKey struct{}

func instanceFrom(ctx context.Context) *instance {
	i, _ := ctx.Value(instKey{}).(*instance)
	return i
}

// newInstance instantiates and initialises a guest with spec's mounts. ctx
// bounds the work.
func (t *wasmTool) newInstance(ctx context.Context, spec *plugin.Spec) (_ *instance, err error) {
	if !t.useSnapshot(spec) {
		p, err := t.plainTool(ctx)
		if err != nil {
			return nil, err
		}
		return p.newInstance(ctx, spec)
	}
	inst := &instance{t: t, spec: spec, limits: t.limits}
	t.live.Add(1)
	inst.mem.SetLimit(uint64(t.limits.Memory))
	inst.mem.Pool = &t.a.mem
	inst.mem.OnHit = inst.memoryHit
	inst.stdout.inst = inst
	inst.stderr.inst = inst
	defer func() {
		if err != nil {
			inst.close()
		}
	}()
	inst.tmp, err = t.a.tmps.Get()
	if err != nil {
		return nil, fmt.Errorf("per-call temp dir: %w", err)
	}
	fsc := wazero.NewFSConfig()
	for _, m := range spec.Capabilities.Mounts {
		guest := path.Clean("/" + m.GuestPath)
		r, err := os.OpenRoot(m.HostPath)
		if err != nil {
			return nil, fmt.Errorf("mount %s: %w", guest, err)
		}
		rfs := hostfs.Mount(r, guest, m.ReadOnly, inst)
		inst.mounts = append(inst.mounts, rfs)
		fsc = fsc.(sysfs.FSConfig).WithSysFSMount(rfs, guest)
	}
	// The temp dir's root belongs to the pool: this instance's FS does
	// not close it.
	inst.tmpFS = inst.tmp.Mount("/tmp", inst)
	fsc = fsc.(sysfs.FSConfig).WithSysFSMount(inst.tmpFS, "/tmp")
	mc := wazero.NewModuleConfig().
		WithFSConfig(fsc).
		WithStdin(&inst.stdin).
		WithStdout(&inst.stdout).
		WithStderr(&inst.stderr).
		WithSysWalltime().
		WithSysNanotime().
		WithNanosleep(inst.nanosleep).
		WithRandSource(rand.Reader)
	ictx := experimental.WithMemoryAllocator(ctx, &inst.mem)
	if m := t.snap.minMemory; m > uint64(t.limits.Memory) {
		// wazero panics when the allocator cannot give a memory its initial
		// size. A snapshot's memory starts at its size after initialisation.
		return nil, plugin.LimitError("memory", "the module needs %s of memory to start, more than its %s memory limit",
			plugin.FormatSize(int64(m)), plugin.FormatSize(t.limits.Memory))
	}
	if !t.snap.noPlan.Load() {
		inst.mem.Expect(t.snap.plan)
	}
	inst.p, err = t.compiled.Instance(ictx, extism.PluginInstanceConfig{ModuleConfig: mc})
	if err != nil {
		return nil, fmt.Errorf("instantiate: %w", err)
	}
	if inst.mem.Planned() && !inst.mem.PlanWentToModule(inst.kernelStart()) {
		// The memory spared clearing under the segments was not the
		// module's own: discard the instance, and clear in full from now on.
		t.snap.noPlan.Store(true)
		t.log.Warn("guest memories were made in an unexpected order; clearing recycled memories in full")
		inst.close()
		return t.newInstance(ctx, spec)
	}
	inst.mem.Expect(nil)
	inst.p.SetLogger(inst.guestLog)
	if t.info.initName != "" && !t.snap.on { // a snapshot's initialiser is a no-op
		ictx, cancel := context.WithTimeout(ctx, t.limits.Timeout)
		defer cancel()
		// Initialisation has its own fuel: ctx may be a nested call's,
		// carrying the calling tool's meter.
		ictx = fuel.WithMeter(context.WithValue(ictx, instKey{}, inst), fuel.NewMeter(fuel.DefaultBudget))
		if _, _, err := inst.p.CallWithContext(ictx, initExport, nil); err != nil {
			if inst.mem.Hit() {
				return nil, plugin.LimitError("memory", "guest initialisation needs more than the %s memory limit", plugin.FormatSize(t.limits.Memory))
			}
			return nil, fmt.Errorf("guest initialisation (%s): %w%s", t.info.initName, err, inst.stderr.tail())
		}
	}
	inst.stdout.buf.Reset()
	inst.stderr.reset()
	return inst, nil
}

// kernelStart is where the Extism kernel's memory starts, or nil.
func (inst *instance) kernelStart() *byte {
	if inst.p == nil {
		return nil
	}
	view, ok := inst.p.Memory().Read(0, 1)
	if !ok {
		return nil
	}
	return &view[0]
}

// begin binds the instance to a call.
func (inst *instance) begin(ctx context.Context, req *plugin.Request, spec *plugin.Spec, limits plugin.Limits, cancel context.CancelFunc) {
	inst.spec, inst.limits = spec, limits
	inst.guard = netguard.New(spec.Capabilities.Hosts, inst.t.a.lookup)
	inst.mem.SetLimit(uint64(limits.Memory))
	inst.p.MaxVarBytes = limits.VarSize
	inst.p.Timeout = 0 // the call's context carries the deadline
	inst.req = req
	inst.callDone = ctx.Done()
	inst.cancel = cancel
	inst.log = req.Log
	if inst.log == nil {
		inst.log = inst.t.log
	}
}

// nanosleep is the guest's sleep (WASI poll_oneoff on a clock). It wakes up
// early when the call is cancelled or times out, so a sleeping guest stops
// as promptly as a spinning one.
func (inst *instance) nanosleep(ns int64) {
	if ns <= 0 {
		return
	}
	inst.meter.Pause() // a sleeping guest needs no lane
	t := time.NewTimer(time.Duration(ns))
	defer t.Stop()
	select {
	case <-t.C:
	case <-inst.callDone:
		panic(errCallOver)
	}
}

// errCallOver is the panic value that stops a guest which keeps calling the
// host after its call ended (deadline, cancellation or a limit): wazero
// turns a panic in a host function into a failed call.
var errCallOver = errors.New("the call is over")

// stopIfOver ends the guest's execution if its call is over. Host functions
// call it first, so a guest that ignores errors cannot keep going.
func (inst *instance) stopIfOver() {
	if inst.callDone == nil {
		return
	}
	select {
	case <-inst.callDone:
		panic(errCallOver)
	default:
	}
}

// abort stops the call with err; the first error wins.
func (inst *instance) abort(err *plugin.Error) {
	inst.mu.Lock()
	if inst.abortErr == nil {
		if err.Tool == "" {
			err.Tool = inst.spec.Name
		}
		inst.abortErr = err
	}
	cancel := inst.cancel
	inst.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (inst *instance) aborted() *plugin.Error {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	return inst.abortErr
}

// memoryHit stops a call whose guest tried to grow memory past the limit:
// guests rarely survive a failed memory.grow, and some spin trying.
func (inst *instance) memoryHit() {
	if inst.req == nil {
		return
	}
	inst.abort(plugin.LimitError("memory", "the tool needed more than its %s memory limit", plugin.FormatSize(inst.limits.Memory)))
}

// FileRead counts n bytes read from a mount; false means the limit is hit
// (hostfs.Meter).
func (inst *instance) FileRead(n int64) bool {
	if inst.req == nil {
		return true
	}
	inst.stopIfOver()
	lim := inst.limits.FileBytesRead
	if inst.fileBytes.Add(n) > lim {
		inst.abort(plugin.LimitError("file_bytes_read", "the tool read more than %s from its mounts", plugin.FormatSize(lim)))
		return false
	}
	return true
}

// guestLog receives Extism log_* calls.
func (inst *instance) guestLog(level extism.LogLevel, msg string) {
	if inst.req == nil {
		return // initialisation chatter
	}
	inst.logLine(level, msg)
}

const maxLogLine = 4 << 10

func (inst *instance) logLine(level extism.LogLevel, msg string) {
	inst.stopIfOver()
	lim := int64(inst.limits.LogEntries)
	if inst.logs.Add(1) > lim {
		inst.abort(plugin.LimitError("log_entries", "the tool wrote more than %d log entries", lim))
		return
	}
	if len(msg) > maxLogLine {
		msg = msg[:maxLogLine] + "…[truncated]"
	}
	msg = inst.req.Secrets.Redact(msg)
	if n := inst.req.Notify; n != nil {
		// The caller sees the tool's log too (an MCP client, at the level
		// it chose with logging/setLevel).
		n.Log(clientLevel(level), msg)
	}
	l := inst.log
	switch level {
	case extism.LogLevelTrace:
		l.Trace("guest", "message", msg)
	case extism.LogLevelDebug:
		l.Debug("guest", "message", msg)
	case extism.LogLevelWarn:
		l.Warn("guest", "message", msg)
	case extism.LogLevelError:
		l.Error("guest", "message", msg)
	default:
		l.Info("guest", "message", msg)
	}
}

// close releases the instance: guest memory, mounts and its /tmp.
func (inst *instance) close() {
	if inst.closed {
		return
	}
	inst.closed = true
	inst.t.live.Add(-1)
	inst.stopBatch()
	if inst.p != nil {
		_ = inst.p.Close(context.Background())
		inst.p = nil
	}
	for _, m := range inst.mounts {
		m.Close()
	}
	inst.mounts = nil
	if inst.tmpFS != nil {
		inst.tmpFS.Close()
		inst.tmpFS = nil
	}
	if inst.tmp != nil {
		if err := inst.t.a.tmps.Put(inst.tmp); err != nil {
			inst.t.log.Warn("removing per-call temp dir", "dir", inst.tmp.Path(), "error", err)
		}
		inst.tmp = nil
	}
}

// stopBatch stops the call's batch reading (fsbatch.go), if any: its
// goroutines end, its directories are closed.
func (inst *instance) stopBatch() {
	if inst.batch != nil {
		inst.batch.Stop()
		inst.batch = nil
	}
}

// filesystems are the instance's mounts and its /tmp.
func (inst *instance) filesystems() []*hostfs.FS {
	return append(inst.mounts[:len(inst.mounts):len(inst.mounts)], inst.tmpFS)
}

// moduleMemory is the guest module's own memory (the Extism kernel has the
// other), as it is now, or nil if it cannot be told apart.
func (inst *instance) moduleMemory() []byte { return inst.mem.ModuleMemory(inst.kernelStart()) }

// guestBytes is [ptr, ptr+n) of a guest memory (moduleMemory), as the
// host functions that take a pointer and a length read it, or false if it
// is out of bounds.
func guestBytes(mem []byte, ptr, n uint64) ([]byte, bool) {
	ptr, n = uint64(uint32(ptr)), uint64(uint32(n))
	if ptr+n > uint64(len(mem)) {
		return nil, false
	}
	return mem[ptr : ptr+n : ptr+n], true
}

// capWriter is a guest's stdout: the fast output path. Writing past the
// output limit aborts the call.
type capWriter struct {
	inst *instance
	buf  bytes.Buffer
}

func (w *capWriter) Write(p []byte) (int, error) {
	inst := w.inst
	if inst.req == nil {
		return len(p), nil // discard output during initialisation
	}
	inst.stopIfOver()
	lim := inst.limits.Output
	if int64(w.buf.Len()+len(p)) > lim {
		inst.abort(plugin.LimitError("output", "the tool's output exceeds the %s output limit", plugin.FormatSize(lim)))
		return 0, fmt.Errorf("output limit exceeded")
	}
	return w.buf.Write(p)
}

// lineLogger turns a guest's stderr into log entries and keeps the last
// few lines for error messages.
type lineLogger struct {
	inst    *instance
	partial []byte
	head    []byte // the first bytes of stderr (where a panic message is)
}

const keepStderrHead = 2 << 10

func (l *lineLogger) Write(p []byte) (int, error) {
	n := len(p)
	if room := keepStderrHead - len(l.head); room > 0 {
		l.head = append(l.head, p[:min(room, len(p))]...)
	}
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.line(string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
	if len(l.partial) > maxLogLine {
		l.line(string(l.partial))
		l.partial = l.partial[:0]
	}
	return n, nil
}

func (l *lineLogger) line(s string) {
	if len(s) > maxLogLine {
		s = s[:maxLogLine]
	}
	if l.inst.req != nil {
		l.inst.logLine(extism.LogLevelDebug, "stderr: "+s)
	}
}

func (l *lineLogger) reset() { l.partial, l.head = nil, nil }

// tail returns the start of stderr, for an error message.
func (l *lineLogger) tail() string {
	if len(l.head) == 0 {
		return ""
	}
	s := strings.TrimRight(string(l.head), "\n")
	if len(l.head) == keepStderrHead {
		s += "…"
	}
	if l.inst.req != nil {
		s = l.inst.req.Secrets.Redact(s)
	}
	return "\nguest stderr:\n" + s
}
