package subprocess

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/sys/unix"
)

// runShim applies the sandbox to the current process and execs the plugin.
// Order matters: rlimits first (they need no privilege), then Landlock
// (whose syscalls the seccomp filter would not forbid, but which must see
// the paths before the working directory changes), then seccomp, then exec.
//
// Landlock domains, seccomp filters and no_new_privs belong to a thread and
// are inherited across execve by the thread that execs, so the shim sets them
// on one locked thread and execs from it: no all-threads synchronisation
// (which costs time, and which the cgo build of go-landlock does with
// signals) is needed.
func runShim(cfg *shimConfig) error {
	runtime.LockOSThread()
	if err := closeInherited(cfg.FD, cfg.Lifeline, cfg.ProxyFD); err != nil {
		return fmt.Errorf("closing inherited descriptors: %w", err)
	}
	if err := joinCgroup(cfg.Cgroup); err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	if cfg.PrivateProc {
		// Before Landlock, whose rule for /proc must name the new one.
		if err := mountPrivateProc(); err != nil {
			return fmt.Errorf("private /proc: %w", err)
		}
	}
	if cfg.NetNS {
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("network namespace: %w", err)
		}
	}
	if cfg.ProxyFD >= 0 {
		if !cfg.NetNS {
			return errors.New("a network proxy needs a network namespace")
		}
		if err := sendProxyListener(cfg.ProxyFD); err != nil {
			return fmt.Errorf("network proxy: %w", err)
		}
	}
	if err := applyRlimits(cfg); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if cfg.Landlock {
		if err := applyLandlock(cfg); err != nil {
			return err
		}
	}
	if err := os.Chdir(cfg.Dir); err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	if cfg.Seccomp {
		for _, f := range seccompFilters(cfg.Offline && !cfg.NetNS) {
			if err := seccomp.LoadFilter(f); err != nil {
				return fmt.Errorf("seccomp: %w", err)
			}
		}
	}
	path := cfg.Exe
	files := []uintptr{0, 1, 2}
	if cfg.FD >= 0 {
		// The verified executable becomes the child's fd 3.
		files = append(files, uintptr(cfg.FD))
		path = "/proc/self/fd/3"
	}
	argv := append([]string{cfg.Exe}, cfg.Args...)
	env := cfg.Env
	if env == nil {
		env = os.Environ()
	}
	if cfg.ProxyFD >= 0 {
		env = proxyEnv(env)
	}
	// Termination signals are the plugin's to handle: the shim exits when
	// it does. (Handled, not ignored, so the child starts with defaults.)
	signal.Notify(make(chan os.Signal, 1), unix.SIGTERM, unix.SIGINT, unix.SIGHUP)
	// Nothing the shim inherited reaches the plugin but what Files names:
	// a descriptor the host (or the application embedding it) leaked
	// without close-on-exec, the lifeline, the executable's own.
	if err := closeOnExecFrom(3); err != nil {
		return fmt.Errorf("close-on-exec: %w", err)
	}
	// Fork from this thread: Landlock, seccomp and no_new_privs are
	// per-thread and the child inherits this thread's.
	// The plugin dies with the shim (this thread never exits).
	sys := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if cfg.UID > 0 {
		// The child sets its groups, gid and uid before exec; leaving uid
		// 0 clears its capabilities, and an empty bounding set (inherited
		// from this thread) and no_new_privs keep any from coming back.
		if err := dropBoundingSet(); err != nil {
			return fmt.Errorf("capability bounding set: %w", err)
		}
		sys.Credential = &syscall.Credential{Uid: uint32(cfg.UID), Gid: uint32(cfg.GID), Groups: []uint32{}}
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Dir: cfg.Dir, Env: env, Files: files, Sys: sys})
	if err != nil {
		return fmt.Errorf("exec %s: %w", cfg.Exe, err)
	}
	if cfg.Lifeline >= 0 {
		go watchLifeline(cfg.Lifeline)
	}
	for {
		var (
			ws unix.WaitStatus
			ru unix.Rusage
		)
		wpid, err := unix.Wait4(-1, &ws, 0, &ru)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			os.Exit(shimExitCode)
		}
		if wpid != pid {
			continue // an orphan re-parented to the shim, the namespace's init
		}
		if ws.Signaled() {
			sig := ws.Signal()
			// Past its soft CPU limit a plugin that ignores SIGXCPU (Go
			// programs do) is killed at the hard one: say which limit.
			// The rusage counts the children the plugin reaped too (its
			// own time is not readable here: /proc is the host's, the
			// plugin's pid the namespace's), so another SIGKILL of a
			// plugin whose children used as much could be taken for
			// this; the host's own kills carry their reason and are not
			// affected.
			hard := time.Duration(cfg.CPUSeconds+cpuGrace) * time.Second
			// For the host's "last output" of the plugin: what ended it.
			fmt.Fprintf(os.Stderr, "toolhost shim: the plugin was killed by %v after %v of CPU time (hard limit %v)\n",
				sig, cpuTime(&ru).Round(time.Millisecond), hard)
			if sig == unix.SIGKILL && cfg.CPUSeconds > 0 && cpuTime(&ru) >= hard-100*time.Millisecond {
				sig = unix.SIGXCPU
			}
			os.Exit(128 + int(sig))
		}
		os.Exit(ws.ExitStatus())
	}
}

// mountPrivateProc gives the shim's mount namespace (new, made with its PID
// namespace) a procfs of its own on /proc: it shows the processes of the
// PID namespace, the plugin's tree, and none of the host's — whose
// /proc/<pid>/environ holds the operator's secrets. Mounts are made private
// first so that nothing propagates back to the host's namespace.
func mountPrivateProc() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting proc: %w", err)
	}
	return nil
}

// dropBoundingSet removes every capability from the calling thread's
// bounding set, up to the last one the kernel knows.
func dropBoundingSet() error {
	for c := 0; c < 64; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if err == unix.EINVAL { // past the kernel's last capability
				return nil
			}
			return err
		}
	}
	return nil
}

// watchLifeline waits for end of file on the lifeline pipe, whose write end
// only the host holds: the host is gone, however it died, and the shim
// kills its process group — the plugin and all its descendants — and
// itself. (In a PID namespace the shim is its init, and its death alone
// would take the namespace down.) Unlike the parent-death signal, which on
// this kernel did not always reach a plugin whose host was SIGKILLed, end
// of file on a pipe is certain.
func watchLifeline(fd int) {
	f := os.NewFile(uintptr(fd), "lifeline")
	buf := make([]byte, 1)
	for {
		if _, err := f.Read(buf); err != nil {
			break
		}
	}
	_ = unix.Kill(0, unix.SIGKILL)
	os.Exit(128 + int(unix.SIGKILL))
}

func applyRlimits(cfg *shimConfig) error {
	set := func(name string, res int, v uint64) error {
		if err := unix.Setrlimit(res, &unix.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("setrlimit %s=%d: %w", name, v, err)
		}
		return nil
	}
	if err := set("CORE", unix.RLIMIT_CORE, 0); err != nil {
		return err
	}
	for _, l := range []struct {
		name string
		res  int
		v    uint64
	}{
		{"DATA", unix.RLIMIT_DATA, cfg.DataBytes},
		{"FSIZE", unix.RLIMIT_FSIZE, cfg.FileBytes},
		{"NOFILE", unix.RLIMIT_NOFILE, cfg.OpenFiles},
	} {
		if l.v == 0 {
			continue
		}
		if err := set(l.name, l.res, l.v); err != nil {
			return err
		}
	}
	if v := cfg.CPUSeconds; v > 0 {
		// SIGXCPU at the soft limit (a C program dies of it), SIGKILL at
		// the hard one, cpuGrace later, for a program that ignores it.
		if err := unix.Setrlimit(unix.RLIMIT_CPU, &unix.Rlimit{Cur: v, Max: v + cpuGrace}); err != nil {
			return fmt.Errorf("setrlimit CPU=%d: %w", v, err)
		}
	}
	return nil
}

// cpuGrace is the time, in CPU seconds, between the soft CPU limit
// (SIGXCPU) and the hard one (SIGKILL).
const cpuGrace = 1

// cpuTime is the user and system time in ru.
func cpuTime(ru *unix.Rusage) time.Duration {
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// closeInherited closes the descriptors from 3 up that the shim inherited
// by accident — open without close-on-exec in the host, or in whatever
// started the host — except keep. The Go runtime opens its own
// close-on-exec, so a descriptor without the flag is one of those.
func closeInherited(keep ...int) error {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < 3 || slices.Contains(keep, fd) {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err == nil && flags&unix.FD_CLOEXEC == 0 {
			unix.Close(fd)
		}
	}
	return nil
}

// closeOnExecFrom marks every descriptor from first up close-on-exec.
func closeOnExecFrom(first int) error {
	err := unix.CloseRange(uint(first), ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err != unix.ENOSYS && err != unix.EINVAL {
		return err
	}
	// Before Linux 5.11: one by one.
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < first {
			continue
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && err != unix.EBADF {
			return err
		}
	}
	return nil
}

// Landlock access rights (x/sys/unix names them; these are the groups).
const (
	llRead = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	// llFile are the rights that apply to a file (not a directory).
	llFile = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// landlockHandled returns every filesystem right the kernel's ABI knows.
func landlockHandled(abi int) uint64 {
	h := uint64(1<<13 - 1) // ABI 1: execute ... make_sym
	if abi >= 2 {
		h |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		h |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		h |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return h
}

// applyLandlock restricts the calling thread: read (and execute) beneath
// ReadOnly, everything beneath ReadWrite, read and write of RWFiles, nothing
// elsewhere. Missing read-only paths are skipped; a missing read-write path
// is an error.
func applyLandlock(cfg *shimConfig) error {
	abi := landlockABI()
	if abi < 1 {
		return errors.New("landlock: not supported by this kernel")
	}
	handled := landlockHandled(abi)
	attr := unix.LandlockRulesetAttr{Access_fs: handled}
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr.Access_fs), 0)
	if e != 0 {
		return fmt.Errorf("landlock_create_ruleset: %w", e)
	}
	defer unix.Close(int(fd))
	add := func(path string, access uint64, mustExist bool) error {
		pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			if !mustExist && errors.Is(err, unix.ENOENT) {
				return nil
			}
			return fmt.Errorf("landlock: %s: %w", path, err)
		}
		defer unix.Close(pfd)
		rule := unix.LandlockPathBeneathAttr{Allowed_access: access & handled, Parent_fd: int32(pfd)}
		if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, unix.LANDLOCK_RULE_PATH_BENEATH,
			uintptr(unsafe.Pointer(&rule)), 0, 0, 0); e != 0 {
			return fmt.Errorf("landlock_add_rule %s: %w", path, e)
		}
		return nil
	}
	for _, p := range cfg.ReadOnly {
		if err := add(p, llRead, false); err != nil {
			return err
		}
	}
	for _, p := range cfg.ReadWrite {
		if err := add(p, handled, true); err != nil {
			return err
		}
	}
	for _, p := range cfg.RWFiles {
		if err := add(p, llFile, false); err != nil {
			return err
		}
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); e != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", e)
	}
	return nil
}

// cloneNamespaceFlags are the clone(2) flags that create namespaces; a
// plugin may not create any (that would let it escape the PID namespace or
// gain capabilities in a user namespace).
const cloneNamespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP

// deniedSyscalls fail with EPERM inside the sandbox.
var deniedSyscalls = []string{
	// Leaving the process group or session would hide a process from the
	// group kill.
	"setsid", "setpgid",
	// Inspecting or controlling other processes.
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	// Namespaces and mounts.
	"unshare", "setns", "mount", "umount2", "pivot_root", "chroot",
	"open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	// Kernel attack surface no tool needs.
	"bpf", "keyctl", "add_key", "request_key", "perf_event_open", "userfaultfd",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"reboot", "swapon", "swapoff", "acct", "quotactl", "open_by_handle_at",
	"name_to_handle_at", "iopl", "ioperm", "syslog", "settimeofday", "clock_settime",
	"adjtimex", "clock_adjtime", "sethostname", "setdomainname", "lookup_dcookie",
	"vhangup", "nfsservctl",
}

// seccompFilters are the shim's filters; noInet also refuses sockets of
// the families that reach a network (for an offline tool that has no
// network namespace of its own): unix sockets, which go-plugin uses, stay.
//
// Two filters, stacked: go-seccomp-bpf ends every syscall group with the
// policy's default action, so in one policy only the first group would
// ever apply (the namespace-flag clone rule and clone3's ENOSYS sat in
// later groups, unreachable, until issue 23). Every EPERM rule is in the
// first filter's one group; clone3's ENOSYS is a filter of its own. The
// kernel runs every filter and keeps the strictest answer; the two match
// disjoint calls.
func seccompFilters(noInet bool) []seccomp.Filter {
	eperm := seccomp.ActionErrno | seccomp.Action(unix.EPERM)
	enosys := seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)
	conditional := []seccomp.NameWithConditions{{
		Name: "clone",
		Conditions: seccomp.ArgumentConditions{{
			Argument: 0, Operation: seccomp.BitsSet, Value: cloneNamespaceFlags,
		}},
	}}
	if noInet {
		for _, fam := range []uint64{unix.AF_INET, unix.AF_INET6, unix.AF_PACKET} {
			conditional = append(conditional, seccomp.NameWithConditions{Name: "socket", Conditions: seccomp.ArgumentConditions{{
				Argument: 0, Operation: seccomp.Equal, Value: fam,
			}}})
		}
	}
	policy := func(g seccomp.SyscallGroup) seccomp.Filter {
		return seccomp.Filter{NoNewPrivs: true, Policy: seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: []seccomp.SyscallGroup{g}}}
	}
	return []seccomp.Filter{
		policy(seccomp.SyscallGroup{Action: eperm, Names: deniedSyscalls, NamesWithCondtions: conditional}),
		// clone3 passes its flags in memory a BPF filter cannot read:
		// make it look absent so libc falls back to clone.
		policy(seccomp.SyscallGroup{Action: enosys, Names: []string{"clone3"}}),
	}
}

// loopbackUp brings up the loopback device of the shim's new network
// namespace (a process may use 127.0.0.1 within its own tree; nothing
// else is there).
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("reading lo's flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing lo up: %w", err)
	}
	return nil
}

// stdinToDevNull replaces the warm shim's configuration pipe on fd 0.
func stdinToDevNull() error {
	fd, err := unix.Open("/dev/null", unix.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Dup2(fd, 0)
}
