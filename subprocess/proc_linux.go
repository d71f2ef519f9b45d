package subprocess

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/shirou/gopsutil/v3/process"
	"golang.org/x/sys/unix"

	seccomp "github.com/elastic/go-seccomp-bpf"
)

const platformSupported = true

var (
	subreaperOnce sync.Once
	subreaperErr  error
)

// becomeSubreaper makes the host the child subreaper of its process tree, so
// that a plugin's descendants whose parent exits are re-parented to the host
// (where the kill can still find them) rather than to init. It is
// process-wide and idempotent.
func becomeSubreaper() error {
	subreaperOnce.Do(func() {
		subreaperErr = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	})
	return subreaperErr
}

// subreaperSupported reports whether the kernel knows the child-subreaper
// option (Linux 3.4): asking for it changes nothing, unlike setting it.
func subreaperSupported() bool {
	var v int32
	return unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&v)), 0, 0, 0) == nil
}

var (
	pidnsOnce sync.Once
	pidnsOK   bool
)

// pidNamespaceAllowed reports whether the host may create PID namespaces
// (it needs CAP_SYS_ADMIN). It is probed once with a throwaway child.
func pidNamespaceAllowed() bool {
	pidnsOnce.Do(func() {
		attr := &os.ProcAttr{Sys: &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWPID}}
		exe := "/bin/true"
		if _, err := os.Stat(exe); err != nil {
			exe = "/usr/bin/true"
		}
		p, err := os.StartProcess(exe, []string{"true"}, attr)
		if err == nil {
			_, _ = p.Wait()
			pidnsOK = true
		}
	})
	return pidnsOK
}

// sysProcAttr returns the attributes of a shim: its own process group and a
// PID namespace when allowed (the kernel then kills every process of the
// namespace when the shim, its init, dies). No parent-death signal: it
// would kill the shim before the shim could kill its group, and the
// lifeline pipe does that job reliably.
func sysProcAttr(pidns, netns bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if pidns {
		// A mount namespace with it, for the shim's private /proc.
		a.Cloneflags = unix.CLONE_NEWPID | unix.CLONE_NEWNS
	}
	if netns {
		// A network namespace holds a loopback device and nothing else:
		// no route out, no host loopback, no resolver.
		a.Cloneflags |= unix.CLONE_NEWNET
	}
	return a
}

// hideHostProc makes the host non-dumpable: its /proc/<pid> files then
// belong to root, and ptrace-mode checks refuse processes without
// CAP_SYS_PTRACE, plugins of the host's own uid among them. (It also turns
// off the host's core dumps.)
func hideHostProc() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("making the host non-dumpable: %w", err)
	}
	return nil
}

// landlockABI returns the kernel's Landlock ABI version, 0 if none.
func landlockABI() int {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return 0
	}
	return int(v)
}

func seccompSupported() bool { return seccomp.Supported() }

// signalGroup sends sig to process group pgid.
func signalGroup(pgid int, sig syscall.Signal) {
	if pgid > 1 {
		_ = unix.Kill(-pgid, sig)
	}
}

// tree finds the live processes of a sandboxed tree. With a pids cgroup the
// cgroup's member list is authoritative: every descendant is born in it and
// none can leave it (cgroupfs is read-only under Landlock, and the plugin
// runs in its own PID namespace or process group either way). Without one,
// it walks root's descendants through /proc/<pid>/task/<tid>/children: in a
// PID namespace of its own that is the whole tree, since orphans re-parent
// to root, its init. Else a sealed group's members are the processes of its
// process group, and an unsealed tree's walk, when full is set, adds every
// process of the group pgid found by a scan of all processes (orphans
// re-parented to the host).
//
// With limit > 0 it stops looking once it has found more than limit
// processes: a fork bomb outgrows any scan, and the watchdog only needs to
// know that the limit is passed.
func tree(ctx context.Context, g *group, full bool, limit int) []int {
	over := func(out []int) bool { return limit > 0 && len(out) > limit }
	if g.cgroup != "" {
		if members, err := readCgroupMembers(g.cgroup); err == nil {
			return members
		}
	}
	root, pgid := g.root, g.pgid
	if g.sealed && pgid > 1 && !g.pidns {
		// One getpgid per process on the machine: cheaper than walking
		// the children of every thread of the tree.
		var out []int
		pids, _ := process.PidsWithContext(ctx)
		for _, p := range pids {
			if g, err := unix.Getpgid(int(p)); err == nil && g == pgid && alive(int(p)) {
				if out = append(out, int(p)); over(out) {
					break
				}
			}
		}
		return out
	}
	seen := map[int]bool{}
	var out []int
	queue := []int{root}
	if full && !g.pidns {
		pids, _ := process.PidsWithContext(ctx)
		for _, p := range pids {
			if g, err := unix.Getpgid(int(p)); err == nil && g == pgid && pgid > 1 {
				queue = append(queue, int(p))
			}
		}
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if seen[pid] || pid <= 1 {
			continue
		}
		seen[pid] = true
		if !alive(pid) {
			continue
		}
		if out = append(out, pid); over(out) {
			break
		}
		queue = append(queue, children(pid)...)
	}
	return out
}

// children lists the direct children of pid, across all its threads.
func children(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	return s[i+2] != 'Z' && s[i+2] != 'X'
}

// killTree stops a plugin's process tree: SIGTERM to the group, up to
// grace for it to exit, then SIGKILL — first where the kernel makes one
// signal final, then to every process still found, repeated until none is
// left or ctx ends. It reaps re-parented descendants that became the
// host's zombies.
//
// The SIGKILL goes out before anything is listed: listing a fork bomb that
// no pids cgroup caps is a race with the bomb (on a busy machine the walk
// did not finish in 3 s). In a PID namespace, SIGKILL to its init (root)
// makes the kernel kill every member and refuse new PIDs in it, and the
// init's exit completes only once the namespace is empty, so waiting for
// root is waiting for the whole tree. A sealed process group (seccomp
// forbids setpgid and setsid) gets one kill(-pgid), which the kernel
// delivers to every member, a fork racing it included. The walk after
// that only confirms, and catches what escaped the group in an unsealed
// tree.
func killTree(ctx context.Context, g *group, grace time.Duration) error {
	if g == nil || g.root == 0 {
		return nil
	}
	// The cgroup can be removed only once its last member is reaped, which
	// is not this function's job: remove it in the background.
	defer func() { go removeCgroupWhenEmpty(g.cgroup) }()
	root, pgid := g.root, g.pgid
	if grace > 0 {
		signalGroup(pgid, syscall.SIGTERM)
		for _, p := range tree(ctx, g, true, 0) {
			_ = unix.Kill(p, syscall.SIGTERM)
		}
		deadline := time.Now().Add(grace)
		for time.Now().Before(deadline) {
			if len(tree(ctx, g, true, 1)) == 0 {
				return nil
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	if g.pidns {
		_ = unix.Kill(root, syscall.SIGKILL)
	}
	signalGroup(pgid, syscall.SIGKILL)
	if g.pidns && waitGone(ctx, root) {
		// The namespace is empty; what is left to do is reaping, which
		// the init did for its members and exec.Cmd does for root.
		return nil
	}
	var procs []int
	for i := 0; ; i++ {
		procs = tree(ctx, g, true, 0)
		if len(procs) == 0 {
			return nil
		}
		signalGroup(pgid, syscall.SIGKILL)
		for _, p := range procs {
			_ = unix.Kill(p, syscall.SIGKILL)
		}
		reapOrphans(procs, root)
		if procs = liveOf(procs); len(procs) == 0 {
			continue // confirm with a full walk: a process not seen before
		}
		if ctx.Err() != nil {
			return errors.New("processes survived the kill: " + pidList(procs))
		}
		time.Sleep(time.Millisecond << min(i/50, 3))
	}
}

// waitGone waits until pid has exited (without reaping it: its exec.Cmd
// does), or ctx ends. It reports whether pid exited.
func waitGone(ctx context.Context, pid int) bool {
	done := make(chan struct{})
	go waitExit(pid, done)
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// liveOf returns the pids of procs that are alive (not zombies).
func liveOf(procs []int) []int {
	out := procs[:0]
	for _, p := range procs {
		if alive(p) {
			out = append(out, p)
		}
	}
	return out
}

// removeCgroupWhenEmpty removes a cgroup once its members are gone and
// reaped, trying for a few seconds.
func removeCgroupWhenEmpty(dir string) {
	if dir == "" {
		return
	}
	for i := 0; i < 500; i++ {
		if err := os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// reapOrphans waits for the processes that were re-parented to the host
// (which is their subreaper) so they do not linger as zombies. root is the
// host's own child, reaped by its exec.Cmd, and is left alone.
func reapOrphans(pids []int, root int) {
	me := os.Getpid()
	for _, p := range pids {
		if p == root {
			continue
		}
		if ppid(p) == me {
			var ws unix.WaitStatus
			_, _ = unix.Wait4(p, &ws, unix.WNOHANG, nil)
		}
	}
}

func ppid(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

func pidList(p []int) string {
	s := make([]string, len(p))
	for i, v := range p {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

// usage is one watchdog sample of a process tree.
type usage struct {
	Processes int
	Threads   int
	RSS       uint64
	CPU       time.Duration
	// ForksRefused counts the forks the tree's pids cgroup refused: the
	// tree reached the kernel's cap on its tasks.
	ForksRefused int
}

// sample measures the tree of g with gopsutil. Past maxProcs processes it
// returns the count alone: the tree is over its limit whatever else it
// uses, and reading every member of a fork bomb only lets it grow.
func sample(ctx context.Context, g *group, full bool, maxProcs int) usage {
	u := usage{ForksRefused: forksRefused(g.cgroup)}
	members := tree(ctx, g, full, maxProcs)
	if u.Processes = len(members); u.Processes > maxProcs {
		return u
	}
	for _, pid := range members {
		p := &process.Process{Pid: int32(pid)}
		if m, err := p.MemoryInfoWithContext(ctx); err == nil {
			u.RSS += m.RSS
		}
		if t, err := p.TimesWithContext(ctx); err == nil {
			u.CPU += time.Duration((t.User + t.System) * float64(time.Second))
		}
		if n, err := p.NumThreadsWithContext(ctx); err == nil {
			u.Threads += int(n)
		}
	}
	return u
}

// forksRefused reads the "max" counter of a pids cgroup's pids.events: how
// many forks and clones failed because the cgroup was at pids.max.
func forksRefused(cgroup string) int {
	if cgroup == "" {
		return 0
	}
	b, err := os.ReadFile(cgroup + "/pids.events")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "max "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// fileKey identifies one version of a file: device, inode, size, mtime and
// ctime. Any write changes ctime, which user space cannot set back.
func fileKey(f *os.File) (string, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d:%d:%d:%d.%d:%d.%d", st.Dev, st.Ino, st.Size,
		st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec), nil
}

// limitSignal names the rlimit a signal reports: SIGXCPU (RLIMIT_CPU) and
// SIGXFSZ (RLIMIT_FSIZE).
func limitSignal(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGXCPU:
		return "cpu"
	case syscall.SIGXFSZ:
		return "file_size"
	}
	return ""
}

// pidsCgroupParent returns the directory under which the host creates one
// pids cgroup per process tree: a "toolhost-<pid>" child of the host's own
// cgroup in the cgroup v1 pids hierarchy. It returns "" where there is none
// or it is not writable (cgroup v2 is not used: its no-internal-process rule
// would need the host to move itself).
func pidsCgroupParent() string {
	const mount = "/sys/fs/cgroup/pids"
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	own := ""
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) == 3 && slicesContains(strings.Split(f[1], ","), "pids") {
			own = f[2]
		}
	}
	if own == "" {
		return ""
	}
	removeStaleCgroups(filepath.Join(mount, own))
	dir := filepath.Join(mount, own, "toolhost-"+strconv.Itoa(os.Getpid())+"-"+strconv.FormatUint(cgroupSeq.Add(1), 10))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ""
	}
	if _, err := os.Stat(dir + "/pids.max"); err != nil {
		return ""
	}
	return dir
}

// pidsCgroupAvailable reports, without creating anything, whether the host
// could create pids cgroups (see pidsCgroupParent).
func pidsCgroupAvailable() bool {
	const mount = "/sys/fs/cgroup/pids"
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) == 3 && slicesContains(strings.Split(f[1], ","), "pids") {
			return unix.Access(filepath.Join(mount, f[2]), unix.W_OK) == nil
		}
	}
	return false
}

// cgroupSeq numbers the adapters of this process: each has its own parent
// cgroup, removed by its Close.
var cgroupSeq atomic.Uint64

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// newCgroup creates a pids cgroup for one tree, capped at max tasks.
func newCgroup(parent, name string, max int) (string, error) {
	if parent == "" {
		return "", nil
	}
	dir := parent + "/" + name
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(dir+"/pids.max", []byte(strconv.Itoa(max)), 0o644); err != nil {
		_ = os.Remove(dir)
		return "", err
	}
	return dir, nil
}

// readCgroupMembers lists the processes of a cgroup. Exited processes
// leave their cgroup, so every member is alive (or exiting).
func readCgroupMembers(dir string) ([]int, error) {
	b, err := os.ReadFile(dir + "/cgroup.procs")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out, nil
}

// removeCgroup removes an emptied cgroup, waiting briefly for exiting
// members to leave it.
func removeCgroup(dir string) {
	if dir == "" {
		return
	}
	for i := 0; i < 50; i++ {
		if err := os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// moveToCgroup moves the process pid (and its threads) into the cgroup dir.
func moveToCgroup(dir string, pid int) error {
	return os.WriteFile(dir+"/cgroup.procs", []byte(strconv.Itoa(pid)), 0o644)
}

// joinCgroup moves the calling process (the shim) into a cgroup.
func joinCgroup(dir string) error {
	if dir == "" {
		return nil
	}
	return os.WriteFile(dir+"/cgroup.procs", []byte("0"), 0o644)
}

// removeStaleCgroups removes the empty cgroups left behind by toolhost hosts
// that no longer run (a host killed with SIGKILL cannot remove its own).
func removeStaleCgroups(parent string) {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), "toolhost-")
		if !ok || !e.IsDir() {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() || unix.Kill(pid, 0) == nil {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		subs, _ := os.ReadDir(dir)
		for _, s := range subs {
			if s.IsDir() {
				_ = os.Remove(filepath.Join(dir, s.Name())) // fails while it has members
			}
		}
		_ = os.Remove(dir)
	}
}

// waitExit closes done when process pid (a child of the host) exits,
// without reaping it: its exec.Cmd does that. It blocks one thread per
// running process, which keeps the liveness check of every call free of
// system calls.
func waitExit(pid int, done chan<- struct{}) {
	for {
		err := unix.Waitid(unix.P_PID, pid, nil, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	close(done)
}

// isSubreaper reports whether this process is a child subreaper now.
func isSubreaper() bool {
	var v int32
	return unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&v)), 0, 0, 0) == nil && v != 0
}

// signalName is a signal's name as people write it ("SIGKILL").
func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return sig.String()
}
