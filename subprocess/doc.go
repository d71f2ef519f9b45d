// Package subprocess is toolhost's opt-in native tier: tools that run as
// hashicorp/go-plugin subprocesses (a plugin binary serving the gRPC
// contract of package shared), and the built-in privileged tools shell.exec
// and bash.read-only, all started through one sandboxed launcher.
//
// The tier exists for tools that need native code (a C library, a CLI such
// as git or tesseract). It is granted only by the operator's
// tool.exec.subprocess capability, and every tool it loads is announced with
// a warning naming it.
//
// # Launching
//
// Every process starts as the host's own binary re-executed as a small shim
// (see [MaybeRunShim], which the host's main must call first). Before the
// plugin's first instruction the shim joins the tree's pids cgroup, sets
// rlimits (CPU seconds, data segment, file size, open files; core dumps
// off; never address space, which breaks Go programs), no_new_privs,
// Landlock rules where the kernel has them (system directories, the
// plugin's directory and read-only mounts readable; the scratch directory
// and read-write mounts writable; nothing else) and a seccomp filter (no
// setsid/setpgid, ptrace, mount, unshare/setns or namespace clones, bpf,
// keyctl and friends). It then starts the plugin from the file descriptor
// whose sha256 was checked and stays, as a supervisor of a few megabytes,
// until the plugin exits. To keep the start of the (large) host binary off
// the critical path, a spare shim is started ahead of each plugin's next
// start ("warm shim").
//
// # Lifecycle
//
// A tree runs in its own process group, pids cgroup and, where the host may
// create one, PID namespace (with the shim as its init). Stopping it sends
// SIGTERM to the group, waits a grace period, then SIGKILLs the group and
// every remaining member. A watchdog samples the RSS, CPU time, process and
// thread count of the whole tree (gopsutil) and kills it on excess
// (LIMIT_EXCEEDED). A call that outlives its deadline kills the plugin
// (TOOL_EXECUTION_TIMEOUT); a plugin that dies mid-call gives
// TOOL_UNAVAILABLE and is restarted, with backoff, on the next call; idle
// plugins are stopped. Nothing survives the host: every shim holds the read
// end of a pipe only the host writes, and at end of file — the host is
// gone, however it died — kills its group. Without a PID namespace the host
// is also the child subreaper of its descendants.
//
// The hardening is Linux-only. On other platforms [Adapter.Load] refuses
// subprocess tools and [Report] says why. docs/subprocess.md is the
// operator's guide; docs/plugin-protocol.md the plugin author's.
package subprocess
