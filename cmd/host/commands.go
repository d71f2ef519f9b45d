package main

import "github.com/spf13/cobra"

// extraCommands are the commands of the front-ends, the registry and
// remote servers' logins: serve (MCP), tool (install, pin, sign, publish)
// and auth (OAuth logins to mcp_server blocks).
func extraCommands(a *app) []*cobra.Command {
	return []*cobra.Command{a.serveCommand(), a.toolCommand(), a.authCommand()}
}
