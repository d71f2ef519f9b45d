package subprocess

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/shared"
)

// pluginTool is one tool served by a go-plugin binary. It starts the plugin
// on first use, keeps it while calls come, stops it when idle, and restarts
// it (with backoff) after a crash.
type pluginTool struct {
	a     *Adapter
	spec  plugin.Spec
	inner string // the tool's name inside the plugin
	// callPrefix is `{"params":{"name":<inner>,"arguments":`.
	callPrefix []byte
	bin        *pinnedBinary
	log        hclog.Logger
	desc       plugin.Descriptor

	mu       sync.Mutex
	cur      *proc
	spare    *warmShim // a shim started ahead of the next start
	warming  bool
	spareGen int // counts dropSpare calls: a spare warmed across one is dropped
	failures int
	retryAt  time.Time
	lastErr  error
	backoffs int // calls waiting out the restart backoff (tests watch it)
	closed   bool
	done     chan struct{} // closed when closed is set
}

var (
	_ plugin.Tool         = (*pluginTool)(nil)
	_ plugin.Availability = (*pluginTool)(nil)
)

func (a *Adapter) loadPlugin(ctx context.Context, spec *plugin.Spec) (*pluginTool, error) {
	path, err := resolvePluginPath(a.cfg.PluginDir, spec.Source.Path)
	if err != nil && a.cfg.InstalledDir != "" && spec.Source.SHA256 != "" {
		// A binary installed from a registry, pinned by the lockfile.
		if p, ierr := resolvePluginPath(a.cfg.InstalledDir, spec.Source.Path); ierr == nil {
			path, err = p, nil
		}
	}
	if err != nil {
		return nil, plugin.Errorf(plugin.CodeInvalidRequest, "plugin path: %v", err)
	}
	var sum []byte
	if spec.Source.SHA256 == "" {
		actual, err := FileSHA256(path)
		if err != nil {
			return nil, plugin.Errorf(plugin.CodeToolUnavailable, "plugin binary: %w", err)
		}
		if !a.cfg.AllowUnpinned {
			return nil, plugin.Errorf(plugin.CodePermissionDenied,
				"plugin %s is not pinned: set source sha256 = %q after checking the binary", path, actual)
		}
		a.log.Warn("plugin is not pinned by sha256", "tool", spec.Name, "path", path, "sha256", actual)
		sum, _ = parsePin(actual)
	} else if sum, err = parsePin(spec.Source.SHA256); err != nil {
		return nil, plugin.Errorf(plugin.CodeInvalidRequest, "plugin pin: %v", err)
	}
	if err := a.checkReachable(spec, path); err != nil {
		return nil, err
	}
	t := &pluginTool{
		done:  make(chan struct{}),
		a:     a,
		spec:  *spec,
		inner: spec.Source.Tool,
		bin:   &pinnedBinary{path: path, sum: sum},
		log:   a.log.Named(spec.Name),
	}
	t.spec.Limits = spec.Limits.WithDefaults(plugin.DefaultLimits())
	if t.inner == "" {
		t.inner = spec.Name
	}
	name, _ := json.Marshal(t.inner)
	t.callPrefix = append(append([]byte(`{"params":{"name":`), name...), `,"arguments":`...)
	t.desc = plugin.Descriptor{Name: spec.Name, Description: spec.Description,
		InputSchema: spec.InputSchema, OutputSchema: spec.OutputSchema}
	if len(spec.InputSchema) == 0 {
		if err := t.describe(ctx); err != nil {
			t.stopAll()
			return nil, err
		}
	}
	return t, nil
}

// describe starts the plugin and reads the tool's descriptor from it.
func (t *pluginTool) describe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, t.a.cfg.StartTimeout+t.spec.Limits.Timeout)
	defer cancel()
	p, err := t.acquire(ctx)
	if err != nil {
		return err
	}
	defer t.release(p)
	raw, err := p.rpc.ListTools(ctx)
	if err != nil {
		return plugin.Errorf(plugin.CodeToolUnavailable, "plugin %s: tools/list: %v", t.bin.path, err)
	}
	var list shared.ListToolsResult
	if err := json.Unmarshal(raw, &list); err != nil {
		return plugin.Errorf(plugin.CodeOutputInvalid, "plugin %s: tools/list returned invalid JSON: %v", t.bin.path, err)
	}
	names := make([]string, 0, len(list.Tools))
	for _, d := range list.Tools {
		names = append(names, d.Name)
		if d.Name != t.inner {
			continue
		}
		desc := plugin.Descriptor{Name: t.spec.Name, Title: d.Title, Description: d.Description,
			InputSchema: d.InputSchema, OutputSchema: d.OutputSchema}
		if len(d.Annotations) > 0 {
			var an plugin.Annotations
			if json.Unmarshal(d.Annotations, &an) == nil {
				desc.Annotations = &an
			}
		}
		if t.spec.Description != "" {
			desc.Description = t.spec.Description
		}
		if len(t.spec.OutputSchema) > 0 {
			desc.OutputSchema = t.spec.OutputSchema
		}
		if len(desc.InputSchema) == 0 {
			desc.InputSchema = json.RawMessage(`{"type":"object"}`)
		}
		t.desc = desc
		return nil
	}
	return plugin.Errorf(plugin.CodeToolNotFound, "plugin %s serves %s, not %q",
		t.bin.path, strings.Join(names, ", "), t.inner)
}

// Descriptor returns the tool's descriptor.
func (t *pluginTool) Descriptor() plugin.Descriptor { return t.desc }

// offline reports whether the tool was granted no network hosts: its
// processes then get no network at all.
func (t *pluginTool) offline() bool { return len(t.spec.Capabilities.Hosts) == 0 }

// Available reports false while a crashed plugin waits for its restart.
func (t *pluginTool) Available() (bool, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false, "adapter closed"
	}
	if t.lastErr != nil && time.Now().Before(t.retryAt) {
		return false, fmt.Sprintf("%v; restarting in %s", t.lastErr, time.Until(t.retryAt).Round(time.Millisecond))
	}
	return true, ""
}

// Call runs the tool in the plugin process under the call's deadline.
func (t *pluginTool) Call(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
	limits := limitsOf(&t.spec, req)
	ctx, cancel := context.WithTimeout(ctx, limits.Timeout)
	defer cancel()
	p, err := t.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer t.release(p)
	args := req.Arguments
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	if !json.Valid(args) {
		return nil, plugin.Errorf(plugin.CodeInvalidRequest, "arguments: not valid JSON")
	}
	// {"params":{"name":...,"arguments":...}}, built without re-encoding
	// the (already validated) arguments.
	body := make([]byte, 0, len(t.callPrefix)+len(args)+2)
	body = append(append(append(body, t.callPrefix...), args...), "}}"...)
	recvMax := grpc.MaxCallRecvMsgSize(int(min(limits.Output, 1<<30)) + (64 << 10))
	var out []byte
	if useSession(req) && !p.noSession.Load() {
		// The stream carries the plugin's asks as well as its result.
		sessMax := grpc.MaxCallRecvMsgSize(int(max(min(limits.Output, 1<<30), maxAsk)) + (64 << 10))
		out, err = p.rpc.CallToolSession(ctx, body, &session{req: req}, sessMax)
		if errors.Is(err, shared.ErrNoSession) {
			// A plugin built before sessions: what it cannot report
			// nobody misses, and what it cannot ask it never asks.
			p.noSession.Store(true)
			out, err = p.rpc.CallTool(ctx, body, recvMax)
		}
	} else {
		out, err = p.rpc.CallTool(ctx, body, recvMax)
	}
	if err != nil {
		var pe *plugin.Error
		if errors.As(err, &pe) && pe.Code == plugin.CodeLimitExceeded {
			return nil, pe // the call passed a per-call limit asking its client
		}
		return nil, t.callError(ctx, p, limits, err)
	}
	t.mu.Lock()
	t.failures, t.lastErr = 0, nil
	t.mu.Unlock()
	return decodeResult(out, limits.Output)
}

// callError turns a failed RPC into the error the caller sees, and stops the
// plugin when it is dead, wedged or over a limit.
func (t *pluginTool) callError(ctx context.Context, p *proc, limits plugin.Limits, err error) error {
	if r := p.reason.Load(); r != nil {
		return r
	}
	// The plugin side sees the propagated deadline too and may cancel the
	// stream a moment before the host's context expires.
	if dl, ok := ctx.Deadline(); errors.Is(ctx.Err(), context.DeadlineExceeded) || ok && time.Until(dl) < 50*time.Millisecond {
		e := &plugin.Error{Code: plugin.CodeToolExecutionTimeout,
			Message: fmt.Sprintf("the call did not finish within its deadline (timeout %s); the plugin was stopped and restarts on the next call", limits.Timeout),
			Err:     context.DeadlineExceeded}
		t.retire(p, e, false)
		return e
	}
	if ctx.Err() != nil {
		// The caller gave up: no state survives a call, so the work it
		// started is stopped with the plugin.
		t.retire(p, nil, false)
		return ctx.Err()
	}
	st, _ := status.FromError(err)
	if st.Code() == codes.ResourceExhausted {
		return plugin.LimitError("output", "the plugin's result is larger than the output limit %s", plugin.FormatSize(limits.Output))
	}
	if p.exitedWithin(200 * time.Millisecond) {
		if r := p.reason.Load(); r != nil {
			return r
		}
		e := t.crashError(p)
		t.retire(p, e, true)
		t.mu.Lock()
		t.lastErr = e
		t.mu.Unlock()
		return e
	}
	if st.Code() == codes.Unavailable {
		e := plugin.Errorf(plugin.CodeToolUnavailable, "plugin connection lost: %s", st.Message())
		t.retire(p, e, true)
		return e
	}
	return plugin.Errorf(plugin.CodeToolExecutionFailed, "plugin error: %s", st.Message())
}

// crashError explains how a plugin died mid-call.
func (t *pluginTool) crashError(p *proc) *plugin.Error {
	p.stop(0) // reap it and whatever it left behind
	how := "exited"
	if st := p.runner.exitState(); st != nil {
		how = "exited (" + st.String() + ")"
		if sig, ok := exitSignal(st); ok {
			switch limitSignal(sig) {
			case "cpu":
				return plugin.LimitError("cpu", "the plugin used up its CPU time limit (%ds)", t.a.cfg.CPUSeconds)
			case "file_size":
				return plugin.LimitError("file_size", "the plugin tried to write a file larger than %s", plugin.FormatSize(t.a.cfg.MaxFileSize))
			}
			how = "was killed by " + signalName(sig)
		}
	}
	tail := p.runner.stderr.Tail()
	if f := p.runner.stderr.Fatal(); f != "" {
		tail = f
	}
	switch {
	case strings.Contains(tail, "failed to create new OS thread") || strings.Contains(tail, "pthread_create failed"):
		return plugin.LimitError("threads", "the plugin could not start another thread: its task limit (pids cgroup) or its data-segment limit (memory %s) is exhausted", plugin.FormatSize(t.spec.Limits.Memory))
	case strings.Contains(tail, "out of memory") || strings.Contains(tail, "cannot allocate memory"):
		return plugin.LimitError("memory", "the plugin ran out of memory (limit %s)", plugin.FormatSize(t.spec.Limits.Memory))
	}
	msg := fmt.Sprintf("the plugin process %s during the call; it restarts on the next call", how)
	if l := lastLine(tail); l != "" {
		msg += "; its last output: " + l
	}
	return &plugin.Error{Code: plugin.CodeToolUnavailable, Message: msg}
}

// decodeResult checks and converts a plugin's tools/call result.
func decodeResult(out []byte, max int64) (*plugin.Result, error) {
	if int64(len(out)) > max {
		return nil, plugin.LimitError("output", "the plugin's result (%d bytes) is larger than the output limit %s", len(out), plugin.FormatSize(max))
	}
	var r shared.CallToolResult
	if err := json.Unmarshal(out, &r); err != nil { // trailing data is an error too
		return nil, plugin.Errorf(plugin.CodeOutputInvalid, "the plugin returned a result that is not MCP tools/call JSON: %v", err)
	}
	res := &plugin.Result{StructuredContent: r.StructuredContent, IsError: r.IsError, Content: make([]plugin.Content, 0, len(r.Content))}
	for i, c := range r.Content {
		switch c.Type {
		case "text", "image", "audio", "resource_link", "resource":
		default:
			return nil, plugin.Errorf(plugin.CodeOutputInvalid, "the plugin returned content[%d] of unknown type %q", i, c.Type)
		}
		res.Content = append(res.Content, plugin.Content{Type: c.Type, Text: c.Text, Data: c.Data,
			MIMEType: c.MIMEType, URI: c.URI, Name: c.Name})
	}
	return res, nil
}

// acquire returns the running plugin, starting it if needed, and counts the
// caller as active (which holds off the idle stop).
func (t *pluginTool) acquire(ctx context.Context) (*proc, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		if t.closed {
			return nil, plugin.Errorf(plugin.CodeToolUnavailable, "the subprocess adapter is closed")
		}
		if p := t.cur; p != nil {
			if !p.isStopped() && !p.runner.hasExited() {
				p.active++
				p.stopIdle()
				return p, nil
			}
			t.cur = nil
		}
		wait := time.Until(t.retryAt)
		if wait <= 0 {
			break
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return nil, plugin.Errorf(plugin.CodeToolUnavailable, "%v; restarting in %s", t.lastErr, wait.Round(time.Millisecond))
		}
		// Wait out the backoff without the lock (Close, the idle stop
		// and other callers need it), then look again: another caller
		// may have started the plugin meanwhile.
		t.backoffs++
		t.mu.Unlock()
		var err error
		select {
		case <-time.After(wait):
		case <-t.done: // the loop says so
		case <-ctx.Done():
			err = ctx.Err()
		}
		t.mu.Lock()
		t.backoffs--
		if err != nil {
			return nil, err
		}
	}
	p, err := t.start(ctx)
	if err != nil {
		t.noteFailure(err)
		var pe *plugin.Error
		if errors.As(err, &pe) {
			return nil, pe
		}
		return nil, plugin.Errorf(plugin.CodeToolUnavailable, "starting plugin %s: %w", t.bin.path, err)
	}
	t.cur = p
	p.active++
	return p, nil
}

// noteFailure schedules the next start after a failure. t.mu must be held.
func (t *pluginTool) noteFailure(err error) {
	t.failures++
	d := t.a.cfg.RestartBackoff << min(t.failures-1, 20)
	if d > t.a.cfg.MaxRestartBackoff || d <= 0 {
		d = t.a.cfg.MaxRestartBackoff
	}
	t.retryAt = time.Now().Add(d)
	t.lastErr = err
}

// release ends a caller's use of p and arms the idle stop.
func (t *pluginTool) release(p *proc) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p.active--
	if p.active == 0 && t.cur == p {
		t.warmSpare()
		p.armIdle(t.spec.Limits.IdleTimeout, func() {
			t.mu.Lock()
			if t.cur != p || p.active > 0 {
				t.mu.Unlock()
				return
			}
			t.cur = nil
			t.dropSpare() // an idle tool holds no processes
			t.mu.Unlock()
			t.log.Debug("stopping idle plugin", "pid", p.pid)
			p.stop(t.a.cfg.KillGrace)
		})
	}
}

// retire stops p (now, without grace: it is dead, wedged or over a limit)
// and, for a failure of the plugin itself, schedules the restart backoff.
func (t *pluginTool) retire(p *proc, reason *plugin.Error, failure bool) {
	if reason != nil {
		p.reason.CompareAndSwap(nil, reason)
	}
	t.mu.Lock()
	if t.cur == p {
		t.cur = nil
	}
	if failure && p.failed.CompareAndSwap(false, true) {
		if reason == nil {
			reason = plugin.Errorf(plugin.CodeToolUnavailable, "the plugin process exited unexpectedly")
		}
		t.noteFailure(reason)
	}
	t.mu.Unlock()
	p.stop(0)
}

// stopAll stops the plugin for good.
func (t *pluginTool) stopAll() {
	t.mu.Lock()
	if !t.closed {
		close(t.done)
	}
	t.closed = true
	p := t.cur
	t.cur = nil
	w := t.spare
	t.spare = nil
	t.mu.Unlock()
	if w != nil {
		w.discard()
	}
	if p != nil {
		p.stop(t.a.cfg.KillGrace)
	}
}

// proc is one running plugin process.
type proc struct {
	client  *goplugin.Client
	rpc     *shared.Client
	runner  *procRunner
	pid     int
	scratch string
	log     hclog.Logger

	// reason is why the host killed the process (watchdog, timeout), if it did.
	reason atomic.Pointer[plugin.Error]
	// stopping is set when the host starts stopping the process, so that
	// its exit is not taken for a crash; failed once a crash was counted.
	stopping atomic.Bool
	failed   atomic.Bool
	// noSession is set once the plugin answered that it does not serve
	// CallToolSession.
	noSession atomic.Bool

	active int         // guarded by the tool's mu
	idle   *time.Timer // guarded by the tool's mu

	stopOnce sync.Once
	stopped  chan struct{}
}

func (p *proc) isStopped() bool {
	select {
	case <-p.stopped:
		return true
	default:
		return false
	}
}

func (p *proc) stopIdle() {
	if p.idle != nil {
		p.idle.Stop()
	}
}

func (p *proc) armIdle(d time.Duration, f func()) {
	if p.idle != nil {
		p.idle.Reset(d)
		return
	}
	p.idle = time.AfterFunc(d, f)
}

// exitedWithin reports whether the plugin process is gone, waiting up to d
// for the host to notice (a broken connection is seen before the exit).
func (p *proc) exitedWithin(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if p.runner.hasExited() || p.isStopped() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// kill stops the process because of reason (kept for in-flight calls).
func (p *proc) kill(reason *plugin.Error) {
	p.reason.CompareAndSwap(nil, reason)
	p.stop(0)
}

// stop kills the process tree (SIGTERM, grace, SIGKILL to the group and
// every remaining descendant), lets go-plugin reap it and clean up, and
// removes the scratch directory. Concurrent callers wait for the first.
func (p *proc) stop(grace time.Duration) {
	p.stopping.Store(true)
	p.runner.stopping.Store(true)
	p.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), grace+10*time.Second)
		defer cancel()
		if err := killTree(ctx, p.runner.g, grace); err != nil {
			p.log.Error("plugin processes survived the kill", "error", err)
		}
		p.client.Kill()
		_ = os.RemoveAll(p.scratch)
		close(p.stopped)
	})
}

// start launches the plugin through the shim and completes the handshake.
//
// It uses the spare warm shim when there is one that holds the current
// version of the binary, and otherwise starts a shim now; either way it
// then warms a spare for the next start (a restart after a crash, a
// timeout or a watchdog kill). t.mu is held.
func (t *pluginTool) start(ctx context.Context) (*proc, error) {
	a := t.a
	w := t.spare
	t.spare = nil
	if w != nil {
		f, key, err := t.bin.open()
		if err == nil {
			f.Close()
		}
		if err != nil || key != w.key || w.hasExited() {
			go w.discard()
			w = nil
			if err != nil {
				return nil, err
			}
		}
	}
	if w == nil {
		var err error
		if w, err = a.prestart(t.bin, t.spec.Name, t.spec.Capabilities.Hosts); err != nil {
			return nil, err
		}
	}
	scratch := w.scratch
	limits := t.spec.Limits
	out := t.log.StandardWriter(&hclog.StandardLoggerOptions{ForceLevel: hclog.Info})
	var pr *procRunner
	cc := &goplugin.ClientConfig{
		HandshakeConfig:  shared.Handshake,
		Plugins:          shared.PluginSet(),
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		AutoMTLS:         true,
		StartTimeout:     a.cfg.StartTimeout,
		Logger:           t.log,
		SkipHostEnv:      true,
		SyncStdout:       out,
		SyncStderr:       out,
		UnixSocketConfig: &goplugin.UnixSocketConfig{TempDir: a.cfg.ScratchDir},
		RunnerFunc: func(_ hclog.Logger, cmd *exec.Cmd, socketDir string) (runner.Runner, error) {
			if err := a.handOver(socketDir); err != nil {
				return nil, fmt.Errorf("socket directory: %w", err)
			}
			env := append(baseEnv(scratch, envNames(&t.spec)), cmd.Env...)
			ls := &launchSpec{
				Exe: t.bin.path, Args: t.spec.Source.Args, Env: env, Dir: scratch, Scratch: scratch,
				ReadWrite:  []string{socketDir},
				Offline:    t.offline(),
				CPUSeconds: a.cfg.CPUSeconds,
				DataBytes:  uint64(limits.Memory + a.cfg.DataSlack),
				FileBytes:  uint64(a.cfg.MaxFileSize),
				OpenFiles:  uint64(limits.FileDescriptors),
			}
			ro, rw := mountDirs(t.spec.Capabilities.Mounts)
			ls.ReadOnly, ls.ReadWrite = ro, append(ls.ReadWrite, rw...)
			cfg := a.shimConfig(ls)
			cfg.Env = env
			pr = newProcRunner(w, &cfg, t.bin.path, a.cfg.KillGrace)
			return pr, nil
		},
	}
	client := goplugin.NewClient(cc)
	fail := func(err error) (*proc, error) {
		client.Kill()
		if pr == nil {
			w.discard()
		}
		_ = os.RemoveAll(scratch)
		if pr != nil && pr.stderr.Tail() != "" {
			return nil, plugin.Errorf(plugin.CodeToolUnavailable, "starting plugin %s: %v (stderr: %s)", t.bin.path, err, lastLine(pr.stderr.Tail()))
		}
		return nil, plugin.Errorf(plugin.CodeToolUnavailable, "starting plugin %s: %v", t.bin.path, err)
	}
	rpcClient, err := client.Client()
	if err != nil {
		return fail(err)
	}
	raw, err := rpcClient.Dispense(shared.PluginName)
	if err != nil {
		return fail(err)
	}
	sc, ok := raw.(*shared.Client)
	if !ok {
		return fail(fmt.Errorf("dispensed %T, not *shared.Client", raw))
	}
	p := &proc{client: client, rpc: sc, runner: pr, pid: pr.pid, scratch: scratch,
		log: t.log.With("pid", pr.pid), stopped: make(chan struct{})}
	go t.watch(p)
	t.log.Debug("plugin started", "pid", p.pid)
	// The spare for the next start is warmed once this plugin's first call
	// is over (release), or after spareDelay if that call runs long: started
	// now, it would compete for the CPU with the call that is waiting.
	time.AfterFunc(spareDelay, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.cur == p && !p.isStopped() {
			t.warmSpare()
		}
	})
	return p, nil
}

// spareDelay bounds how long a start waits before warming the next spare
// when its first call has not ended by then.
const spareDelay = 500 * time.Millisecond

// warmSpare starts a spare shim in the background unless there is one.
// t.mu is held.
func (t *pluginTool) warmSpare() {
	if t.spare != nil || t.warming || t.closed {
		return
	}
	t.warming = true
	gen := t.spareGen
	go func() {
		w, err := t.a.prestart(t.bin, t.spec.Name, t.spec.Capabilities.Hosts)
		t.mu.Lock()
		t.warming = false
		// Dropped while it was warming (the idle stop, Close): not wanted.
		if err == nil && (t.closed || t.spare != nil || t.spareGen != gen) {
			t.mu.Unlock()
			w.discard()
			return
		}
		if err == nil {
			t.spare = w
		}
		t.mu.Unlock()
		if err != nil {
			t.log.Debug("cannot warm a spare shim", "error", err)
		}
	}()
}

// dropSpare discards the spare shim. t.mu is held.
func (t *pluginTool) dropSpare() {
	t.spareGen++ // and the one being warmed, if any
	if w := t.spare; w != nil {
		t.spare = nil
		go w.discard()
	}
}

// watch runs the watchdog over p until it stops, and retires p when it
// exceeds a limit or exits by itself (sweeping what it left behind).
func (t *pluginTool) watch(p *proc) {
	e, exited := t.a.watchTree(p.stopped, p.runner.waited, p.runner.g, t.spec.Limits.Memory)
	switch {
	case e != nil:
		t.log.Warn("watchdog kills plugin", "pid", p.pid, "limit", e.Limit, "reason", e.Message)
		t.retire(p, e, true)
	case exited && !p.stopping.Load():
		// It exited on its own: a crash, counted for the restart backoff.
		// (A call in flight reports how it died.)
		t.retire(p, nil, true)
	}
}

// envNames lists the host variables a plugin receives.
func envNames(spec *plugin.Spec) []string {
	names := slices.Clone(spec.Source.Env)
	for _, e := range spec.Capabilities.Env {
		if !slices.Contains(names, e) {
			names = append(names, e)
		}
	}
	return names
}

// mountDirs splits granted mounts into Landlock read-only and read-write
// directories.
func mountDirs(ms []plugin.Mount) (ro, rw []string) {
	for _, m := range ms {
		if m.ReadOnly {
			ro = append(ro, m.HostPath)
		} else {
			rw = append(rw, m.HostPath)
		}
	}
	return ro, rw
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}

// exitSignal returns the signal that ended a sandboxed process: the shim
// exits with 128+signal when the plugin was killed by one.
func exitSignal(st *os.ProcessState) (syscall.Signal, bool) {
	ws, ok := st.Sys().(syscall.WaitStatus)
	if !ok {
		return 0, false
	}
	if ws.Signaled() {
		return ws.Signal(), true
	}
	if c := ws.ExitStatus(); c > 128 && c < 128+65 {
		return syscall.Signal(c - 128), true
	}
	return 0, false
}
