package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	"github.com/toolhost/toolhost/plugin"
)

func (a *app) callCommand() *cobra.Command {
	var yes, asJSON bool
	var answers []string
	cmd := &cobra.Command{
		Use:   "call TOOL [JSON | @FILE | -]",
		Short: "Call a tool and print its result",
		Long: "Call a tool through the full pipeline and print its result.\n\n" +
			"The arguments are a JSON object given inline, read from a file (@args.json)\n" +
			"or from standard input (-); none means {}. Privileged tools ask for approval\n" +
			"on the terminal; --yes approves in advance. When a tool asks a question, answer\n" +
			"it by calling again with --answer ID=VALUE (VALUE is JSON, or else a string).\n\n" +
			"Exit status: 0 success, 1 the tool failed (the error code is printed),\n" +
			"2 usage or configuration error (an unknown or disabled tool, arguments that\n" +
			"are not JSON or do not match the tool's schema), 3 the tool needs input.",
		Example: strings.ReplaceAll("  host call filesystem.list '{\"path\":\".\"}'\n"+
			"  host call filesystem.search @args.json    # args.json: {\"pattern\": \"TODO\", \"name\": \"*.go\"}\n"+
			"  echo '{\"path\":\"notes.md\"}' | host call filesystem.read -\n"+
			"  host call filesystem.search --help    # a tool's description and arguments", "host ", a.cmdName()+" "),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || len(args) > 2 {
				return fmt.Errorf("%s call needs a tool name and, optionally, its arguments (%d given)\n\nUsage: %s\n\nExamples:\n%s", a.cmdName(), len(args), cmd.UseLine(), cmd.Example)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			raw := ""
			if len(args) == 2 {
				raw = args[1]
			}
			argJSON, fromStdin, err := a.readArguments(raw)
			if err != nil {
				return err
			}
			ans, err := parseAnswers(answers)
			if err != nil {
				return err
			}
			approver := a.approver(yes, fromStdin)
			h, err := a.open(cmd.Context(), approver)
			if err != nil {
				return err
			}
			defer h.Close()
			name := args[0]
			if real, ok := h.ResolveWireName(name); ok {
				name = real
			}
			res, callErr := h.Invoke(cmd.Context(), plugin.Call{Name: name, Arguments: argJSON, Answers: ans})
			return a.printResult(res, callErr, asJSON)
		},
	}
	generic := cmd.HelpFunc()
	cmd.SetHelpFunc(func(c *cobra.Command, args []string) {
		// host call TOOL --help: the tool's own description and arguments
		// first, then the command's help.
		if rest := c.Flags().Args(); len(rest) > 0 && c.Name() == "call" {
			a.toolHelp(c, rest[0])
		}
		generic(c, args)
	})
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "approve the call in advance (privileged tools)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the whole result as JSON")
	cmd.Flags().StringArrayVar(&answers, "answer", nil, "answer a tool's question: ID=VALUE (repeatable)")
	return cmd
}

// toolHelp prints one tool's description and argument schema, or why it
// cannot (the configuration does not load, the tool is not there).
func (a *app) toolHelp(c *cobra.Command, name string) {
	h, err := a.open(c.Context(), nil)
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		fmt.Fprintf(a.stdout, "(cannot describe %q: the configuration does not load, as said above)\n\n", name)
		return
	case err != nil:
		fmt.Fprintf(a.stdout, "(cannot describe %q: %v)\n\n", name, err)
		return
	}
	defer h.Close()
	if real, ok := h.ResolveWireName(name); ok {
		name = real
	}
	t, err := h.Find(name)
	if err != nil {
		fmt.Fprintf(a.stdout, "%s\n\n", strings.TrimPrefix(err.Error(), string(plugin.CodeToolNotFound)+": "))
		return
	}
	d := t.Descriptor
	fmt.Fprintf(a.stdout, "%s (%s, %s)", d.Name, t.Tier, t.Kind)
	if !t.Available {
		fmt.Fprintf(a.stdout, " unavailable: %s", t.Unavailable)
	}
	fmt.Fprintln(a.stdout)
	if d.Description != "" {
		fmt.Fprintf(a.stdout, "\n%s\n", strings.TrimRight(d.Description, "\n"))
	}
	if len(d.InputSchema) > 0 {
		fmt.Fprintln(a.stdout, "\nArguments (JSON Schema):")
		var v any
		if json.Unmarshal(d.InputSchema, &v) == nil {
			b, _ := json.MarshalIndent(v, "  ", "  ")
			fmt.Fprintf(a.stdout, "  %s\n", b)
		}
	}
	fmt.Fprintln(a.stdout)
}

// readArguments returns the call's arguments from an inline string,
// @file or - (stdin), and whether stdin was used.
func (a *app) readArguments(raw string) (json.RawMessage, bool, error) {
	switch {
	case raw == "":
		return json.RawMessage("{}"), false, nil
	case raw == "-":
		b, err := io.ReadAll(io.LimitReader(a.stdin, 64<<20))
		if err != nil {
			return nil, true, fmt.Errorf("reading arguments from stdin: %w", err)
		}
		return b, true, nil
	case strings.HasPrefix(raw, "@"):
		b, err := os.ReadFile(raw[1:])
		if err != nil {
			return nil, false, fmt.Errorf("reading arguments: %w", err)
		}
		return b, false, nil
	}
	return json.RawMessage(raw), false, nil
}

func parseAnswers(list []string) (map[string]json.RawMessage, error) {
	if len(list) == 0 {
		return nil, nil
	}
	out := map[string]json.RawMessage{}
	for _, s := range list {
		id, v, ok := strings.Cut(s, "=")
		if !ok || id == "" {
			return nil, fmt.Errorf("--answer %q: want ID=VALUE", s)
		}
		if json.Valid([]byte(v)) {
			out[id] = json.RawMessage(v)
		} else {
			b, _ := json.Marshal(v)
			out[id] = b
		}
	}
	return out, nil
}

// printResult prints a result for a person (or as JSON) and turns the
// outcome into the exit code.
func (a *app) printResult(res *plugin.Result, callErr error, asJSON bool) error {
	if asJSON {
		if err := writeJSON(a.stdout, res); err != nil {
			return err
		}
	} else if callErr == nil {
		for _, c := range res.Content {
			switch c.Type {
			case "text":
				fmt.Fprint(a.stdout, c.Text)
				if !strings.HasSuffix(c.Text, "\n") {
					fmt.Fprintln(a.stdout)
				}
			case "image", "audio":
				fmt.Fprintf(a.stdout, "[%s %s, %d bytes]\n", c.Type, c.MIMEType, len(c.Data))
			default:
				fmt.Fprintf(a.stdout, "[%s %s %s]\n", c.Type, c.Name, c.URI)
			}
		}
		if len(res.Content) == 0 && len(res.StructuredContent) > 0 {
			fmt.Fprintln(a.stdout, string(res.StructuredContent))
		}
		if t := res.Truncated; t != nil {
			msg := fmt.Sprintf("[output truncated: %d of %d bytes omitted", t.OmittedBytes, t.OriginalBytes)
			if t.ArtifactID != "" {
				msg += "; full output: host artifact " + t.ArtifactID
			}
			fmt.Fprintln(a.stderr, msg+"]")
		}
	}
	switch {
	case callErr != nil:
		if !asJSON {
			fmt.Fprintf(a.stderr, "Error [%s]: %s\n", res.Code, strings.TrimPrefix(res.TextContent(), string(res.Code)+": "))
		}
		if res.Code == plugin.CodeToolNotFound || res.Code == plugin.CodeInvalidRequest {
			// The command line named a tool that is not there, or gave
			// arguments that the schema check (or the tool itself) refused.
			return &exitError{exitUsage}
		}
		return &exitError{exitToolError}
	case res.NeedsInput != nil:
		if !asJSON {
			fmt.Fprintf(a.stderr, "The tool needs input; call again with --answer %s=VALUE\n", res.NeedsInput.ID)
		}
		return &exitError{exitNeedsInput}
	}
	return nil
}

// approver returns how `host call` decides approvals: --yes approves; a
// terminal asks; otherwise nobody can be asked and the call fails with
// APPROVAL_REQUIRED.
func (a *app) approver(yes, stdinUsed bool) plugin.Approver {
	if yes {
		return plugin.ApproveAll
	}
	return &terminalApprover{a: a, stdinUsed: stdinUsed}
}

// terminalApprover asks on the terminal. It opens the controlling terminal
// itself when stdin carries the arguments.
type terminalApprover struct {
	a         *app
	stdinUsed bool
	mu        sync.Mutex
}

func (t *terminalApprover) Approve(ctx context.Context, req plugin.ApprovalRequest) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	in, out, closeFn, err := t.terminal()
	if err != nil {
		return false, fmt.Errorf("%w: %v (pass --yes to approve in advance)", plugin.ErrCannotAsk, err)
	}
	defer closeFn()
	args := string(req.Arguments)
	if len(args) > 2000 {
		args = args[:2000] + "…"
	}
	fmt.Fprintf(out, "Tool %q (%s) wants to run with arguments:\n  %s\nAllow? [y/N] ", req.Tool, req.Tier, args)
	answer := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(in).ReadString('\n')
		answer <- strings.ToLower(strings.TrimSpace(line))
	}()
	select {
	case <-ctx.Done():
		fmt.Fprintln(out)
		return false, ctx.Err()
	case s := <-answer:
		return s == "y" || s == "yes", nil
	}
}

// terminal returns where to ask: stdin/stderr when stdin is a terminal not
// used for arguments, else /dev/tty.
func (t *terminalApprover) terminal() (io.Reader, io.Writer, func(), error) {
	if f, ok := t.a.stdin.(*os.File); ok && !t.stdinUsed && isatty.IsTerminal(f.Fd()) {
		return f, t.a.stderr, func() {}, nil
	}
	open := t.a.openTTY
	if open == nil {
		open = func() (io.ReadWriteCloser, error) { return os.OpenFile("/dev/tty", os.O_RDWR, 0) }
	}
	tty, err := open()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("no terminal to ask on")
	}
	return tty, tty, func() { tty.Close() }, nil
}
