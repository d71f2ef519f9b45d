package subprocess

// group identifies one sandboxed process tree: its root (the plugin or
// command, which the shim became), its process group (the same number: the
// shim runs Setpgid and seccomp forbids leaving the group), and, where the
// kernel offers one, its pids cgroup, which caps its task count and lists
// every member however it was re-parented.
type group struct {
	root   int
	pgid   int
	cgroup string // cgroup directory, "" if none
	// sealed: the seccomp filter keeps every member in the process group,
	// so the group is the whole tree.
	sealed bool
	// pidns: root is the init of its own PID namespace, so SIGKILL to root
	// makes the kernel kill every other member at once.
	pidns bool
}
