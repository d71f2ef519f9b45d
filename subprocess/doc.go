// Package subprocess is toolhost's opt-in native tier: tools that run as
// hashicorp/go-plugin subprocesses (a plugin binary serving the gRPC
// contract of package shared), and the built-in privileged tools shell.exec
// and bash.read-only, all started through one sandboxed launcher.
//
// The tier exists for tools that need native code (a C library, a CLI such
// as git or tesseract). It is granted only by the operator's
// tool.exec.subprocess capability, and every tool it loads is announced with
// a warning.
//
// # Launching
//
// Every process starts as the host's own binary re-executed as a small shim
// (see [MaybeRunShim], which the host's main must call first). Before the
// plugin's first instruction the shim sets rlimits (CPU seconds, data
// segment, file size, open files; core dumps off; never address space, which
// breaks Go programs), no_new_privs, Landlock rules where the kernel has them
// (system directories and the plugin's directory read-only, the scratch
// directory read-write, nothing else writable) and a seccomp filter (no
// setsid/setpgid, ptrace, mount, unshare/setns, bpf, keyctl and friends),
// then execs the plugin from the file descriptor whose sha256 was checked.
//
// # Lifecycle
//
// A plugin runs in its own process group and, where the host may create one,
// its own PID namespace; the host is a child subreaper. Stopping a plugin
// sends SIGTERM to the group, waits a grace period, then SIGKILLs the group
// and every remaining descendant. A watchdog samples the RSS, CPU time,
// process and thread count of the whole tree and kills it on excess
// (LIMIT_EXCEEDED). A call that outlives its deadline kills the plugin
// (TOOL_EXECUTION_TIMEOUT); a plugin that dies mid-call gives
// TOOL_UNAVAILABLE and is restarted, with backoff, on the next call; idle
// plugins are stopped. The plugin dies with the host, even on SIGKILL
// (parent-death signal plus PID namespace).
//
// The hardening is Linux-only. On other platforms [Adapter.Load] refuses
// subprocess tools and [Report] says why.
package subprocess
