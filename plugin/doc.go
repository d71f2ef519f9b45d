// Package plugin is toolhost's unified adapter layer: one tool contract, one
// registry and one invoke pipeline, whatever runs the tool.
//
// A [Tool] is anything that can describe itself with a [Descriptor] and answer
// a [Request] with a [Result]. Tools come from adapters — the wasm tier
// (package extism), the subprocess tier (package subprocess), remote MCP
// servers (package mcp) — or from the host application itself ([Func]).
//
// A [Host] owns the registry and runs every call through the same pipeline:
//
//	lookup → capability check (composition rule) → safety tier / approval →
//	input validation → deadline → execute → output validation →
//	truncation for the model (full output kept as an artifact) → audit → result
//
// While it runs, a tool may report progress to its caller
// (Request.Notify) and, when granted client.sampling or
// client.elicitation, ask the caller's client for an LLM completion or its
// user's input (Request.Client); the pipeline bounds, redacts and audits
// both.
//
// Policy never comes from the tool: it comes from the [Spec] the operator (or
// the host application) registers the tool under. A tool that declares more
// capabilities than the host grants does not load.
//
// Every failure carries a stable [Code]; errors returned by the pipeline are
// *[Error] values and match the sentinels in this package with errors.Is.
package plugin
