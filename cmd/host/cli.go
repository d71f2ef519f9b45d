package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost"
	"github.com/toolhost/toolhost/mcp/oauth"
	"github.com/toolhost/toolhost/plugin"
)

// defaultConfig is the configuration read without --config.
const defaultConfig = "config.hcl"

// Exit codes of the host command.
const (
	exitOK         = 0
	exitToolError  = 1 // the tool call failed; the code is printed
	exitUsage      = 2 // bad flags, arguments or configuration
	exitNeedsInput = 3 // the tool asked a question; call again with --answer
)

// exitError carries an exit code out of a cobra command.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// globals are the flags every command shares.
type globals struct {
	config   string
	logLevel string
	logJSON  bool
	noColor  bool
}

// app holds what a command run needs: its streams and flags.
type app struct {
	// name is the command's name in usage lines and examples: the name of
	// the executable ("host" from go build ./cmd/host, "toolhost" where it
	// is installed under that name).
	name   string
	g      globals
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// goTools serves `go {}` tool blocks; the CLI itself ships none (its
	// tools are sandboxed), tests use it to drive the pipeline.
	goTools *plugin.InProcess
	// openTTY opens the controlling terminal for approval prompts; nil
	// means /dev/tty. Tests replace it so they never wait on a real one.
	openTTY func() (io.ReadWriteCloser, error)
	// browser replaces opening the desktop's browser at a login URL (host
	// auth login); tests set one that follows the login as a browser would.
	browser func(ctx context.Context, authURL string) error
	// inlineLogin, when set, is the host's Options.Browser: a server that
	// needs a login has it run in-line. The CLI's commands leave it nil
	// (they are unattended, except host auth login); the conformance
	// client sets it.
	inlineLogin oauth.Browser
}

// run is the whole CLI; main only supplies the process's streams.
func run(ctx context.Context, name string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return (&app{name: name, stdin: stdin, stdout: stdout, stderr: stderr}).run(ctx, args)
}

func (a *app) run(ctx context.Context, args []string) int {
	stdin, stdout, stderr := a.stdin, a.stdout, a.stderr
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	fmt.Fprintf(stderr, "Error: %v\n", err)
	return exitUsage
}

// cmdName returns the command's name for usage lines.
func (a *app) cmdName() string {
	if a.name == "" {
		return "host"
	}
	return a.name
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   a.cmdName(),
		Short: "Run the tools LLM agents call, inside sandboxes",
		Long: "toolhost runs tools (read a file, run a command, fetch a page) inside sandboxes,\n" +
			"behind one interface, configured in HCL (config.hcl).",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       toolhost.Version,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return checkLogLevel(a.g.logLevel)
		},
	}
	root.SetVersionTemplate("toolhost {{.Version}}\n") // as `host version` prints it
	pf := root.PersistentFlags()
	pf.StringVar(&a.g.config, "config", defaultConfig, "configuration file")
	pf.StringVar(&a.g.logLevel, "log-level", "", "log level: trace, debug, info, warn, error, off (default: the config's log_level)")
	pf.BoolVar(&a.g.logJSON, "log-json", false, "log as JSON lines")
	pf.BoolVar(&a.g.noColor, "no-color", false, "do not color diagnostics")
	root.AddCommand(a.toolsCommand(), a.callCommand(), a.validateCommand(), a.versionCommand(), a.artifactCommand(), a.doctorCommand())
	for _, c := range extraCommands(a) {
		root.AddCommand(c)
	}
	return root
}

// logLevels are the levels --log-level and log_level accept.
var logLevels = []string{"trace", "debug", "info", "warn", "error", "off"}

// checkLogLevel refuses a --log-level that hclog would silently read as
// "no level" (which logs everything).
func checkLogLevel(level string) error {
	if level == "" || slices.Contains(logLevels, strings.ToLower(level)) {
		return nil
	}
	return fmt.Errorf("--log-level %q: want one of %s", level, strings.Join(logLevels, ", "))
}

// logger builds the root logger: stderr, level from --log-level or the config.
func (a *app) logger(configLevel string) hclog.Logger {
	level := a.g.logLevel
	if level == "" {
		level = configLevel
	}
	if level == "" {
		level = "warn"
	}
	return hclog.New(&hclog.LoggerOptions{
		Name:       "host",
		Level:      hclog.LevelFromString(level),
		Output:     a.stderr,
		JSONFormat: a.g.logJSON,
	})
}

// open loads the configured host, printing configuration errors the way
// Terraform does.
func (a *app) open(ctx context.Context, approver plugin.Approver) (*toolhost.Host, error) {
	log := a.logger(peekLogLevel(a.g.config))
	var tty io.Writer
	if f, ok := a.stderr.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		tty = f
	}
	progress := newCompileProgress(tty, log)
	progress.hold() // one report for the modules compiled while loading
	h, err := toolhost.Open(ctx, toolhost.Options{
		ConfigFile: a.g.config,
		Approver:   approver,
		GoTools:    a.goTools,
		Logger:     log,
		OnCompile:  progress.event,
		Browser:    a.inlineLogin,
	})
	progress.release()
	if err != nil {
		return nil, a.configFailed(err)
	}
	h.Log.Debug("configuration loaded", "config", a.g.config, "tools", len(h.Tools()))
	return h, nil
}

// configFailed prints a configuration error the way Terraform does (with
// a hint when the default ./config.hcl is missing) and returns the usage
// exit; any other error is returned as it is.
func (a *app) configFailed(err error) error {
	var ce *toolhost.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	ce.Write(a.stderr, 100, a.color())
	if _, err := os.Stat(a.g.config); errors.Is(err, fs.ErrNotExist) && a.g.config == defaultConfig {
		wd, _ := os.Getwd()
		fmt.Fprintf(a.stderr, "There is no %s in %s: name the configuration with --config FILE,\nor run from the directory that holds it.\n", a.g.config, wd)
	}
	return &exitError{exitUsage}
}

// peekLogLevel reads log_level from the configuration cheaply so that the
// logger exists before the configuration is fully loaded; errors surface at
// the real load.
func peekLogLevel(file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && strings.TrimSpace(k) == "log_level" {
			return strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	return ""
}

func (a *app) color() bool {
	if a.g.noColor || os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := a.stderr.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(a.stdout, "toolhost %s\n", toolhost.Version)
			return nil
		},
	}
}

func (a *app) validateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "validate",
		Short: "Check the configuration and load every tool, without calling any",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := a.open(cmd.Context(), nil)
			if err != nil {
				return err
			}
			defer h.Close()
			// MCP servers that could be reached must offer the tools listed
			// for them (at run time a missing one is only a warning).
			var ce *toolhost.ConfigError
			if err := h.CheckMCPServers(); errors.As(err, &ce) {
				ce.Write(a.stderr, 100, a.color())
				return &exitError{exitUsage}
			}
			n := len(h.Tools())
			fmt.Fprintf(a.stdout, "%s: valid, %d tool%s\n", a.g.config, n, plural(n))
			return nil
		},
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func (a *app) artifactCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "artifact ID",
		Short: "Print an artifact (the full output of a truncated result)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := a.open(cmd.Context(), nil)
			if err != nil {
				return err
			}
			defer h.Close()
			_, rc, err := h.Artifact(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			defer rc.Close()
			_, err = io.Copy(a.stdout, rc)
			return err
		},
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
