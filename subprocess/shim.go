package subprocess

import (
	"encoding/json"
	"fmt"
	"os"
)

// shimArg is os.Args[1] of a process started as the shim. It is deliberately
// unlikely to collide with a real command line.
const shimArg = "__toolhost_subprocess_shim__"

// shimExitCode is the exit status of a shim that could not set up the
// sandbox or exec the plugin (the convention of shells for "cannot execute").
const shimExitCode = 126

// shimConfig is what the host tells the shim, as JSON in os.Args[2].
type shimConfig struct {
	// Exe is the path of the executable, used for argv[0] and messages.
	Exe string `json:"exe"`
	// FD is the open descriptor of the verified executable (exec'd through
	// /proc/self/fd so that what runs is what was hashed), or -1 to exec Exe.
	FD int `json:"fd"`
	// Lifeline is the descriptor of the read end of the host's lifeline
	// pipe, or -1.
	Lifeline int      `json:"lifeline"`
	Args     []string `json:"args,omitempty"`
	Dir      string   `json:"dir"`

	CPUSeconds uint64 `json:"cpu_seconds,omitempty"`
	DataBytes  uint64 `json:"data_bytes,omitempty"`
	FileBytes  uint64 `json:"file_bytes,omitempty"`
	OpenFiles  uint64 `json:"open_files,omitempty"`

	// Env is the plugin's environment when the shim was started ahead of
	// time (a warm shim, whose own environment is empty); nil means the
	// shim's environment.
	Env []string `json:"env,omitempty"`
	// Cgroup is the pids cgroup the shim joins first, "" for none.
	Cgroup string `json:"cgroup,omitempty"`

	Seccomp  bool `json:"seccomp"`
	Landlock bool `json:"landlock"`
	// PrivateProc: the shim is the init of new PID and mount namespaces
	// and mounts a procfs of its own on /proc, which shows the plugin's
	// tree and nothing else.
	PrivateProc bool `json:"private_proc,omitempty"`
	// UID and GID, when UID > 0, are the identity the plugin runs as,
	// without supplementary groups or capabilities (the host runs as root).
	UID int `json:"uid"`
	GID int `json:"gid"`
	// Offline: the tool was granted no network. In a network namespace of
	// its own (NetNS) the shim brings its loopback up and nothing else
	// exists; without one, the seccomp filter refuses inet sockets.
	Offline bool `json:"offline,omitempty"`
	NetNS   bool `json:"netns,omitempty"`
	// ProxyFD, for a tool granted hosts in a network namespace (NetNS),
	// is the descriptor of the socket over which the shim sends the host
	// its proxy listener (see treeProxy); -1 for none.
	ProxyFD int `json:"proxy_fd"`
	// ReadOnly and ReadWrite are Landlock directory rules; RWFiles are
	// single files (such as /dev/null) that may be written.
	ReadOnly  []string `json:"ro,omitempty"`
	ReadWrite []string `json:"rw,omitempty"`
	RWFiles   []string `json:"rw_files,omitempty"`
}

// MaybeRunShim turns the current process into the subprocess sandbox shim
// when the host started it as one, and returns immediately otherwise.
//
// The host binary (cmd/host, or any application embedding this package) must
// call it as the first statement of main, before flag parsing, goroutines or
// any other work:
//
//	func main() {
//		subprocess.MaybeRunShim()
//		os.Exit(run(os.Args[1:]))
//	}
//
// When it takes over, it never returns: it joins the tree's cgroup, applies
// the rlimits, Landlock rules and seccomp filter described in the package
// documentation, starts the plugin, supervises it (killing its process group
// if the host goes away) and exits with the plugin's status (128+signal if a
// signal killed it) — or exits with status 126 and a message on stderr if it
// cannot. Tests that use the test binary as the shim call it from TestMain.
func MaybeRunShim() {
	if len(os.Args) < 3 || os.Args[1] != shimArg {
		return
	}
	var cfg shimConfig
	var err error
	if os.Args[2] == "-" {
		// A warm shim: started ahead of time, it waits for its
		// configuration on stdin, then stdin is closed. It joins the
		// cgroup os.Args[3] first, if one is named; the adapter's warm
		// shims name none: the host moves them while they start (see
		// prestart) and sends the configuration once they are in.
		if len(os.Args) > 3 && os.Args[3] != "" {
			if err := joinCgroup(os.Args[3]); err != nil {
				fmt.Fprintf(os.Stderr, "toolhost shim: cgroup: %v\n", err)
				os.Exit(shimExitCode)
			}
		}
		err = json.NewDecoder(os.Stdin).Decode(&cfg)
		if err == nil {
			err = stdinToDevNull()
		}
	} else {
		err = json.Unmarshal([]byte(os.Args[2]), &cfg)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "toolhost shim: bad configuration: %v\n", err)
		os.Exit(shimExitCode)
	}
	err = runShim(&cfg) // returns only on failure
	fmt.Fprintf(os.Stderr, "toolhost shim: %s: %v\n", cfg.Exe, err)
	os.Exit(shimExitCode)
}
