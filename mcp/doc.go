// Package mcp makes toolhost speak the Model Context Protocol both ways,
// with the official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// As a server ([NewServer]), it offers the tools of a plugin.Host to MCP
// clients over stdio ([Server.ServeStdio]) or streamable HTTP
// ([Server.HTTPHandler], [Server.ServeHTTP]). Every call goes through
// Host.Invoke, so policy, approval, validation, limits, truncation and audit
// apply exactly as for any other caller. Tool names are sent as
// plugin.WireName(name); truncated outputs link to their full text as a
// resource (toolhost://artifacts/{id}); approvals and questions become
// elicitations when the client supports them ([Approver]). Prompts, fixed
// resources and resource templates the operator declared
// (plugin/declared, via [ServerOptions]) are served beside the tools, with
// completions and resource subscriptions.
//
// As a client ([NewAdapter]), it is the plugin.Adapter of kind "mcp": each
// tool a configuration allows from a remote server (mcp_server blocks)
// becomes a tool named server/tool, called over streamable HTTP. A server
// with an oauth block gets its token from package mcp/oauth (logins,
// client credentials, stored and refreshed tokens); [Adapter.Login] runs a
// login on demand.
//
// docs/mcp.md is the user-facing reference for both directions.
package mcp
