package subprocess

import (
	"fmt"
	"os"
	"strconv"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// runShim applies the sandbox to the current process and execs the plugin.
// Order matters: rlimits first (they need no privilege), then Landlock
// (whose syscalls the seccomp filter would not forbid, but which must see
// the paths before the working directory changes), then seccomp, then exec.
func runShim(cfg *shimConfig) error {
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
		if err := seccomp.LoadFilter(seccompFilter()); err != nil {
			return fmt.Errorf("seccomp: %w", err)
		}
	}
	path := cfg.Exe
	if cfg.FD >= 0 {
		path = "/proc/self/fd/" + strconv.Itoa(cfg.FD)
	}
	argv := append([]string{cfg.Exe}, cfg.Args...)
	return unix.Exec(path, argv, os.Environ())
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
		{"CPU", unix.RLIMIT_CPU, cfg.CPUSeconds},
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
	return nil
}

func applyLandlock(cfg *shimConfig) error {
	rules := []landlock.Rule{
		landlock.RODirs(cfg.ReadOnly...).IgnoreIfMissing(),
		landlock.RWDirs(cfg.ReadWrite...),
		landlock.RWFiles(cfg.RWFiles...).IgnoreIfMissing(),
	}
	// BestEffort downgrades to what the kernel supports; the host checked
	// the ABI beforehand and reports what is in force (Report).
	if err := landlock.V5.BestEffort().RestrictPaths(rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
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

func seccompFilter() seccomp.Filter {
	eperm := seccomp.ActionErrno | seccomp.Action(unix.EPERM)
	enosys := seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)
	return seccomp.Filter{
		NoNewPrivs: true,
		Flag:       seccomp.FilterFlagTSync,
		Policy: seccomp.Policy{
			DefaultAction: seccomp.ActionAllow,
			Syscalls: []seccomp.SyscallGroup{
				{Action: eperm, Names: deniedSyscalls},
				{Action: eperm, NamesWithCondtions: []seccomp.NameWithConditions{{
					Name: "clone",
					Conditions: seccomp.ArgumentConditions{{
						Argument: 0, Operation: seccomp.BitsSet, Value: cloneNamespaceFlags,
					}},
				}}},
				// clone3 passes its flags in memory a BPF filter cannot
				// read: make it look absent so libc falls back to clone.
				{Action: enosys, Names: []string{"clone3"}},
			},
		},
	}
}
