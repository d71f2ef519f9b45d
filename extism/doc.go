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
package extism
