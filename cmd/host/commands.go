package main

import "github.com/spf13/cobra"

// extraCommands are the commands of the front-ends and the registry:
// serve (MCP) and tool (install, pin, sign, publish).
func extraCommands(a *app) []*cobra.Command {
	return []*cobra.Command{a.serveCommand(), a.toolCommand()}
}
