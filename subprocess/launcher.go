package subprocess

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// errUnsupportedPlatform is the cause of every refusal off Linux.
var errUnsupportedPlatform = errors.New("the subprocess tier's sandbox (seccomp, Landlock, subreaper, parent-death signal) exists only on Linux")

// launchSpec describes one sandboxed process.
type launchSpec struct {
	// Exe is the absolute path of the executable.
	Exe string
	// File is the verified, open executable, exec'd by descriptor; nil to
	// exec Exe by path (system programs such as /bin/sh).
	File *os.File
	Args []string
	// Env is the complete environment of the process.
	Env []string
	// Dir is the working directory.
	Dir string
	// Scratch is the process's own read-write directory (HOME, TMPDIR).
	Scratch string
	// ReadOnly and ReadWrite are directories the process may read, or read
	// and write, on top of the system directories.
	ReadOnly  []string
	ReadWrite []string

	CPUSeconds uint64
	DataBytes  uint64
	FileBytes  uint64
	OpenFiles  uint64

	// Offline: the tool was granted no network hosts.
	Offline bool
	// Proxy is the network of a tool granted hosts, where the host has
	// network namespaces; nil otherwise.
	Proxy *treeProxy
}

// command returns the exec.Cmd that starts ls through the shim, and the
// group it will form (its root is filled in by the caller after Start). The
// caller sets Stdin/Stdout/Stderr and starts it; on failure to start it must
// call killTree on the group to remove its cgroup.
func (a *Adapter) command(ls *launchSpec) (*exec.Cmd, *group, error) {
	cfg := a.shimConfig(ls)
	g := &group{sealed: a.hard.Seccomp, pidns: a.hard.PIDNamespace}
	if a.cgroupParent != "" {
		dir, err := newCgroup(a.cgroupParent, fmt.Sprintf("t%d", a.seq.Add(1)), a.cfg.MaxThreads)
		if err != nil {
			return nil, nil, fmt.Errorf("pids cgroup: %w", err)
		}
		g.cgroup, cfg.Cgroup = dir, dir
	}
	b, err := json.Marshal(&cfg)
	if err != nil {
		removeCgroup(g.cgroup)
		return nil, nil, err
	}
	cmd := exec.Command(a.cfg.ShimPath, shimArg, string(b))
	cmd.Env = ls.Env
	cmd.Dir = ls.Dir
	cmd.SysProcAttr = sysProcAttr(a.hard.PIDNamespace, cfg.NetNS)
	cmd.ExtraFiles = extraFiles(ls.File, ls.Proxy, &cfg)
	b, err = json.Marshal(&cfg)
	if err != nil {
		removeCgroup(g.cgroup)
		return nil, nil, err
	}
	cmd.Args[2] = string(b)
	return cmd, g, nil
}

// extraFiles returns the descriptors a shim inherits after stdio — the
// verified executable (if any), the lifeline and the proxy's socket (if
// any) — and records their numbers in cfg.
func extraFiles(exe *os.File, proxy *treeProxy, cfg *shimConfig) []*os.File {
	var files []*os.File
	cfg.FD = -1
	if exe != nil {
		files = append(files, exe)
		cfg.FD = 3
	}
	cfg.Lifeline = -1
	if l := lifeline(); l != nil {
		cfg.Lifeline = 3 + len(files)
		files = append(files, l)
	}
	cfg.ProxyFD = -1
	if proxy != nil {
		cfg.ProxyFD = 3 + len(files)
		files = append(files, proxy.child)
	}
	return files
}

var (
	lifelineOnce sync.Once
	lifelineR    *os.File
	lifelineW    *os.File // never closed: it closes when the host dies
)

// lifeline returns the read end of the host's lifeline pipe, which every
// shim inherits; nil if the pipe cannot be made.
func lifeline() *os.File {
	lifelineOnce.Do(func() {
		r, w, err := os.Pipe()
		if err == nil {
			lifelineR, lifelineW = r, w
		}
	})
	return lifelineR
}

// shimConfig is what the shim needs to know to run ls.
func (a *Adapter) shimConfig(ls *launchSpec) shimConfig {
	cfg := shimConfig{
		Exe:         ls.Exe,
		FD:          -1,
		Args:        ls.Args,
		Dir:         ls.Dir,
		CPUSeconds:  ls.CPUSeconds,
		DataBytes:   ls.DataBytes,
		FileBytes:   ls.FileBytes,
		OpenFiles:   ls.OpenFiles,
		Seccomp:     a.hard.Seccomp,
		Landlock:    a.hard.Landlock,
		PrivateProc: a.hard.PIDNamespace,
		UID:         -1,
		GID:         -1,
		ProxyFD:     -1,
		RWFiles:     []string{"/dev/null", "/dev/zero", "/dev/full"},
	}
	if id := a.runAs; id != nil {
		cfg.UID, cfg.GID = int(id.UID), int(id.GID)
	}
	cfg.Offline = ls.Offline
	// Every tree gets a network namespace where the host can make one:
	// with nothing in it for a tool granted no hosts, with the proxy for
	// one granted some (Load refuses those where it cannot).
	cfg.NetNS = a.hard.NetNamespace
	cfg.ReadOnly = append(slices.Clone(a.cfg.SystemReadDirs), filepath.Dir(ls.Exe))
	cfg.ReadOnly = append(cfg.ReadOnly, ls.ReadOnly...)
	cfg.ReadWrite = append([]string{ls.Scratch}, ls.ReadWrite...)
	return cfg
}

// baseEnv is the environment every sandboxed process starts from: nothing of
// the host's except the variables named in allow, plus a fixed PATH, and
// HOME and TMPDIR pointing at the scratch directory.
func baseEnv(scratch string, allow []string) []string {
	env := []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + scratch,
		"TMPDIR=" + scratch,
		"LANG=C.UTF-8",
	}
	seen := map[string]bool{"PATH": true, "HOME": true, "TMPDIR": true, "LANG": true}
	for _, name := range allow {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			continue
		}
		v, ok := os.LookupEnv(name)
		if !ok {
			continue
		}
		if seen[name] {
			env = slices.DeleteFunc(env, func(e string) bool { return strings.HasPrefix(e, name+"=") })
		}
		seen[name] = true
		env = append(env, name+"="+v)
	}
	return env
}

// scratchDir creates a fresh 0700 scratch directory for one process,
// owned by the identity the process runs as.
func (a *Adapter) scratchDir(prefix string) (string, error) {
	d, err := os.MkdirTemp(a.cfg.ScratchDir, prefix)
	if err != nil {
		return "", fmt.Errorf("scratch directory: %w", err)
	}
	if err := a.handOver(d); err != nil {
		os.RemoveAll(d)
		return "", fmt.Errorf("scratch directory: %w", err)
	}
	return d, nil
}

// handOver gives dir to the identity sandboxed processes run as, if they
// run as another than the host's.
func (a *Adapter) handOver(dir string) error {
	if a.runAs == nil {
		return nil
	}
	return os.Chown(dir, int(a.runAs.UID), int(a.runAs.GID))
}
