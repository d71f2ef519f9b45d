package main

import "github.com/spf13/cobra"

// extraCommands are the commands of the tiers and front-ends: doctor
// (sandbox features in force) and serve (MCP).
func extraCommands(a *app) []*cobra.Command {
	return []*cobra.Command{a.serveCommand()}
}
