// Command embed shows a host application embedding toolhost as a library:
// it offers one of its own Go functions as a tool, gives it a policy in
// HCL, and calls it through the full pipeline (validation, limits,
// truncation, audit), the same way an agent loop would.
//
//	go run ./examples/embed
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolhost/toolhost"
	"github.com/toolhost/toolhost/plugin"
)

// The operator's configuration: the host app's Go tool, read-only, with a
// 2 s deadline. A real app keeps this in a file next to its binary.
const configHCL = `
host {
  log_level = "off"
}

tool "text.stats" {
  description = "Counts the words, lines and characters of a text."
  tier        = "read_only"
  go {}
  limits {
    timeout = "2s"
  }
}
`

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	return runTo(ctx, os.Stdout)
}

func runTo(ctx context.Context, w io.Writer) error {
	// The app's own tool: a typed Go function behind an MCP-style descriptor.
	goTools := plugin.NewInProcess()
	stats := plugin.Func(plugin.Descriptor{
		Name: "text.stats",
		InputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {"text": {"type": "string", "description": "The text to measure."}},
			"required": ["text"],
			"additionalProperties": false
		}`),
		OutputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {"words": {"type": "integer"}, "lines": {"type": "integer"}, "chars": {"type": "integer"}},
			"required": ["words", "lines", "chars"]
		}`),
	}, func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
		var in struct{ Text string }
		if err := req.DecodeArguments(&in); err != nil {
			return nil, err
		}
		out, _ := json.Marshal(map[string]int{
			"words": len(strings.Fields(in.Text)),
			"lines": strings.Count(in.Text, "\n") + 1,
			"chars": len([]rune(in.Text)),
		})
		return &plugin.Result{StructuredContent: out}, nil
	})
	if err := goTools.Add("text.stats", stats); err != nil {
		return err
	}

	dir, err := os.MkdirTemp("", "toolhost-embed")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfgFile := filepath.Join(dir, "config.hcl")
	if err := os.WriteFile(cfgFile, []byte(configHCL), 0o600); err != nil {
		return err
	}

	h, err := toolhost.Open(ctx, toolhost.Options{ConfigFile: cfgFile, GoTools: goTools})
	if err != nil {
		var ce *toolhost.ConfigError
		if errors.As(err, &ce) {
			ce.Write(os.Stderr, 100, false)
		}
		return err
	}
	defer h.Close()

	for _, t := range h.Tools() {
		fmt.Fprintf(w, "tool %s (%s): %s\n", t.Descriptor.Name, t.Tier, t.Descriptor.Description)
	}

	// A good call, then the kind of mistake a model makes.
	for _, args := range []string{`{"text": "one two three\nfour"}`, `{"txt": "oops"}`} {
		res, err := h.Invoke(ctx, plugin.Call{Name: "text.stats", Arguments: json.RawMessage(args)})
		if err != nil {
			fmt.Fprintf(w, "error: %s\n", res.TextContent())
			continue
		}
		fmt.Fprintf(w, "result: %s\n", res.StructuredContent)
	}
	return nil
}
