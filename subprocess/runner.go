package subprocess

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-plugin/runner"
)

// procRunner is the go-plugin runner.Runner of a sandboxed plugin: it starts
// the shim command and, unlike go-plugin's own runner (whose Kill reaches
// only the direct child), kills the whole process tree.
type procRunner struct {
	w      *warmShim
	cfg    *shimConfig
	cmd    *exec.Cmd
	stdout io.ReadCloser
	stderr *tailReader
	name   string
	grace  time.Duration
	pid    int
	g      *group

	// stopping is set once the host decided to stop the tree (shutdown,
	// idle, timeout, limit): the exit that follows is the host's doing and
	// not the plugin's failure.
	stopping atomic.Bool

	waited chan struct{}
	mu     sync.Mutex
	state  *os.ProcessState
}

var _ runner.Runner = (*procRunner)(nil)

// newProcRunner returns the runner of a plugin that the warm shim w will
// become once it is sent cfg.
func newProcRunner(w *warmShim, cfg *shimConfig, name string, grace time.Duration) *procRunner {
	return &procRunner{
		w: w, cfg: cfg, cmd: w.cmd, stdout: w.stdout, stderr: newTailReader(w.stderr, 4096),
		name: name, grace: grace, g: w.g, pid: w.cmd.Process.Pid, waited: make(chan struct{}),
	}
}

// Start sends the warm shim its configuration; it then sandboxes itself
// and execs the plugin.
func (r *procRunner) Start(context.Context) error {
	return r.w.launch(r.cfg)
}

// Wait waits for the plugin process and records how it ended. An exit the
// host caused (SIGTERM or SIGKILL after it decided to stop the tree) is a
// normal end: go-plugin logs a non-nil error here at error level.
func (r *procRunner) Wait(context.Context) error {
	err := r.cmd.Wait()
	r.mu.Lock()
	r.state = r.cmd.ProcessState
	r.mu.Unlock()
	close(r.waited)
	if err != nil && r.stopping.Load() && killedByHost(r.cmd.ProcessState) {
		return nil
	}
	return err
}

// killedByHost reports whether a process ended the way the host's stop
// ends it: by SIGTERM or SIGKILL, or exiting 128+SIGTERM/SIGKILL as a
// PID namespace's init reports a child killed so.
func killedByHost(st *os.ProcessState) bool {
	if st == nil {
		return false
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal() == syscall.SIGTERM || ws.Signal() == syscall.SIGKILL
	}
	code := st.ExitCode()
	return code == 128+int(syscall.SIGTERM) || code == 128+int(syscall.SIGKILL)
}

// Kill stops the whole tree: SIGTERM, grace period, SIGKILL to the group
// and every remaining descendant.
func (r *procRunner) Kill(ctx context.Context) error {
	if r.pid == 0 {
		return nil
	}
	r.stopping.Store(true)
	ctx, cancel := context.WithTimeout(ctx, r.grace+5*time.Second)
	defer cancel()
	return killTree(ctx, r.g, r.grace)
}

// Stdout is the handshake channel.
func (r *procRunner) Stdout() io.ReadCloser { return r.stdout }

// Stderr is forwarded to the host's logger by go-plugin.
func (r *procRunner) Stderr() io.ReadCloser { return r.stderr }

// Name is the plugin path.
func (r *procRunner) Name() string { return r.name }

// ID is the pid of the plugin (the shim exec'd into it).
func (r *procRunner) ID() string {
	if r.pid == 0 {
		return ""
	}
	return strconv.Itoa(r.pid)
}

// Diagnose explains a failed handshake.
func (r *procRunner) Diagnose(context.Context) string {
	return fmt.Sprintf("plugin %s did not complete the go-plugin handshake; its last stderr output was:\n%s", r.name, r.stderr.Tail())
}

// PluginToHost translates nothing: plugin and host share the network.
func (r *procRunner) PluginToHost(n, a string) (string, string, error) { return n, a, nil }

// HostToPlugin translates nothing: plugin and host share the network.
func (r *procRunner) HostToPlugin(n, a string) (string, string, error) { return n, a, nil }

// hasExited reports, without a system call, whether the shim (and so the
// plugin) has exited, even if it was not reaped yet.
func (r *procRunner) hasExited() bool {
	select {
	case <-r.w.exited:
		return true
	default:
		return false
	}
}

// exitState returns how the process ended, once Wait has returned.
func (r *procRunner) exitState() *os.ProcessState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state
}

// tailReader passes reads through and remembers the last bytes read, so a
// crash can be explained ("out of memory") after the fact.
type tailReader struct {
	rc    io.ReadCloser
	max   int
	mu    sync.Mutex
	buf   []byte
	fatal []byte // from the first line of a Go crash report on
}

func newTailReader(rc io.ReadCloser, max int) *tailReader { return &tailReader{rc: rc, max: max} }

func (t *tailReader) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	if n > 0 {
		t.mu.Lock()
		// Search the new bytes with the end of the old ones, so a marker
		// split across reads is found.
		from := max(len(t.buf)-64, 0)
		t.buf = append(t.buf, p[:n]...)
		switch {
		case t.fatal == nil:
			for _, marker := range []string{"runtime/cgo: ", "runtime: ", "fatal error: ", "panic: ", "SIGSEGV", "SIGABRT", "SIGBUS"} {
				if i := bytes.Index(t.buf[from:], []byte(marker)); i >= 0 {
					t.fatal = append([]byte(nil), t.buf[from+i:]...)
					break
				}
			}
		case len(t.fatal) < 512 && bytes.IndexByte(t.fatal, '\n') < 0:
			// The runtime writes a fatal line in pieces.
			t.fatal = append(t.fatal, p[:n]...)
		}
		if len(t.buf) > t.max {
			t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
		}
		t.mu.Unlock()
	}
	return n, err
}

func (t *tailReader) Close() error { return t.rc.Close() }

// Fatal returns the first line of a Go crash report ("fatal error: ...",
// "runtime/cgo: ...", "panic: ..."), if one was read.
func (t *tailReader) Fatal() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	line := t.fatal
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	return string(line)
}

// Tail returns the last bytes read.
func (t *tailReader) Tail() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
