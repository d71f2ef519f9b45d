package subprocess

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/plugin"
)

// The built-in tools' names, used as Source.Builtin (and as default tool
// names) in their specs.
const (
	BuiltinShellExec    = "shell.exec"
	BuiltinBashReadOnly = "bash.read-only"
)

const shellExecSchema = `{
  "type": "object",
  "properties": {
    "command": {"type": "string", "minLength": 1, "description": "Shell command line, run with /bin/sh -c"},
    "cwd": {"type": "string", "description": "Working directory: absolute, or relative to the first mounted directory. Default: the first mounted directory"},
    "timeout": {"type": "integer", "minimum": 1, "maximum": 600, "description": "Timeout in seconds (bounded by the tool's own timeout)"},
    "stdin": {"type": "string", "description": "Text piped to the command's standard input"}
  },
  "required": ["command"],
  "additionalProperties": false
}`

const bashReadOnlySchema = `{
  "type": "object",
  "properties": {
    "command": {"type": "string", "minLength": 1, "description": "A read-only command line: allowed programs (ls, cat, grep, find, wc, head, tail, ...) optionally piped into each other; no ';', '&&', command substitution or redirections that write"},
    "cwd": {"type": "string", "description": "Working directory: absolute, or relative to the first mounted directory. Default: the first mounted directory"},
    "timeout": {"type": "integer", "minimum": 1, "maximum": 600, "description": "Timeout in seconds (bounded by the tool's own timeout)"}
  },
  "required": ["command"],
  "additionalProperties": false
}`

// BuiltinSpecs returns the specs of the built-in tools, for the host to
// register (with the operator's mounts added to Capabilities.Mounts; the
// first mount is the default working directory). Both run commands through
// the same sandboxed launcher as plugins, so both need tool.exec.subprocess:
//
//   - shell.exec: any command via /bin/sh -c; tier privileged, so calls
//     need approval by default.
//   - bash.read-only: an allowlist of read-only programs; anything else is
//     refused before it runs, and Landlock keeps every mount read-only.
func BuiltinSpecs() []plugin.Spec {
	return []plugin.Spec{
		{
			Name:         BuiltinShellExec,
			Source:       plugin.Source{Kind: Kind, Builtin: BuiltinShellExec},
			Tier:         plugin.TierPrivileged,
			Description:  "Run a shell command and return its exit code, stdout and stderr. The whole process tree is killed on timeout.",
			InputSchema:  json.RawMessage(shellExecSchema),
			Capabilities: plugin.Capabilities{Subprocess: true},
		},
		{
			Name:         BuiltinBashReadOnly,
			Source:       plugin.Source{Kind: Kind, Builtin: BuiltinBashReadOnly},
			Tier:         plugin.TierReadOnly,
			Description:  "Run a read-only command (" + strings.Join(readOnlyCommandNames(), ", ") + "), optionally piped into another of them, and return its exit code, stdout and stderr.",
			InputSchema:  json.RawMessage(bashReadOnlySchema),
			Capabilities: plugin.Capabilities{Subprocess: true},
		},
	}
}

// commandTool is shell.exec or bash.read-only: each call runs one command
// line in a fresh sandboxed process tree with a fresh scratch directory.
type commandTool struct {
	a        *Adapter
	spec     plugin.Spec
	readOnly bool
	desc     plugin.Descriptor
	log      hclog.Logger

	mu      sync.Mutex
	running map[*group]struct{} // running commands
	closed  bool
}

var _ plugin.Tool = (*commandTool)(nil)

func (a *Adapter) loadBuiltin(spec *plugin.Spec) (*commandTool, error) {
	var def plugin.Spec
	for _, s := range BuiltinSpecs() {
		if s.Source.Builtin == spec.Source.Builtin {
			def = s
		}
	}
	if def.Name == "" {
		return nil, plugin.Errorf(plugin.CodeToolNotFound, "no built-in subprocess tool %q (have %s, %s)",
			spec.Source.Builtin, BuiltinShellExec, BuiltinBashReadOnly)
	}
	// The tier is the built-in's unless the operator raises it; shell.exec
	// runs any command, so its tier (and with it approval by default) cannot
	// be lowered: an operator who trusts every call says approval = "never".
	switch {
	case spec.Tier == 0:
		spec.Tier = def.Tier
	case spec.Tier < def.Tier && def.Tier == plugin.TierPrivileged:
		return nil, plugin.Errorf(plugin.CodeCapabilityDenied,
			"%s runs any command: its tier is %s and cannot be lowered to %s (to skip approvals, set approval = \"never\")",
			def.Name, def.Tier, spec.Tier)
	}
	t := &commandTool{a: a, spec: *spec, readOnly: def.Name == BuiltinBashReadOnly,
		log: a.log.Named(spec.Name), running: map[*group]struct{}{}}
	t.spec.Limits = spec.Limits.WithDefaults(plugin.DefaultLimits())
	t.desc = plugin.Descriptor{Name: spec.Name, Description: def.Description, InputSchema: def.InputSchema}
	if spec.Description != "" {
		t.desc.Description = spec.Description
	}
	if len(spec.InputSchema) > 0 {
		t.desc.InputSchema = spec.InputSchema
	}
	if t.readOnly {
		t.desc.Annotations = &plugin.Annotations{ReadOnlyHint: true}
	}
	return t, nil
}

// Descriptor returns the tool's descriptor.
func (t *commandTool) Descriptor() plugin.Descriptor { return t.desc }

type commandArgs struct {
	Command string  `json:"command"`
	Cwd     string  `json:"cwd"`
	Timeout *int    `json:"timeout"`
	Stdin   *string `json:"stdin"`
}

// Call runs the command line.
func (t *commandTool) Call(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
	limits := limitsOf(&t.spec, req)
	var args commandArgs
	if err := req.DecodeArguments(&args); err != nil {
		return nil, err
	}
	if strings.TrimSpace(args.Command) == "" {
		return nil, plugin.Errorf(plugin.CodeInvalidRequest, "command: expected a non-empty command line, got %q", args.Command)
	}
	if strings.ContainsRune(args.Command, 0) {
		return nil, plugin.Errorf(plugin.CodeInvalidRequest, "command: contains a NUL byte")
	}
	timeout := limits.Timeout
	if args.Timeout != nil {
		if *args.Timeout < 1 || *args.Timeout > 600 {
			return nil, plugin.Errorf(plugin.CodeInvalidRequest, "timeout: expected 1 to 600 seconds, got %d", *args.Timeout)
		}
		timeout = min(timeout, time.Duration(*args.Timeout)*time.Second)
	}
	if t.readOnly {
		if args.Stdin != nil {
			return nil, plugin.Errorf(plugin.CodeInvalidRequest, "stdin: bash.read-only takes no stdin")
		}
		line, err := readOnlyLine(args.Command)
		if err != nil {
			return nil, &plugin.Error{Code: plugin.CodePermissionDenied, Message: err.Error() + "; nothing was run"}
		}
		args.Command = line
	}
	mounts := t.mounts(req)
	cwd, err := resolveCwd(args.Cwd, mounts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return t.run(ctx, args, cwd, mounts, limits, timeout)
}

// mounts returns the directories the command may see: the request's
// effective capabilities (declared ∩ granted), else the spec's.
func (t *commandTool) mounts(req *plugin.Request) []plugin.Mount {
	ms := t.spec.Capabilities.Mounts
	if req != nil && req.Spec != nil {
		ms = req.Spec.Capabilities.Mounts
	}
	if t.readOnly {
		ro := make([]plugin.Mount, len(ms))
		for i, m := range ms {
			m.ReadOnly = true
			ro[i] = m
		}
		ms = ro
	}
	return ms
}

// resolveCwd resolves the working directory inside the mounts. Without
// mounts the command runs in its scratch directory ("" is returned).
func resolveCwd(cwd string, mounts []plugin.Mount) (string, error) {
	if len(mounts) == 0 {
		if cwd != "" {
			return "", plugin.Errorf(plugin.CodePermissionDenied, "cwd: this tool has no mounted directories, so it runs in a scratch directory; omit cwd")
		}
		return "", nil
	}
	p := cwd
	if p == "" {
		p = mounts[0].HostPath
	} else if !filepath.IsAbs(p) {
		p = filepath.Join(mounts[0].HostPath, p)
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(p))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", plugin.Errorf(plugin.CodeFileNotFound, "cwd: %s does not exist", cwd)
		}
		return "", plugin.Errorf(plugin.CodeInvalidRequest, "cwd: %v", err)
	}
	if st, err := os.Stat(real); err != nil || !st.IsDir() {
		return "", plugin.Errorf(plugin.CodeInvalidRequest, "cwd: %s is not a directory", cwd)
	}
	for _, m := range mounts {
		root, err := filepath.EvalSymlinks(m.HostPath)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(root, real); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return real, nil
		}
	}
	names := make([]string, len(mounts))
	for i, m := range mounts {
		names[i] = m.HostPath
	}
	return "", plugin.Errorf(plugin.CodePermissionDenied, "cwd: %s is outside the directories this tool may use (%s)", cwd, strings.Join(names, ", "))
}

// run starts the command through the shim and collects its output.
func (t *commandTool) run(ctx context.Context, args commandArgs, cwd string, mounts []plugin.Mount, limits plugin.Limits, timeout time.Duration) (*plugin.Result, error) {
	a := t.a
	scratch, err := a.scratchDir("c-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	if cwd == "" {
		cwd = scratch
	}
	shell := "/bin/sh"
	if t.readOnly {
		if _, err := os.Stat("/bin/bash"); err == nil {
			shell = "/bin/bash"
		}
	}
	command := args.Command
	if t.readOnly {
		// The command is readOnlyLine's: every word quoted but its glob
		// characters. The check saw the words before bash expands the
		// globs: a file named "-o" or "--output=x" must not become an
		// option of "sort *". Ignored by globs, such names stay reachable
		// as ./-o. (Setting GLOBIGNORE turns dotglob on; ".*" turns it
		// off.)
		command = "GLOBIGNORE='-*:.*'\n" + command
	}
	ro, rw := mountDirs(mounts)
	ls := &launchSpec{
		Exe: shell, Args: []string{"-c", command},
		Env: baseEnv(scratch, envNames(&t.spec)), Dir: cwd, Scratch: scratch,
		ReadOnly: ro, ReadWrite: rw,
		CPUSeconds: a.cfg.CPUSeconds,
		DataBytes:  uint64(limits.Memory + a.cfg.DataSlack),
		FileBytes:  uint64(a.cfg.MaxFileSize),
		OpenFiles:  uint64(limits.FileDescriptors),
		Offline:    len(t.spec.Capabilities.Hosts) == 0,
	}
	if !ls.Offline {
		if ls.Proxy, err = newTreeProxy(t.spec.Name, t.spec.Capabilities.Hosts, a.cfg.Lookup, t.log); err != nil {
			return nil, err
		}
		defer ls.Proxy.close()
	}
	cmd, g, err := a.command(ls)
	if err != nil {
		return nil, err
	}
	if args.Stdin != nil {
		cmd.Stdin = strings.NewReader(*args.Stdin)
	}
	// Our own pipes (not exec's copying goroutines), so Wait returns when
	// the shell exits even if a background child still holds the pipes;
	// the tree kill below then closes them.
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	stdout := &cappedBuffer{max: limits.Output}
	stderr := &cappedBuffer{max: limits.Output}
	var copies sync.WaitGroup
	copies.Add(2)
	go func() { defer copies.Done(); _, _ = io.Copy(stdout, outR); outR.Close() }()
	go func() { defer copies.Done(); _, _ = io.Copy(stderr, errR); errR.Close() }()

	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		outW.Close()
		errW.Close()
		copies.Wait()
		removeCgroup(g.cgroup)
		return nil, plugin.Errorf(plugin.CodeToolUnavailable, "the subprocess adapter is closed")
	}
	err = startCmd(cmd)
	if err == nil {
		g.root, g.pgid = cmd.Process.Pid, cmd.Process.Pid
		t.running[g] = struct{}{}
		if ls.Proxy != nil {
			ls.Proxy.started()
		}
	}
	t.mu.Unlock()
	outW.Close()
	errW.Close()
	if err != nil {
		copies.Wait()
		removeCgroup(g.cgroup)
		return nil, plugin.Errorf(plugin.CodeToolExecutionFailed, "starting %s: %v", shell, err)
	}
	defer func() {
		t.mu.Lock()
		delete(t.running, g)
		t.mu.Unlock()
	}()

	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	stopWatch := make(chan struct{})
	limitHit := make(chan *plugin.Error, 1)
	go func() {
		if e, _ := a.watchTree(stopWatch, exited, g, limits.Memory); e != nil {
			limitHit <- e
		}
	}()

	var failure error
	select {
	case <-exited:
	case e := <-limitHit:
		failure = e
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			failure = &plugin.Error{Code: plugin.CodeToolExecutionTimeout,
				Message: fmt.Sprintf("the command did not finish within %s; its whole process tree was killed", timeout),
				Err:     context.DeadlineExceeded}
		} else {
			failure = ctx.Err()
		}
	}
	close(stopWatch)
	// Kill whatever is left: everything on failure, background children
	// after a normal exit.
	kctx, kcancel := context.WithTimeout(context.Background(), 10*time.Second)
	if err := killTree(kctx, g, 0); err != nil {
		t.log.Error("command processes survived the kill", "error", err)
	}
	kcancel()
	<-exited
	copies.Wait()
	if failure != nil {
		return nil, failure
	}
	code := exitCode(cmd.ProcessState, waitErr)
	if code == shimExitCode && strings.HasPrefix(stderr.String(), "toolhost shim:") {
		return nil, plugin.Errorf(plugin.CodeToolExecutionFailed, "the sandbox could not start the command: %s", strings.TrimSpace(stderr.String()))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Exit code: %d\n--- stdout ---\n", code)
	b.WriteString(stdout.String())
	if stdout.Len() > 0 && !strings.HasSuffix(stdout.String(), "\n") {
		b.WriteByte('\n')
	}
	b.WriteString("--- stderr ---\n")
	b.WriteString(stderr.String())
	for _, c := range []struct {
		name string
		buf  *cappedBuffer
	}{{"stdout", stdout}, {"stderr", stderr}} {
		if c.buf.dropped > 0 {
			fmt.Fprintf(&b, "\n[%s capped at %s: %d more bytes dropped]", c.name, plugin.FormatSize(limits.Output), c.buf.dropped)
		}
	}
	return &plugin.Result{Content: []plugin.Content{plugin.Text(b.String())}}, nil
}

// stopAll kills running commands and refuses new ones.
func (t *commandTool) stopAll() {
	t.mu.Lock()
	t.closed = true
	groups := make([]*group, 0, len(t.running))
	for g := range t.running {
		groups = append(groups, g)
	}
	t.mu.Unlock()
	for _, g := range groups {
		ctx, cancel := context.WithTimeout(context.Background(), t.a.cfg.KillGrace+10*time.Second)
		_ = killTree(ctx, g, t.a.cfg.KillGrace)
		cancel()
	}
}

// exitCode returns the command's exit status, 128+signal when killed.
func exitCode(st *os.ProcessState, err error) int {
	if st == nil {
		if err != nil {
			return -1
		}
		return 0
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}

// cappedBuffer keeps the first max bytes written and counts the rest.
type cappedBuffer struct {
	max     int64
	buf     bytes.Buffer
	dropped int64
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	room := c.max - int64(c.buf.Len())
	if room <= 0 {
		c.dropped += int64(len(p))
		return len(p), nil
	}
	if int64(len(p)) > room {
		c.buf.Write(p[:room])
		c.dropped += int64(len(p)) - room
		return len(p), nil
	}
	return c.buf.Write(p)
}

func (c *cappedBuffer) String() string { return c.buf.String() }
func (c *cappedBuffer) Len() int       { return c.buf.Len() }
