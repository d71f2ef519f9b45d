package subprocess

import (
	"fmt"
	"runtime"
	"strings"
)

// Hardening says which parts of the subprocess sandbox are in force on this
// host. `host doctor` and `host tools` print it; every subprocess tool's
// load-time warning repeats it.
type Hardening struct {
	// OS is runtime.GOOS.
	OS string
	// Supported is false where the subprocess tier refuses to run at all.
	Supported bool
	// Seccomp: the shim installs its syscall filter.
	Seccomp bool
	// LandlockABI is the kernel's Landlock ABI version (0: none); Landlock
	// is in force when it is at least 1.
	LandlockABI int
	Landlock    bool
	// Subreaper: the host is the child subreaper of its descendants (New
	// makes it one when plugins get no PID namespace), so an orphan
	// re-parents to the host rather than to init. In a PID namespace the
	// shim, the namespace's init, is where orphans re-parent, and the host
	// is deliberately not a subreaper: the namespace's last processes would
	// come to it as zombies when the namespace ends.
	Subreaper bool
	// PIDNamespace: each plugin is the init of its own PID namespace, so the
	// kernel kills all its descendants when it dies.
	PIDNamespace bool
	// PIDsCgroup: each process tree has its own pids cgroup capping its
	// task count at Config.MaxThreads.
	PIDsCgroup bool
	// ParentDeathSignal: a plugin gets SIGKILL when its shim dies (the
	// shim forks it from a thread that never exits). The host itself does
	// not use the parent-death signal: see DiesWithHost.
	ParentDeathSignal bool
	// NetNamespace: every tree runs in a network namespace of its own,
	// which holds a loopback device and, for a tool granted hosts, the
	// host's allow-listing proxy. Without it, a tool granted no hosts has
	// inet sockets refused by seccomp, and one granted hosts is refused.
	NetNamespace bool
	// PrivateProc: each plugin sees a procfs of its own on /proc (PID and
	// mount namespaces), which lists its tree and nothing of the host's.
	PrivateProc bool
	// RunAs is the uid:gid plugins run as, without capabilities, when the
	// host runs as root; "" when they keep the host's (unprivileged) user.
	RunAs string
	// DiesWithHost: each shim holds the read end of a pipe only the host
	// writes to; at end of file (the host is gone, however it died) the shim
	// kills its plugin's whole process group and itself.
	DiesWithHost bool
	// Missing lists, in words, what is not in force and what follows.
	Missing []string
}

// Report probes the platform and returns what the subprocess sandbox can
// enforce here. It changes nothing: New decides on the subreaper and the
// pids cgroup, and its Adapter.Hardening reports them.
func Report() Hardening {
	h := Hardening{OS: runtime.GOOS, Supported: platformSupported}
	if !platformSupported {
		h.Missing = append(h.Missing, fmt.Sprintf("subprocess tools are refused on %s: %v", runtime.GOOS, errUnsupportedPlatform))
		return h
	}
	h.Seccomp = seccompSupported()
	h.LandlockABI = landlockABI()
	h.Landlock = h.LandlockABI >= 1
	h.PIDNamespace = pidNamespaceAllowed()
	h.NetNamespace = h.PIDNamespace // the same privilege (CAP_SYS_ADMIN) makes both
	h.DiesWithHost = true
	h.ParentDeathSignal = true
	h.PIDsCgroup = pidsCgroupAvailable()
	h.Subreaper = !h.PIDNamespace && subreaperSupported()
	if !h.Seccomp {
		h.Missing = append(h.Missing, "seccomp is unavailable: plugins may call setsid, ptrace, mount, unshare, bpf and keyctl")
	}
	if !h.Landlock {
		h.Missing = append(h.Missing, "Landlock is unavailable (kernel without it, or not enabled at boot): plugins can write wherever the host user can")
	} else if h.LandlockABI < 5 {
		h.Missing = append(h.Missing, fmt.Sprintf("Landlock ABI %d < 5: some file access rights (truncate, ioctl on devices) are not restricted", h.LandlockABI))
	}
	if !h.PIDNamespace && !h.Subreaper {
		h.Missing = append(h.Missing, "the kernel cannot make the host a child subreaper: orphaned plugin descendants re-parent to init (the kill still finds them by process group and cgroup)")
	}
	if !h.PIDNamespace {
		h.Missing = append(h.Missing, "no PID namespaces (needs CAP_SYS_ADMIN): orphans are found by process group and cgroup instead")
	}
	return h
}

// String formats the report for people, one fact a line.
func (h Hardening) String() string {
	var b strings.Builder
	yes := func(v bool) string {
		if v {
			return "yes"
		}
		return "no"
	}
	fmt.Fprintf(&b, "subprocess tier on %s: %s\n", h.OS, map[bool]string{true: "supported", false: "not supported"}[h.Supported])
	if h.Supported {
		fmt.Fprintf(&b, "  seccomp filter:        %s\n", yes(h.Seccomp))
		fmt.Fprintf(&b, "  landlock:              %s (ABI %d)\n", yes(h.Landlock), h.LandlockABI)
		if h.PIDNamespace {
			fmt.Fprintf(&b, "  child subreaper:       the shim (init of the plugin's PID namespace)\n")
		} else {
			fmt.Fprintf(&b, "  child subreaper:       %s\n", yes(h.Subreaper))
		}
		fmt.Fprintf(&b, "  pid namespace:         %s\n", yes(h.PIDNamespace))
		fmt.Fprintf(&b, "  private /proc:         %s\n", yes(h.PrivateProc))
		if h.NetNamespace {
			fmt.Fprintf(&b, "  network, none granted: none (a network namespace with loopback only)\n")
			fmt.Fprintf(&b, "  network, hosts granted: through the host's allow-listing proxy only\n")
		} else {
			fmt.Fprintf(&b, "  network, none granted: none (seccomp refuses inet sockets)\n")
			fmt.Fprintf(&b, "  network, hosts granted: refused (no network namespace to hold the tool to its proxy)\n")
		}
		if h.RunAs != "" {
			fmt.Fprintf(&b, "  runs as:               %s, no capabilities\n", h.RunAs)
		}
		fmt.Fprintf(&b, "  pids cgroup:           %s\n", yes(h.PIDsCgroup))
		fmt.Fprintf(&b, "  dies with the host:    %s (lifeline pipe)\n", yes(h.DiesWithHost))
		fmt.Fprintf(&b, "  rlimits:               CPU, DATA, FSIZE, NOFILE, CORE=0 (never AS)\n")
	}
	for _, m := range h.Missing {
		fmt.Fprintf(&b, "  missing: %s\n", m)
	}
	return b.String()
}
