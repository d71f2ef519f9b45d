package subprocess

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/plugin"
)

// Kind is the source kind this adapter handles.
const Kind = "subprocess"

// Config configures an [Adapter]. The zero value of every field but Logger
// means "use the default".
type Config struct {
	// Logger is the root logger; the adapter logs under "subprocess".
	Logger hclog.Logger
	// ScratchDir is where per-process scratch directories (the plugin's
	// working directory, HOME and TMPDIR) and go-plugin socket directories
	// are created; created 0700 if missing. Keep it short: unix socket paths
	// are limited to 108 bytes. Default: a fresh directory under
	// os.TempDir(), removed by Close.
	ScratchDir string
	// ShimPath is the executable re-executed as the sandbox shim; it must
	// call MaybeRunShim first thing in main. Default: os.Executable(). Tests
	// point it at the test binary, whose TestMain calls MaybeRunShim.
	ShimPath string
	// InstalledDir holds plugin binaries installed from a registry (the
	// registry cache): a pinned path inside it is accepted as well as one
	// inside PluginDir.
	InstalledDir string
	// Lookup resolves host names for the network proxy of tools granted
	// hosts; nil uses the system resolver. Resolved addresses are always
	// checked (internal/netguard).
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	// PluginDir, when set, confines plugin paths: relative paths are taken
	// inside it and no path may resolve (through "../" or symlinks) outside.
	PluginDir string
	// AllowUnpinned lets plugins without a sha256 pin load (with a warning).
	// By default an unpinned plugin is refused, and the error names the
	// binary's current sha256 so the operator can pin it.
	AllowUnpinned bool
	// StartTimeout bounds the start and go-plugin handshake. Default 5s.
	StartTimeout time.Duration
	// KillGrace is how long a plugin has between SIGTERM and SIGKILL.
	// Default 2s.
	KillGrace time.Duration
	// SampleInterval is the watchdog's sampling period. Default 50ms.
	SampleInterval time.Duration
	// MaxProcesses and MaxThreads bound a plugin's whole process tree (the
	// watchdog kills it beyond them). Defaults 64 and 512.
	MaxProcesses int
	MaxThreads   int
	// CPUSeconds is the CPU time budget of one plugin process over its life:
	// RLIMIT_CPU for each process, and for the whole tree in the watchdog.
	// Default 600.
	CPUSeconds uint64
	// MaxFileSize is RLIMIT_FSIZE, the largest file a plugin may write.
	// Default 64 MiB.
	MaxFileSize int64
	// DataSlack is added to a tool's memory limit to form RLIMIT_DATA (a Go
	// runtime maps more than it touches). Default 256 MiB.
	DataSlack int64
	// RestartBackoff and MaxRestartBackoff bound the delay before a crashed
	// plugin is started again (doubling per consecutive failure). Defaults
	// 100ms and 30s.
	RestartBackoff    time.Duration
	MaxRestartBackoff time.Duration
	// NoPIDNamespace starts plugins without their own PID namespace even
	// where the host could create one; containment then rests on the
	// process group (which the seccomp filter keeps plugins from leaving)
	// and the subreaper. Meant for tests of that fallback.
	NoPIDNamespace bool
	// NoPIDsCgroup starts process trees without a pids cgroup even where
	// one is available; the task count is then bounded only by the
	// watchdog. Meant for tests of that fallback.
	NoPIDsCgroup bool
	// RunAs is the identity sandboxed processes run as when the host runs
	// as root: they then hold no capability and cannot read what root
	// alone may (/etc/shadow, /root, other processes' /proc entries). Nil
	// means 65534:65534 (nobody:nogroup). Read-write mounts must be
	// writable by it; the adapter hands it each process's scratch and
	// socket directories. Ignored when the host does not run as root
	// (processes then keep the host's unprivileged identity).
	RunAs *Identity
	// SystemReadDirs are readable (and executable) by every sandboxed
	// process, besides its own plugin directory and granted mounts.
	// Default: /usr /lib /lib64 /lib32 /bin /sbin /etc /opt /proc /sys /dev.
	SystemReadDirs []string

	ownScratch bool // ScratchDir was made by New; Close removes it
}

// Identity is a numeric user and group.
type Identity struct {
	UID, GID uint32
}

// String is "uid:gid".
func (id Identity) String() string { return fmt.Sprintf("%d:%d", id.UID, id.GID) }

// nobody is the identity sandboxed processes of a root host run as by
// default.
var nobody = Identity{UID: 65534, GID: 65534}

func (c Config) withDefaults() (Config, error) {
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.ShimPath == "" {
		exe, err := os.Executable()
		if err != nil {
			return c, fmt.Errorf("subprocess: shim executable: %w", err)
		}
		c.ShimPath = exe
	}
	if c.ScratchDir == "" {
		d, err := os.MkdirTemp("", "toolhost-sp-")
		if err != nil {
			return c, fmt.Errorf("subprocess: scratch directory: %w", err)
		}
		c.ScratchDir = d
		c.ownScratch = true
	}
	if err := os.MkdirAll(c.ScratchDir, 0o700); err != nil {
		return c, fmt.Errorf("subprocess: scratch directory: %w", err)
	}
	if d, err := filepath.EvalSymlinks(c.ScratchDir); err == nil {
		c.ScratchDir = d
	}
	def := func(p *time.Duration, v time.Duration) {
		if *p <= 0 {
			*p = v
		}
	}
	def(&c.StartTimeout, 5*time.Second)
	def(&c.KillGrace, 2*time.Second)
	def(&c.SampleInterval, 50*time.Millisecond)
	def(&c.RestartBackoff, 100*time.Millisecond)
	def(&c.MaxRestartBackoff, 30*time.Second)
	if c.MaxProcesses <= 0 {
		c.MaxProcesses = 64
	}
	if c.MaxThreads <= 0 {
		c.MaxThreads = 512
	}
	if c.CPUSeconds == 0 {
		c.CPUSeconds = 600
	}
	if c.MaxFileSize <= 0 {
		c.MaxFileSize = 64 << 20
	}
	if c.DataSlack <= 0 {
		c.DataSlack = 256 << 20
	}
	if c.SystemReadDirs == nil {
		c.SystemReadDirs = []string{"/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/opt", "/proc", "/sys", "/dev"}
	}
	return c, nil
}

// Adapter loads subprocess tools (go-plugin binaries) and the built-in
// shell tools. It is safe for concurrent use. Close stops every process it
// started; the processes also die with the host if it is killed.
type Adapter struct {
	cfg  Config
	log  hclog.Logger
	hard Hardening

	// runAs is who sandboxed processes run as, nil for the host's own
	// identity (a host that is not root).
	runAs *Identity
	// cgroupParent is the host's pids cgroup directory, "" if none.
	cgroupParent string
	seq          atomic.Uint64

	mu     sync.Mutex
	tools  []stopper
	closed bool
}

// stopper is a loaded tool that owns processes.
type stopper interface{ stopAll() }

var _ plugin.Adapter = (*Adapter)(nil)

// New returns an adapter. On Linux it probes which hardening the kernel
// offers (see Report), creates the adapter's pids cgroup, and, only where
// plugins cannot get a PID namespace, makes the host a child subreaper
// (process-wide, for good).
func New(cfg Config) (*Adapter, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	a := &Adapter{cfg: cfg, log: cfg.Logger.Named("subprocess"), hard: Report()}
	if a.hard.Supported && !cfg.NoPIDsCgroup {
		a.cgroupParent = pidsCgroupParent()
	}
	a.hard.PIDsCgroup = a.cgroupParent != ""
	if !a.hard.PIDsCgroup && a.hard.Supported {
		a.hard.Missing = append(a.hard.Missing, "no writable pids cgroup (cgroup v1 pids hierarchy): a fork bomb is bounded only by the watchdog's sampling, not by the kernel")
	}
	if cfg.NoPIDNamespace && a.hard.PIDNamespace {
		a.hard.PIDNamespace = false
		a.hard.Missing = append(a.hard.Missing, "PID namespaces disabled by configuration: orphans are found by process group and cgroup instead")
	}
	if a.hard.Supported && !a.hard.PIDNamespace {
		// Without a PID namespace, orphans would re-parent to init: keep
		// them as the host's children instead (process-wide, for good).
		// With one, the shim is the namespace's init and they re-parent to
		// it; the host must not be their subreaper then: when the namespace
		// ends, its last processes would come to the host as zombies that
		// no exec.Cmd waits for.
		a.hard.Subreaper = becomeSubreaper() == nil
		if !a.hard.Subreaper {
			a.hard.Missing = append(a.hard.Missing, "cannot become child subreaper: orphaned plugin descendants re-parent to init (the kill still finds them by process group and cgroup)")
		}
	}
	if a.hard.Supported {
		if err := a.isolateIdentity(); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// isolateIdentity decides who sandboxed processes run as and keeps them out
// of the host's /proc entries: a root host hands them RunAs (and they see
// only their own tree's /proc where they get a PID namespace); any other
// host makes itself non-dumpable, which puts its /proc/<pid>/environ, mem
// and fd out of reach of processes of its own uid that hold no
// CAP_SYS_PTRACE.
func (a *Adapter) isolateIdentity() error {
	a.hard.PrivateProc = a.hard.PIDNamespace
	if os.Geteuid() == 0 {
		id := nobody
		if a.cfg.RunAs != nil {
			id = *a.cfg.RunAs
		}
		if id.UID == 0 {
			return fmt.Errorf("subprocess: RunAs %s would leave plugins root", id)
		}
		a.runAs = &id
		a.hard.RunAs = id.String()
		// Each process's scratch and socket directories are its own, but
		// it must be able to pass through the adapter's.
		if err := os.Chmod(a.cfg.ScratchDir, 0o711); err != nil {
			return fmt.Errorf("subprocess: scratch directory: %w", err)
		}
		if err := reachable(a.cfg.ScratchDir, id, needSearch); err != nil {
			return fmt.Errorf("subprocess: the scratch directory is out of reach of the identity plugins run as (%s): %w; choose one under a directory others may search", id, err)
		}
	} else {
		a.hard.Missing = append(a.hard.Missing, "the host is not root: plugins run as the host's own user (without capabilities)")
	}
	if !a.hard.PrivateProc {
		if err := hideHostProc(); err != nil {
			return fmt.Errorf("subprocess: %w", err)
		}
		a.hard.Missing = append(a.hard.Missing, "no private /proc (needs PID and mount namespaces): plugins can list the host's processes; the host is made non-dumpable so that their environ, memory and descriptors stay unreadable")
	}
	return nil
}

// Kind returns "subprocess".
func (a *Adapter) Kind() string { return Kind }

// Hardening returns what this adapter enforces.
func (a *Adapter) Hardening() Hardening { return a.hard }

// Load returns the tool spec names: a go-plugin binary (Source.Path, pinned by
// Source.SHA256) or a built-in (Source.Builtin "shell.exec" or
// "bash.read-only"). The spec must carry the tool.exec.subprocess
// capability. A plugin whose spec gives no InputSchema is started once here
// to read its descriptor.
func (a *Adapter) Load(ctx context.Context, spec *plugin.Spec) (plugin.Tool, error) {
	if spec == nil {
		return nil, plugin.Errorf(plugin.CodeInvalidRequest, "subprocess: nil spec")
	}
	if !spec.Capabilities.Subprocess {
		return nil, &plugin.Error{Code: plugin.CodeCapabilityDenied, Tool: spec.Name,
			Message: "subprocess tools need the tool.exec.subprocess capability, which this tool's spec does not carry"}
	}
	if !platformSupported {
		return nil, &plugin.Error{Code: plugin.CodeToolUnavailable, Tool: spec.Name,
			Message: fmt.Sprintf("subprocess tools are not available on %s", runtime.GOOS), Err: errUnsupportedPlatform}
	}
	a.mu.Lock()
	closed := a.closed
	a.mu.Unlock()
	if closed {
		return nil, plugin.Errorf(plugin.CodeToolUnavailable, "subprocess adapter is closed")
	}
	if len(spec.Capabilities.Hosts) > 0 && !a.hard.NetNamespace {
		// Without a network namespace nothing keeps the tool's sockets
		// to the proxy: it would have the host's whole network.
		return nil, &plugin.Error{Code: plugin.CodeToolUnavailable, Tool: spec.Name,
			Message: fmt.Sprintf("this tool is granted network hosts (%s), but this host cannot give subprocess tools a network namespace (it needs root or CAP_SYS_ADMIN; see host doctor), so it cannot hold the tool to those hosts; run the host with that privilege, or grant the tool no hosts", hostList(spec.Capabilities.Hosts))}
	}
	var (
		t   plugin.Tool
		s   stopper
		err error
	)
	if spec.Source.Builtin != "" {
		if err := a.checkReachable(spec, ""); err != nil {
			return nil, err
		}
		var bt *commandTool
		bt, err = a.loadBuiltin(spec)
		t, s = bt, bt
	} else {
		var pt *pluginTool
		pt, err = a.loadPlugin(ctx, spec)
		t, s = pt, pt
	}
	if err != nil {
		var pe *plugin.Error
		if errors.As(err, &pe) {
			if pe.Tool == "" {
				pe.Tool = spec.Name
			}
			return nil, pe
		}
		return nil, &plugin.Error{Code: plugin.CodeToolUnavailable, Tool: spec.Name, Message: err.Error(), Err: err}
	}
	a.mu.Lock()
	a.tools = append(a.tools, s)
	a.mu.Unlock()
	a.log.Warn("subprocess tool loaded: it runs native code outside the wasm sandbox",
		"tool", spec.Name, "source", sourceName(spec), "seccomp", a.hard.Seccomp,
		"landlock_abi", a.hard.LandlockABI, "pid_namespace", a.hard.PIDNamespace,
		"pids_cgroup", a.hard.PIDsCgroup, "subreaper", a.hard.Subreaper)
	return t, nil
}

func sourceName(spec *plugin.Spec) string {
	if spec.Source.Builtin != "" {
		return "builtin:" + spec.Source.Builtin
	}
	return spec.Source.Path
}

// Close stops every process the adapter started and refuses further loads.
func (a *Adapter) Close() error {
	a.mu.Lock()
	tools := a.tools
	a.tools = nil
	a.closed = true
	a.mu.Unlock()
	var wg sync.WaitGroup
	for _, t := range tools {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.stopAll()
		}()
	}
	wg.Wait()
	removeCgroupWhenEmpty(a.cgroupParent) // after the trees' own, removed as they are reaped
	if a.cfg.ownScratch {
		_ = os.RemoveAll(a.cfg.ScratchDir)
	}
	return nil
}

// limitsOf returns the limits of a call: the request's (already defaulted by
// the host) or else the spec's with defaults applied.
func limitsOf(spec *plugin.Spec, req *plugin.Request) plugin.Limits {
	if req != nil && req.Spec != nil {
		return req.Spec.Limits.WithDefaults(plugin.DefaultLimits())
	}
	return spec.Limits.WithDefaults(plugin.DefaultLimits())
}

func hostList(rules []plugin.HostRule) string {
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = r.String()
	}
	return strings.Join(names, ", ")
}
