// Command sdkfloor is the baseline of BenchmarkFilesystem: an MCP server
// over stdio built on the official Go SDK, as toolhost is, that serves a
// directory with plain, unsandboxed Go file access. What it costs per call
// is what the SDK's transport costs; the difference to toolhost is the
// sandbox and the pipeline.
//
//	sdkfloor DIR
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

type pathArg struct {
	Path string `json:"path"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: sdkfloor DIR")
		os.Exit(2)
	}
	root, err := os.OpenRoot(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "sdkfloor", Version: "0"}, nil)
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	sdk.AddTool(s, &sdk.Tool{Name: "read_text_file"}, func(_ context.Context, _ *sdk.CallToolRequest, in pathArg) (*sdk.CallToolResult, any, error) {
		b, err := root.ReadFile(in.Path)
		if err != nil {
			return nil, nil, err
		}
		return text(string(b)), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "list_directory"}, func(_ context.Context, _ *sdk.CallToolRequest, in pathArg) (*sdk.CallToolResult, any, error) {
		f, err := root.Open(in.Path)
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		entries, err := f.ReadDir(-1)
		if err != nil {
			return nil, nil, err
		}
		var b strings.Builder
		for _, e := range entries {
			kind := "[FILE]"
			if e.IsDir() {
				kind = "[DIR]"
			}
			fmt.Fprintf(&b, "%s %s\n", kind, filepath.Join(in.Path, e.Name()))
		}
		return text(b.String()), nil, nil
	})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
