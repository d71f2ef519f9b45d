package subprocess

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/toolhost/toolhost/plugin"
)

// warmShim is a shim started ahead of time for one plugin binary: the Go
// start of the (large) host binary is paid before it is needed, and a start
// only sends the shim its configuration. It holds the verified executable
// (as fd 3), its scratch directory and its pids cgroup; it runs in its own
// process group and PID namespace and dies with the host like a plugin.
type warmShim struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	stdout   io.ReadCloser
	stderr   io.ReadCloser
	exited   chan struct{} // closed when the shim has exited (not yet reaped)
	key      string        // fileKey of the executable it holds
	lifeline int           // the shim's lifeline descriptor
	proxyFD  int           // the shim's proxy socket descriptor, or -1
	scratch  string
	g        *group
	// joined reports the host's move of the shim into its pids cgroup
	// (nil without one); the configuration, and with it the plugin's
	// start, waits for it.
	joined chan error
}

// prestart starts a warm shim for the pinned binary b of tool, in a network
// namespace of its own where the host can make one, with a proxy to hosts
// if the tool is granted some.
func (a *Adapter) prestart(b *pinnedBinary, tool string, hosts []plugin.HostRule) (*warmShim, error) {
	f, key, err := b.open()
	if err != nil {
		return nil, err
	}
	defer f.Close() // the child has its own copy
	scratch, err := a.scratchDir("p-")
	if err != nil {
		return nil, err
	}
	w := &warmShim{key: key, scratch: scratch, g: &group{sealed: a.hard.Seccomp, pidns: a.hard.PIDNamespace}}
	if a.cgroupParent != "" {
		dir, err := newCgroup(a.cgroupParent, fmt.Sprintf("t%d", a.seq.Add(1)), a.cfg.MaxThreads)
		if err != nil {
			os.RemoveAll(scratch)
			return nil, fmt.Errorf("pids cgroup: %w", err)
		}
		w.g.cgroup = dir
	}
	cmd := exec.Command(a.cfg.ShimPath, shimArg, "-", "") // the host moves it into its cgroup
	cmd.Env = []string{}
	cmd.Dir = scratch
	cmd.SysProcAttr = sysProcAttr(a.hard.PIDNamespace, a.hard.NetNamespace)
	var proxy *treeProxy
	if len(hosts) > 0 {
		if proxy, err = newTreeProxy(tool, hosts, a.cfg.Lookup, a.log); err != nil {
			removeCgroup(w.g.cgroup)
			os.RemoveAll(scratch)
			return nil, err
		}
	}
	var lcfg shimConfig
	cmd.ExtraFiles = extraFiles(f, proxy, &lcfg)
	w.lifeline, w.proxyFD = lcfg.Lifeline, lcfg.ProxyFD
	fail := func(err error) (*warmShim, error) {
		if proxy != nil {
			proxy.close()
		}
		removeCgroup(w.g.cgroup)
		os.RemoveAll(scratch)
		return nil, err
	}
	if w.stdin, err = cmd.StdinPipe(); err != nil {
		return fail(err)
	}
	if w.stdout, err = cmd.StdoutPipe(); err != nil {
		return fail(err)
	}
	if w.stderr, err = cmd.StderrPipe(); err != nil {
		return fail(err)
	}
	if err := startCmd(cmd); err != nil {
		return fail(err)
	}
	w.cmd = cmd
	w.g.root, w.g.pgid = cmd.Process.Pid, cmd.Process.Pid
	if w.g.cgroup != "" {
		// A cgroup v1 move can wait for an RCU grace period (measured
		// here: ~20 ms when no move happened just before). Made by the
		// host now, it overlaps the shim's own start (the Go runtime and
		// package initialisation of the host binary, ~10 ms) instead of
		// following it.
		w.joined = make(chan error, 1)
		go func(dir string, pid int) { w.joined <- moveToCgroup(dir, pid) }(w.g.cgroup, cmd.Process.Pid)
	}
	w.exited = make(chan struct{})
	go waitExit(w.g.root, w.exited)
	if proxy != nil {
		proxy.started()
		go func() { <-w.exited; proxy.close() }()
	}
	return w, nil
}

// launch sends the shim its configuration: from now on it becomes the
// plugin.
func (w *warmShim) launch(cfg *shimConfig) error {
	if w.joined != nil {
		err := <-w.joined
		w.joined <- err // for discard, which looks too
		if err != nil {
			return fmt.Errorf("pids cgroup: %w", err)
		}
	}
	cfg.Cgroup = "" // joined while waiting
	cfg.Dir = w.scratch
	cfg.FD, cfg.Lifeline, cfg.ProxyFD = 3, w.lifeline, w.proxyFD
	b, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	_, err = w.stdin.Write(b)
	if cerr := w.stdin.Close(); err == nil {
		err = cerr
	}
	return err
}

// discard kills an unused warm shim.
func (w *warmShim) discard() {
	if w.joined != nil {
		// The move must not outlive the shim: its pid, once reaped, could
		// be another process's by the time the move is made.
		err := <-w.joined
		w.joined <- err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = w.stdin.Close()
	_ = killTree(ctx, w.g, 0)
	_ = w.cmd.Wait()
	_ = os.RemoveAll(w.scratch)
}

// hasExited reports whether the warm shim died while waiting.
func (w *warmShim) hasExited() bool {
	select {
	case <-w.exited:
		return true
	default:
		return false
	}
}
