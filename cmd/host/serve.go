package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost"
	"github.com/toolhost/toolhost/internal/gcfloor"
	"github.com/toolhost/toolhost/mcp"
	"github.com/toolhost/toolhost/plugin"
)

// serveFlags are the flags of `host serve`.
type serveFlags struct {
	stdio         bool
	http          string
	tokenEnv      string
	tokenFile     string
	allowHosts    []string
	allowOrigins  []string
	maxBody       string
	maxConcurrent int
	maxTotal      int
	maxSessions   int
	sessionIdle   time.Duration
	grace         time.Duration
}

func (a *app) serveCommand() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve (--stdio | --http ADDR)",
		Short: "Serve the configured tools over MCP (stdio or streamable HTTP)",
		Long: "Serve the tools the configuration grants to MCP clients. Every call goes through\n" +
			"the same pipeline as `host call` (policy, approval, validation, limits, truncation,\n" +
			"audit). Tool names are sent with '.' as '_' and '/' as '__' (docs/mcp.md).\n\n" +
			"--stdio speaks MCP on standard input and output, for desktop clients that start\n" +
			"the host as a subprocess. --http ADDR serves streamable HTTP at http://ADDR/mcp;\n" +
			"a bare port (\":8808\") binds 127.0.0.1. Requests must carry a loopback Host and\n" +
			"Origin unless --allow-host/--allow-origin say otherwise, and the bearer token\n" +
			"when --token-env or --token-file names one.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.stdio == (f.http != "") {
				return errors.New("give exactly one of --stdio and --http ADDR")
			}
			return a.serve(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.stdio, "stdio", false, "serve MCP on standard input and output")
	fl.StringVar(&f.http, "http", "", "serve MCP over streamable HTTP at ADDR (host:port; default host 127.0.0.1)")
	fl.StringVar(&f.tokenEnv, "token-env", "", "require the bearer token held in this environment variable (HTTP)")
	fl.StringVar(&f.tokenFile, "token-file", "", "require the bearer token held in this file (HTTP)")
	fl.StringArrayVar(&f.allowHosts, "allow-host", nil, "accept this Host header name besides loopback ones (HTTP, repeatable)")
	fl.StringArrayVar(&f.allowOrigins, "allow-origin", nil, "accept this browser Origin besides loopback ones (HTTP, repeatable)")
	fl.StringVar(&f.maxBody, "max-body", "4MiB", "largest request body accepted (HTTP)")
	fl.IntVar(&f.maxConcurrent, "max-concurrent", 8, "requests one client may have in flight (HTTP)")
	fl.IntVar(&f.maxTotal, "max-concurrent-total", 64, "requests all clients together may have in flight (HTTP)")
	fl.IntVar(&f.maxSessions, "max-sessions", 256, "sessions open at once; past it a new client gets 503 (HTTP)")
	fl.DurationVar(&f.sessionIdle, "session-idle", 30*time.Minute, "end a session idle this long (HTTP)")
	fl.DurationVar(&f.grace, "grace", 10*time.Second, "on shutdown, how long calls in flight may run before they are cancelled")
	return cmd
}

// serveHeapFloor is how far the Go heap may grow above its live size
// between collections while serving: back-to-back listings over MCP took
// about 15 % less time at the median with it (docs/mcp.md).
const serveHeapFloor = 32 << 20

func (a *app) serve(ctx context.Context, f serveFlags) error {
	var hopts mcp.HTTPOptions
	if f.http != "" {
		var err error
		if hopts, err = f.httpOptions(); err != nil {
			return err
		}
	}
	h, err := a.open(ctx, mcp.Approver(nil))
	if err != nil {
		return err
	}
	defer h.Close()
	// A serving host's live heap is a few MiB and each call allocates a
	// few hundred KiB: without a floor the collector runs every ~15 calls
	// (internal/gcfloor). GOGC in the environment turns this off.
	defer gcfloor.Start(serveHeapFloor)()
	// Compile and fill the instance pools while the client connects.
	go func() {
		if err := h.Ready(ctx); err != nil && ctx.Err() == nil {
			h.Log.Warn("some tools are not ready", "error", err)
		}
	}()
	srv, err := mcp.NewServer(h.Host, h.ServerOptions(mcp.ServerOptions{Version: toolhost.Version, Logger: h.Log}))
	if err != nil {
		return err
	}
	if f.stdio {
		h.Log.Info("serving MCP on stdio", "tools", len(h.Tools()), "prompts", len(h.Config.Prompts), "resources", len(h.Config.Resources)+len(h.Config.ResourceTemplates))
		in, restore := serveInput(a.stdin)
		defer restore()
		return srv.ServeStdio(ctx, in, nopWriteCloser{a.stdout}, f.grace)
	}
	addr := f.http
	if strings.HasPrefix(addr, ":") {
		addr = "127.0.0.1" + addr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(hostOf(ln.Addr().String())); ip != nil && !ip.IsLoopback() && hopts.Token == "" {
		h.Log.Warn("serving MCP beyond loopback without a bearer token; anyone who can reach it can call the tools", "addr", ln.Addr().String())
	}
	fmt.Fprintf(a.stderr, "toolhost: serving MCP at http://%s/mcp\n", ln.Addr())
	return srv.Serve(ctx, ln, hopts, f.grace)
}

func hostOf(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return h
}

func (f serveFlags) httpOptions() (mcp.HTTPOptions, error) {
	o := mcp.HTTPOptions{AllowedHosts: f.allowHosts, AllowedOrigins: f.allowOrigins, MaxConcurrent: f.maxConcurrent, MaxConcurrentTotal: f.maxTotal, MaxSessions: f.maxSessions, SessionTimeout: f.sessionIdle}
	if f.maxSessions < 1 {
		return o, fmt.Errorf("--max-sessions must be at least 1, not %d", f.maxSessions)
	}
	if f.sessionIdle <= 0 {
		return o, fmt.Errorf("--session-idle must be positive, not %v", f.sessionIdle)
	}
	n, err := plugin.ParseSize(f.maxBody)
	if err != nil {
		return o, fmt.Errorf("--max-body: %w", err)
	}
	o.MaxBodyBytes = n
	switch {
	case f.tokenEnv != "" && f.tokenFile != "":
		return o, errors.New("give one of --token-env and --token-file")
	case f.tokenEnv != "":
		o.Token = os.Getenv(f.tokenEnv)
		if o.Token == "" {
			return o, fmt.Errorf("--token-env: environment variable %s is empty or not set", f.tokenEnv)
		}
	case f.tokenFile != "":
		b, err := os.ReadFile(f.tokenFile)
		if err != nil {
			return o, fmt.Errorf("--token-file: %w", err)
		}
		o.Token = strings.TrimSpace(string(b))
		if o.Token == "" {
			return o, fmt.Errorf("--token-file: %s is empty", f.tokenFile)
		}
	}
	return o, nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
