// Command host runs toolhost: it lists the tools a configuration grants,
// calls them, validates configurations, and serves them over MCP.
//
//	host tools                       # what the default config.hcl offers
//	host call filesystem.list '{"path":"."}'
//	host validate --config other.hcl
package main

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/toolhost/toolhost/subprocess"
)

func main() {
	// When the host re-executes itself as the subprocess sandbox shim, this
	// takes over (rlimits, Landlock, seccomp, then exec of the plugin) and
	// never returns. It must come before anything else.
	subprocess.MaybeRunShim()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, filepath.Base(os.Args[0]), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
