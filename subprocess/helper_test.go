package subprocess

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"

	"github.com/toolhost/toolhost/internal/raceexit"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/shared"
	"github.com/toolhost/toolhost/shared/pluginv1"
)

// The test binary is its own shim (TestMain calls MaybeRunShim) and its own
// plugin: started with testPluginArg it serves testTools, or misbehaves in
// the way its mode says (go-plugin's TestHelperProcess habit).
const testPluginArg = "__toolhost_test_plugin__"

// Tests that mostly wait (for a timeout, a restart, a process to go) call
// t.Parallel. Those that load the machine (fork and thread bombs,
// spinners, allocation, filling the disk or the descriptor table), those
// that set the environment (t.Setenv), TestHostSecretsOutOfReach (which
// reads every process's environment) and TestLeftoverScan (which kills
// leftover shims) stay serial: Go runs the serial tests first, then the
// parallel ones, as many at once as -parallel (GOMAXPROCS by default).
// strayShims tells one test's shims from another's.

// fuse bounds every hostile behaviour, so that a containment bug cannot
// harm the machine: each hostile process gives up by itself after this long.
const fuse = 20 * time.Second

func TestMain(m *testing.M) {
	if len(os.Args) > 2 && (os.Args[1] == shimArg || os.Args[1] == testPluginArg && exitsByItself(os.Args[2])) {
		// The sandbox gives the shim and the plugin environments of
		// their own: without this, each exit of one under -race would
		// wait a second (internal/raceexit).
		raceexit.Reexec()
	}
	MaybeRunShim()
	if len(os.Args) > 2 && os.Args[1] == testPluginArg {
		runTestPlugin(os.Args[2], os.Args[3:])
		os.Exit(0)
	}
	raceexit.Setenv() // for the test hosts, which inherit the environment
	openExeDir()
	os.Exit(m.Run())
}

// exitsByItself reports whether a test plugin started in mode may exit by
// itself while a test waits: the descendants that hostile plugins start
// (a fork bomb's copies, sleepers, spinners) are only ever killed, and
// start at full speed, without executing again.
func exitsByItself(mode string) bool {
	switch mode {
	case "bombchild", "sleeper", "spinner":
		return false
	}
	return true
}

// openExeDir lets the sandboxed processes' identity (nobody, under a root
// host) search the directories of the test binary, which tests mount
// read-only: go test builds it in a 0700 directory.
func openExeDir() {
	exe, err := os.Executable()
	if err != nil || os.Geteuid() != 0 {
		return
	}
	for d := filepath.Dir(exe); d != os.TempDir() && d != "/" && d != "."; d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
}

// sandboxDir returns a fresh temporary directory that sandboxed processes
// may use as a read-write mount: its parent open to search (t.TempDir
// makes it 0700) and, under a root host, the directory given to the
// identity plugins run as — what an operator does for a writable mount.
func sandboxDir(t testing.TB) string {
	t.Helper()
	d := searchableTempDir(t)
	if os.Geteuid() == 0 {
		if err := os.Chown(d, int(nobody.UID), int(nobody.GID)); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// searchableTempDir is t.TempDir with its parent open to search.
func searchableTempDir(t testing.TB) string {
	t.Helper()
	d := t.TempDir()
	if err := os.Chmod(filepath.Dir(d), 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func runTestPlugin(mode string, rest []string) {
	go func() { time.Sleep(fuse + 10*time.Second); os.Exit(99) }()
	switch mode {
	case "serve":
		shared.Serve(testTools{})
	case "hang":
		time.Sleep(fuse)
	case "garbage":
		fmt.Println("this is not a go-plugin handshake \x00\xff")
		shared.Serve(testTools{})
	case "ignore-sigterm":
		signal.Ignore(syscall.SIGTERM)
		shared.Serve(testTools{})
	case "badjson":
		goplugin.Serve(&goplugin.ServeConfig{
			HandshakeConfig: shared.Handshake,
			Plugins:         goplugin.PluginSet{shared.PluginName: badJSONPlugin{}},
			GRPCServer:      goplugin.DefaultGRPCServer,
		})
	case "nosession", "roguesession", "silentsession":
		goplugin.Serve(&goplugin.ServeConfig{
			HandshakeConfig: shared.Handshake,
			Plugins:         goplugin.PluginSet{shared.PluginName: rawPlugin{mode: mode}},
			GRPCServer:      goplugin.DefaultGRPCServer,
		})
	case "bombchild":
		bomb(rest)
	case "escape-a":
		// setsid must fail (seccomp); then start a grandchild and exit,
		// orphaning it.
		code := 10
		if _, err := syscall.Setsid(); err == nil {
			code = 11
		}
		c := exec.Command("/proc/self/exe", append([]string{testPluginArg, "sleeper"}, rest...)...)
		if err := c.Start(); err != nil {
			os.Exit(12)
		}
		os.Exit(code)
	case "sleeper":
		signal.Ignore(syscall.SIGTERM)
		time.Sleep(fuse)
	case "spinner":
		spin()
	case "host":
		runTestHost(rest)
	case "shellhost":
		runShellHost(rest)
	default:
		fmt.Fprintf(os.Stderr, "unknown test plugin mode %q\n", mode)
		os.Exit(2)
	}
}

// bomb is one process of the fork bomb: it starts copies of itself as fast
// as it can, up to a fuse.
func bomb(rest []string) {
	deadline := time.Now().Add(fuse)
	for i := 0; i < 50 && time.Now().Before(deadline); i++ {
		c := exec.Command("/proc/self/exe", append([]string{testPluginArg, "bombchild"}, rest...)...)
		if c.Start() != nil {
			time.Sleep(10 * time.Millisecond)
		}
	}
	time.Sleep(time.Until(deadline))
}

type testTools struct{}

func (testTools) ListTools(context.Context) ([]shared.Tool, error) {
	var out []shared.Tool
	for _, n := range []string{"echo", "forkbomb", "threadbomb", "escape", "alloc", "filldisk", "fds",
		"sleep", "crash", "spawn", "env", "write", "syscalls", "rlimits", "cwd", "spin", "print", "fetch", "dial",
		"report", "ask"} {
		out = append(out, shared.Tool{Name: n, Description: "test tool " + n,
			InputSchema: json.RawMessage(`{"type":"object"}`)})
	}
	return out, nil
}

func (testTools) CallTool(ctx context.Context, name string, args json.RawMessage) (*shared.CallToolResult, error) {
	var a struct {
		Text string `json:"text"`
		N    int    `json:"n"`
		Path string `json:"path"`
		Op   string `json:"op"`
	}
	_ = json.Unmarshal(args, &a)
	self := func(mode string) *exec.Cmd {
		return exec.Command("/proc/self/exe", append([]string{testPluginArg, mode}, os.Args[3:]...)...)
	}
	switch name {
	case "echo":
		return shared.TextResult("echo: " + a.Text), nil
	case "report":
		// Reports, then says what the host answered to each.
		errs := []error{
			shared.Progress(ctx, 1, 3, "one "+a.Text),
			shared.Log(ctx, "warning", "log "+a.Text),
			shared.Progress(ctx, 1, 3, "not increasing"),
			shared.Progress(ctx, 3, 3, "three"),
		}
		return shared.TextResult(fmt.Sprint(errs)), nil
	case "ask":
		return askClient(ctx, a.Op, a.Text, a.N), nil
	case "forkbomb":
		bomb(os.Args[3:])
		return shared.TextResult("survived"), nil
	case "threadbomb":
		for i := 0; i < 5000; i++ {
			go func() {
				runtime.LockOSThread()
				time.Sleep(fuse)
			}()
			time.Sleep(100 * time.Microsecond)
		}
		time.Sleep(fuse)
		return shared.TextResult("survived"), nil
	case "escape":
		c := self("escape-a")
		err := c.Run()
		code := -1
		if c.ProcessState != nil {
			code = c.ProcessState.ExitCode()
		}
		go func() { time.Sleep(50 * time.Millisecond); os.Exit(0) }()
		return shared.TextResult(fmt.Sprintf("escape-a exit %d (%v)", code, err)), nil
	case "alloc":
		var keep [][]byte
		for i := 0; i < 200; i++ { // fuse: 3.2 GiB
			b := make([]byte, 16<<20)
			for j := 0; j < len(b); j += 4096 {
				b[j] = 1
			}
			keep = append(keep, b)
			time.Sleep(2 * time.Millisecond)
		}
		return shared.TextResult(fmt.Sprint(len(keep))), nil
	case "filldisk":
		// Writes n MiB (default 1024) to path (default "big", in the
		// scratch directory). With op "sigdfl" it first restores the
		// default action of SIGXFSZ, which the Go runtime ignores: the
		// write past RLIMIT_FSIZE then kills the plugin, as it would kill
		// a C program.
		if a.Path == "" {
			a.Path = "big"
		}
		if a.N == 0 {
			a.N = 1024
		}
		if a.Op == "sigdfl" {
			if err := defaultSignalAction(syscall.SIGXFSZ); err != nil {
				return nil, err
			}
		}
		f, err := os.Create(a.Path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		chunk := make([]byte, 1<<20)
		var n int64
		for i := 0; i < a.N; i++ {
			w, err := f.Write(chunk)
			n += int64(w)
			if err != nil {
				return shared.ErrorResult("wrote %d bytes: %v", n, err), nil
			}
		}
		return shared.TextResult(fmt.Sprintf("wrote %d bytes", n)), nil
	case "fds":
		// Opens files until it cannot; with op "hold" it keeps them open
		// after the call (so the host can look at them), and op "release"
		// closes the held ones.
		if a.Op == "release" {
			heldMu.Lock()
			n := len(held)
			for _, f := range held {
				f.Close()
			}
			held = nil
			heldMu.Unlock()
			return shared.TextResult(fmt.Sprintf("released %d files", n)), nil
		}
		var files []*os.File
		defer func() {
			if a.Op == "hold" {
				heldMu.Lock()
				held = append(held, files...)
				heldMu.Unlock()
				return
			}
			for _, f := range files {
				f.Close()
			}
		}()
		for i := 0; i < 100000; i++ {
			f, err := os.Open("/dev/null")
			if err != nil {
				return shared.ErrorResult("opened %d files: %v", len(files), err), nil
			}
			files = append(files, f)
		}
		return shared.TextResult("no limit"), nil
	case "sleep":
		time.Sleep(fuse)
		return shared.TextResult("woke up"), nil
	case "crash":
		os.Exit(3)
	case "spawn":
		var pids []string
		for i := 0; i < a.N; i++ {
			c := self("sleeper")
			if err := c.Start(); err != nil {
				return nil, err
			}
			pids = append(pids, strconv.Itoa(c.Process.Pid))
		}
		return shared.TextResult(strings.Join(pids, " ")), nil
	case "env":
		return shared.TextResult(strings.Join(os.Environ(), "\x00")), nil
	case "write":
		err := os.WriteFile(a.Path, []byte("x"), 0o600)
		return shared.TextResult(fmt.Sprint(err)), nil
	case "syscalls":
		var out []string
		_, err := syscall.Setsid()
		out = append(out, fmt.Sprintf("setsid=%v", err))
		out = append(out, fmt.Sprintf("setpgid=%v", syscall.Setpgid(0, 0)))
		out = append(out, fmt.Sprintf("unshare=%v", unix.Unshare(unix.CLONE_NEWUSER)))
		_, _, e := unix.Syscall(unix.SYS_PTRACE, unix.PTRACE_TRACEME, 0, 0)
		out = append(out, fmt.Sprintf("ptrace=%v", errnoErr(e)))
		// A real descriptor of the plugin's own UTS namespace: joining it
		// would succeed (the tests run as root) unless seccomp refuses.
		if ns, err := os.Open("/proc/self/ns/uts"); err != nil {
			out = append(out, fmt.Sprintf("setns=open: %v", err))
		} else {
			out = append(out, fmt.Sprintf("setns=%v", unix.Setns(int(ns.Fd()), unix.CLONE_NEWUTS)))
			ns.Close()
		}
		_, _, e = unix.Syscall(unix.SYS_KEYCTL, 0, 0, 0)
		out = append(out, fmt.Sprintf("keyctl=%v", errnoErr(e)))
		_, _, e = unix.Syscall(unix.SYS_BPF, 0, 0, 0)
		out = append(out, fmt.Sprintf("bpf=%v", errnoErr(e)))
		out = append(out, fmt.Sprintf("mount=%v", unix.Mount("none", "/mnt", "tmpfs", 0, "")))
		// clone with namespace flags: CLONE_THREAD without CLONE_SIGHAND
		// makes the kernel refuse it (EINVAL) after seccomp had its say,
		// so nothing is ever cloned here.
		_, _, e = unix.RawSyscall(unix.SYS_CLONE, unix.CLONE_NEWUSER|unix.CLONE_THREAD, 0, 0)
		out = append(out, fmt.Sprintf("clone-newuser=%v", errnoErr(e)))
		// clone3 with no arguments: EINVAL from the kernel, ENOSYS from
		// the filter.
		_, _, e = unix.RawSyscall(unix.SYS_CLONE3, 0, 0, 0)
		out = append(out, fmt.Sprintf("clone3=%v", errnoErr(e)))
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if err == nil {
			unix.Close(fd)
		}
		out = append(out, fmt.Sprintf("socket-inet=%v", err))
		return shared.TextResult(strings.Join(out, " ")), nil
	case "rlimits":
		var out []string
		for _, r := range []struct {
			n string
			r int
		}{{"core", unix.RLIMIT_CORE}, {"cpu", unix.RLIMIT_CPU}, {"data", unix.RLIMIT_DATA},
			{"fsize", unix.RLIMIT_FSIZE}, {"nofile", unix.RLIMIT_NOFILE}, {"as", unix.RLIMIT_AS}} {
			var l unix.Rlimit
			_ = unix.Getrlimit(r.r, &l)
			out = append(out, fmt.Sprintf("%s=%d", r.n, l.Cur))
		}
		return shared.TextResult(strings.Join(out, " ")), nil
	case "cwd":
		d, err := os.Getwd()
		return shared.TextResult(fmt.Sprint(d, err)), nil
	case "spin":
		// Burns CPU in n child processes and in the plugin itself.
		for i := 0; i < a.N; i++ {
			if err := self("spinner").Start(); err != nil {
				return nil, err
			}
		}
		spin()
		return shared.TextResult("survived"), nil
	case "fetch":
		// Go's default client, as a plugin author's code would use it: it
		// reads HTTP_PROXY and HTTPS_PROXY. Path is the URL.
		resp, err := http.Get(a.Path)
		if err != nil {
			return shared.TextResult("fetch error: " + err.Error()), nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return shared.TextResult(fmt.Sprintf("status %d: %s", resp.StatusCode, b)), nil
	case "dial":
		// A direct connection, around the proxy. Path is host:port.
		c, err := net.DialTimeout("tcp", a.Path, 2*time.Second)
		if err != nil {
			return shared.TextResult("dial error: " + err.Error()), nil
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		b, _ := io.ReadAll(c)
		return shared.TextResult("dialled: " + string(b)), nil
	case "print":
		// Through go-plugin's stdio forwarding (os.Stdout and os.Stderr are
		// pipes to the host once Serve runs), and straight to descriptor 2,
		// the stderr the plugin was started with.
		fmt.Fprintln(os.Stdout, "plugin stdout: "+a.Text)
		fmt.Fprintln(os.Stderr, "plugin stderr: "+a.Text)
		_, err := syscall.Write(2, []byte("plugin fd2: "+a.Text+"\n"))
		return shared.TextResult(fmt.Sprint(err)), nil
	}
	return nil, shared.ErrUnknownTool
}

// held are the files the fds tool keeps open between calls.
var (
	heldMu sync.Mutex
	held   []*os.File
)

// spin burns CPU until the fuse.
func spin() {
	deadline := time.Now().Add(fuse)
	x := 0
	for time.Now().Before(deadline) {
		for i := 0; i < 1e6; i++ {
			x ^= i
		}
	}
	spinSink = x
}

var spinSink int

// defaultSignalAction restores the kernel's default action for sig, under
// the Go runtime, which ignores SIGXFSZ and SIGXCPU. An all-zero
// sigaction is SIG_DFL with no flags and an empty mask on every
// architecture.
func defaultSignalAction(sig syscall.Signal) error {
	var act [4]uint64
	_, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	return errnoErr(e)
}

func errnoErr(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// askClient asks the caller's client as op says and describes the answer.
func askClient(ctx context.Context, op, text string, n int) *shared.CallToolResult {
	describe := func(v any, err error) *shared.CallToolResult {
		var ce *shared.ClientError
		if errors.As(err, &ce) {
			return shared.ErrorResult("refused %s (%s): %s", ce.Code, ce.Limit, ce.Message)
		}
		if err != nil {
			return shared.ErrorResult("failed: %v", err)
		}
		b, _ := json.Marshal(v)
		return shared.TextResult(string(b))
	}
	switch op {
	case "sample":
		return describe(shared.Sample(ctx, shared.SampleRequest{Messages: []shared.SamplingMessage{shared.UserText(text)}, MaxTokens: 100}))
	case "elicit":
		return describe(shared.Elicit(ctx, shared.ElicitRequest{Message: text,
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)}))
	case "flood":
		for i := range n {
			if _, err := shared.Sample(ctx, shared.SampleRequest{Messages: []shared.SamplingMessage{shared.UserText(fmt.Sprint(i))}, MaxTokens: 1}); err != nil {
				return describe(nil, err)
			}
		}
		return shared.TextResult("all answered")
	case "parallel":
		// n asks at once on the one session: each answer reaches its asker.
		out := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				r, err := shared.Sample(ctx, shared.SampleRequest{Messages: []shared.SamplingMessage{shared.UserText(fmt.Sprint(i))}, MaxTokens: 1})
				if err != nil {
					out[i] = err.Error()
					return
				}
				out[i] = r.Content.Text
			})
		}
		wg.Wait()
		return shared.TextResult(strings.Join(out, "|"))
	}
	return shared.ErrorResult("unknown op %q", op)
}

// rawPlugin serves the tools service by hand: "nosession" as a plugin built
// before CallToolSession (echo only), "roguesession" a session that sends
// what no plugin should.
type rawPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	mode string
}

func (p rawPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	switch p.mode {
	case "nosession":
		pluginv1.RegisterToolsServer(s, noSessionServer{})
	case "silentsession":
		pluginv1.RegisterToolsServer(s, silentServer{})
	default:
		pluginv1.RegisterToolsServer(s, rogueServer{})
	}
	return nil
}

func (rawPlugin) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("server only")
}

type noSessionServer struct {
	pluginv1.UnimplementedToolsServer
}

func (noSessionServer) ListTools(context.Context, *pluginv1.ListToolsRequest) (*pluginv1.ListToolsResponse, error) {
	return &pluginv1.ListToolsResponse{Json: []byte(`{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`)}, nil
}

func (noSessionServer) CallTool(context.Context, *pluginv1.CallToolRequest) (*pluginv1.CallToolResponse, error) {
	return &pluginv1.CallToolResponse{Json: []byte(`{"content":[{"type":"text","text":"old plugin"}]}`)}, nil
}

type rogueServer struct {
	noSessionServer
}

// CallToolSession sends a malformed notification, a report of the wrong
// shape, an ask of an unknown kind, one over the size cap and one that is
// not JSON, then a result listing the host's answers.
func (rogueServer) CallToolSession(stream pluginv1.Tools_CallToolSessionServer) error {
	if _, err := stream.Recv(); err != nil {
		return err
	}
	for _, b := range []string{`{{{`, `{"progress":"lots"}`, `[1,2]`} {
		if err := stream.Send(&pluginv1.PluginMessage{Message: &pluginv1.PluginMessage_Notification{Notification: &pluginv1.Notification{Json: []byte(b)}}}); err != nil {
			return err
		}
	}
	asks := []*pluginv1.AskRequest{
		{Id: 1, Kind: "telepathy", Json: []byte(`{}`)},
		{Id: 2, Kind: "sampling", Json: []byte(`{"messages":[{"role":"user","content":{"type":"text","text":"` + strings.Repeat("x", 1<<20+100<<10) + `"}}],"maxTokens":1}`)},
		{Id: 3, Kind: "elicitation", Json: []byte(`not json`)},
	}
	for _, a := range asks {
		if err := stream.Send(&pluginv1.PluginMessage{Message: &pluginv1.PluginMessage_Ask{Ask: a}}); err != nil {
			return err
		}
	}
	answers := map[uint64]string{}
	for len(answers) < len(asks) {
		m, err := stream.Recv()
		if err != nil {
			return err
		}
		if a := m.GetAnswer(); a != nil {
			answers[a.GetId()] = string(a.GetJson())
		}
	}
	b, _ := json.Marshal(shared.TextResult(fmt.Sprintf("1=%s\n2=%s\n3=%s", answers[1], answers[2], answers[3])))
	return stream.Send(&pluginv1.PluginMessage{Message: &pluginv1.PluginMessage_Result{Result: &pluginv1.CallToolResponse{Json: b}}})
}

type silentServer struct {
	noSessionServer
}

// CallToolSession takes the call and ends the stream without a result.
func (silentServer) CallToolSession(stream pluginv1.Tools_CallToolSessionServer) error {
	_, err := stream.Recv()
	return err
}

// badJSONPlugin serves a tools service that answers with invalid JSON.
type badJSONPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
}

func (badJSONPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pluginv1.RegisterToolsServer(s, badJSONServer{})
	return nil
}

func (badJSONPlugin) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("server only")
}

type badJSONServer struct {
	pluginv1.UnimplementedToolsServer
}

func (badJSONServer) ListTools(context.Context, *pluginv1.ListToolsRequest) (*pluginv1.ListToolsResponse, error) {
	return &pluginv1.ListToolsResponse{Json: []byte(`{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`)}, nil
}

func (badJSONServer) CallTool(context.Context, *pluginv1.CallToolRequest) (*pluginv1.CallToolResponse, error) {
	return &pluginv1.CallToolResponse{Json: []byte("\x00garbage{{{")}, nil
}

// runTestHost is a host process for TestHostKilled: it loads plugins that
// start descendants, prints their pids, and waits to be killed.
func runTestHost(rest []string) {
	a, err := New(Config{ScratchDir: rest[0], KillGrace: 200 * time.Millisecond,
		NoPIDNamespace: os.Getenv("TOOLHOST_TEST_NOPIDNS") != ""})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	ctx := context.Background()
	var all []string
	for i := 0; i < 2; i++ {
		spec := testSpec(testPluginSum(), "spawn", "serve", rest[1])
		spec.Name = fmt.Sprintf("spawn%d", i)
		tool, err := a.Load(ctx, spec)
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		res, err := tool.Call(ctx, &plugin.Request{Arguments: json.RawMessage(`{"n":3}`)})
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		all = append(all, res.TextContent())
	}
	fmt.Println("READY", strings.Join(all, " "))
	time.Sleep(fuse)
}

// runShellHost is a host in a process of its own, whose environment the
// test sets: it runs one shell.exec command (args: scratch directory,
// workspace, command; "HOSTPID" in the command becomes the host's pid)
// and prints the tool's answer.
func runShellHost(rest []string) {
	a, err := New(Config{ScratchDir: rest[0], KillGrace: 200 * time.Millisecond})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	defer a.Close()
	var spec plugin.Spec
	for _, s := range BuiltinSpecs() {
		if s.Name == BuiltinShellExec {
			spec = s
		}
	}
	spec.Capabilities.Mounts = []plugin.Mount{{HostPath: rest[1], GuestPath: "/workspace"}}
	tool, err := a.Load(context.Background(), &spec)
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	cmd := strings.ReplaceAll(rest[2], "HOSTPID", strconv.Itoa(os.Getpid()))
	args, _ := json.Marshal(map[string]string{"command": cmd})
	res, err := tool.Call(context.Background(), &plugin.Request{Arguments: args})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Println(a.Hardening().String())
	fmt.Print(res.TextContent())
}

var (
	sumOnce sync.Once
	sumVal  string
)

// testPluginSum is the sha256 of the test binary, the test plugin.
func testPluginSum() string {
	sumOnce.Do(func() {
		exe, err := os.Executable()
		if err != nil {
			panic(err)
		}
		sumVal, err = FileSHA256(exe)
		if err != nil {
			panic(err)
		}
	})
	return sumVal
}

// testSpec returns the spec of one tool of the test plugin, started in mode
// and marked (on its command line, inherited by its descendants) with mark.
func testSpec(sum, tool, mode, mark string) *plugin.Spec {
	exe, _ := os.Executable()
	return &plugin.Spec{
		Name: tool,
		Source: plugin.Source{Kind: Kind, Path: exe, SHA256: sum, Tool: tool,
			Args: []string{testPluginArg, mode, mark}},
		Tier:         plugin.TierSideEffecting,
		Capabilities: plugin.Capabilities{Subprocess: true},
	}
}

// newTestAdapter returns an adapter whose shim is the test binary, with
// limits small enough for hostile tests.
func newTestAdapter(t testing.TB, mod func(*Config)) *Adapter {
	t.Helper()
	cfg := Config{
		Logger:         hclog.New(&hclog.LoggerOptions{Name: "test", Level: testLogLevel(), Output: testWriter{t}}),
		ScratchDir:     searchableTempDir(t),
		StartTimeout:   5 * time.Second,
		KillGrace:      300 * time.Millisecond,
		SampleInterval: 20 * time.Millisecond,
		MaxProcesses:   20,
		MaxThreads:     200,
		RestartBackoff: 50 * time.Millisecond,
	}
	if mod != nil {
		mod(&cfg)
	}
	if raceEnabled {
		cfg.DataSlack = 1 << 50
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ta := &testAdapter{Adapter: a, test: topTest(t)}
	testAdaptersMu.Lock()
	testAdapters = append(testAdapters, ta)
	testAdaptersMu.Unlock()
	t.Cleanup(func() {
		a.Close()
		ta.closed.Store(true)
	})
	return a
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// newMark returns a marker unique to one test.
func newMark(t testing.TB) string {
	return fmt.Sprintf("mark-%s-%d", strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()), time.Now().UnixNano())
}

// marked lists the live (non-zombie) processes whose command line contains mark.
func marked(mark string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(b), mark) {
			continue
		}
		if alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// assertNoneLeft waits up to d for every marked process to be gone, and
// for every shim of this test process that no live tool owns (see
// strayShims).
func assertNoneLeft(t testing.TB, mark string, d time.Duration) {
	t.Helper()
	assertLeft(t, mark, 0, d)
}

// assertLeft waits up to d until exactly want processes carry mark (a
// plugin that keeps running after a hostile call: want 1, the plugin
// alone) and no stray shim of this test process is left.
func assertLeft(t testing.TB, mark string, want int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		left := marked(mark)
		stray := strayShims(t)
		if len(left) == want && len(stray) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var desc []string
			for _, pid := range left {
				desc = append(desc, describeProc(pid))
			}
			for _, s := range stray {
				desc = append(desc, "shim "+describeProc(s.pid)+" "+strings.Join(s.args, " "))
			}
			t.Fatalf("%d marked processes (want %d) and %d stray shims left: %s", len(left), want, len(stray), strings.Join(desc, " "))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func describeProc(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "State:") || strings.HasPrefix(l, "PPid:") || strings.HasPrefix(l, "NSpid:") || strings.HasPrefix(l, "SigIgn") {
			keep = append(keep, strings.Join(strings.Fields(l), " "))
		}
	}
	return fmt.Sprintf("%d(%s)", pid, strings.Join(keep, "; "))
}

// Shims carry no test marker: a plugin's shim runs as `<test binary>
// __toolhost_subprocess_shim__ - <cgroup>` (its configuration comes on
// stdin, see warm.go) and stays as the plugin's supervisor; a spare warm
// shim looks the same, without a plugin; a built-in's shim has its JSON
// configuration as argv[2]. They are found by their executable and argv[1].

// shimProc is one live shim process.
type shimProc struct {
	pid, ppid int
	start     string // start time in clock ticks since boot: tells a reused pid apart
	args      []string
}

// shims lists the live (non-zombie) processes that run the test binary as
// a shim, and whose parent is ppid (0: any parent).
func shims(ppid int) []shimProc {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	self, err := os.Stat(exe)
	if err != nil {
		panic(err)
	}
	ents, _ := os.ReadDir("/proc")
	var out []shimProc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
		if len(args) < 2 || args[1] != shimArg {
			continue
		}
		if fi, err := os.Stat("/proc/" + e.Name() + "/exe"); err != nil || !os.SameFile(fi, self) {
			continue
		}
		pp, start := statFields(pid)
		if !alive(pid) || ppid != 0 && pp != ppid {
			continue
		}
		out = append(out, shimProc{pid: pid, ppid: pp, start: start, args: args})
	}
	return out
}

// statFields returns the parent and the start time of pid from
// /proc/<pid>/stat.
func statFields(pid int) (ppid int, start string) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, ""
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[19] // fields 4 and 22 of proc(5)
}

// stillRunning reports whether the shim s is alive (the same process, not
// a later one with its pid).
func (s shimProc) stillRunning() bool {
	_, start := statFields(s.pid)
	return start == s.start && alive(s.pid)
}

// testAdapters are the adapters newTestAdapter made, with the top-level
// test that made each.
var (
	testAdaptersMu sync.Mutex
	testAdapters   []*testAdapter
)

type testAdapter struct {
	*Adapter
	test   string      // the top-level test that made it
	closed atomic.Bool // by the test's cleanup
}

// topTest is the name of t's top-level test.
func topTest(t testing.TB) string {
	name, _, _ := strings.Cut(t.Name(), "/")
	return name
}

// strayShims lists the shims this test process started (its children: a
// shim is started by the host and never re-parented while the host lives)
// that no live tool of a test adapter owns as its running plugin's
// supervisor, its spare warm shim or a running built-in command. Shims of
// other test processes (another package, another run of this one) have
// another parent and are not counted. A spare being warmed, a plugin being
// retired, are stray for a moment: callers poll (assertLeft).
//
// Tests that mostly wait run in parallel (t.Parallel), so a shim in the
// scratch directory of an open adapter of another top-level test — its
// working directory, whether a spare or a plugin's supervisor — is that
// test's to account for, and not counted here. Any other stray is counted
// for every test: one left behind by a test that has ended, one outside
// every adapter's scratch directory.
func strayShims(t testing.TB) []shimProc {
	owned := map[int]bool{}
	testAdaptersMu.Lock()
	adapters := slices.Clone(testAdapters)
	testAdaptersMu.Unlock()
	var others []string // scratch directories of other tests' open adapters
	for _, a := range adapters {
		if a.test != topTest(t) && !a.closed.Load() {
			others = append(others, a.cfg.ScratchDir+string(filepath.Separator))
		}
		a.mu.Lock()
		tools := slices.Clone(a.tools)
		a.mu.Unlock()
		for _, tool := range tools {
			switch tool := tool.(type) {
			case *pluginTool:
				tool.mu.Lock()
				if tool.cur != nil && !tool.cur.isStopped() {
					owned[tool.cur.runner.pid] = true
				}
				if tool.spare != nil {
					owned[tool.spare.cmd.Process.Pid] = true
				}
				tool.mu.Unlock()
			case *commandTool:
				tool.mu.Lock()
				for g := range tool.running {
					owned[g.root] = true
				}
				tool.mu.Unlock()
			}
		}
	}
	othersOwn := func(pid int) bool {
		cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
		if err != nil {
			return false
		}
		for _, dir := range others {
			if strings.HasPrefix(cwd, dir) {
				return true
			}
		}
		return false
	}
	var out []shimProc
	for _, s := range shims(os.Getpid()) {
		if !owned[s.pid] && !othersOwn(s.pid) {
			out = append(out, s)
		}
	}
	return out
}

// call calls tool with JSON arguments.
func call(t testing.TB, tool plugin.Tool, args string, timeout time.Duration) (*plugin.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return tool.Call(ctx, &plugin.Request{ID: "t", Name: tool.Descriptor().Name, Arguments: json.RawMessage(args)})
}

// mustServe asserts that the tool answers a normal call.
func mustServe(t testing.TB, tool plugin.Tool) {
	t.Helper()
	res, err := call(t, tool, `{"text":"still here"}`, 10*time.Second)
	if err != nil {
		t.Fatalf("host stopped serving: %v", err)
	}
	if got := res.TextContent(); got != "echo: still here" {
		t.Fatalf("echo = %q", got)
	}
}

func load(t testing.TB, a *Adapter, spec *plugin.Spec) plugin.Tool {
	t.Helper()
	tool, err := a.Load(context.Background(), spec)
	if err != nil {
		t.Fatalf("load %s: %v", spec.Name, err)
	}
	return tool
}

// startTestHost starts the test binary as a host process (runTestHost), with
// env added to its environment, and returns it with the pids its plugins
// started.
func startTestHost(t *testing.T, mark string, env ...string) (*exec.Cmd, []int) {
	exe, _ := os.Executable()
	cmd := exec.Command(exe, testPluginArg, "host", searchableTempDir(t), mark)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			if strings.HasPrefix(s.Text(), "READY") || strings.HasPrefix(s.Text(), "ERROR") {
				line <- s.Text()
				return
			}
		}
		close(line)
	}()
	var l string
	select {
	case l = <-line:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("test host did not get ready")
	}
	if !strings.HasPrefix(l, "READY") {
		cmd.Process.Kill()
		t.Fatalf("test host: %s", l)
	}
	var pids []int
	for _, f := range strings.Fields(l)[1:] {
		n, _ := strconv.Atoi(f)
		pids = append(pids, n)
	}
	return cmd, pids
}

var _ = filepath.Join

func testLogLevel() hclog.Level {
	if os.Getenv("TOOLHOST_TEST_DEBUG") != "" {
		return hclog.Debug
	}
	return hclog.Warn
}
