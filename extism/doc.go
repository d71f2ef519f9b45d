// Package extism is toolhost's default sandbox: it runs tools compiled to
// WebAssembly as Extism plugins on wazero, behind the plugin.Adapter
// interface (Kind "wasm").
//
// A plugin either exports list_tools and call_tool (MCP-shaped JSON, the
// hyper-mcp v1 plugin contract; one plugin may offer several tools) or, in
// raw mode, any single export whose schemas the Spec declares. docs/wasm.md
// gives the exact JSON.
//
// Lifecycle. Load reads the artifact (path, bytes or a built-in), checks the
// pinned sha256 and scans the exports; a tool compiles on first need (its
// first call, Adapter.Ready, or an uncached list_tools), so a one-shot host
// compiles only what it calls. Compiled code is kept in wazero's on-disk
// compilation cache, so a second start of the host does not compile again. Every call runs in a fresh
// instance that is closed afterwards; a small pool of pre-instantiated,
// pre-initialised instances per tool, refilled in the background, keeps a
// call close to the cost of a warm call.
//
// Capabilities are off unless the Spec grants them: directory mounts are
// served by an os.Root-backed filesystem (never Extism's AllowedPaths),
// every call gets its own /tmp (wiped afterwards), network access goes
// through a client that checks resolved addresses at dial time and every
// redirect, and secrets are injected into outgoing HTTP headers only and
// redacted from everything the guest or the logs see. Extism's own
// http_request is kept unreachable (no host is ever allowed to it).
//
// Limits: memory (enforced by a wazero memory allocator so the adapter knows
// when the cap was hit), wall clock (always set; a spinning guest is
// stopped and its instance discarded), output size, variable size, HTTP
// response size and the per-call counters. Exceeding one yields a
// LIMIT_EXCEEDED *plugin.Error naming the limit.
//
// Where things are. This package orchestrates; each concern it uses is a
// package of its own under internal/, which knows nothing of this one:
//
//   - internal/hostfs: what a guest sees of the host's files — mounts over
//     os.Root (the security boundary), the per-call /tmp directories, and
//     the batched reading behind toolhost_fs_submit/take.
//   - internal/guestmem: guest linear memories — the memory limit, address
//     space reserved outside the Go heap, recycling between instances.
//   - internal/callproto: the JSON a tool plugin receives and answers.
//   - internal/fuel: instruction metering, and the lanes that keep long
//     calls from taking every CPU.
//   - internal/snapshot: a Go guest's initialisation run once at load.
//   - internal/wasmbin, internal/fold, internal/wasi: the wasm binary
//     format, ASCII case folding, WASI errno values.
//
// The network guard (resolved-address checks, allow-lists, redirects,
// secrets in HTTP traffic) is toolhost/internal/netguard, shared with the
// subprocess tier. Here: adapter.go (the plugin.Adapter, Load, Ready),
// module.go (artifacts, compilation), tool.go (a tool, its instance pool
// and Call), instance.go (one instance's life and limits), direct.go (the
// call path around go-sdk), snapshot.go, and one file per group of host
// functions (hostfuncs.go, fsbatch.go, notify.go, client.go,
// hostconfig.go, extismhttp.go).
package extism
