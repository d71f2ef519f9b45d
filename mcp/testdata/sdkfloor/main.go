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

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/mcp/testdata/floorfs"
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
		t, err := floorfs.Read(root, in.Path)
		if err != nil {
			return nil, nil, err
		}
		return text(t), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "list_directory"}, func(_ context.Context, _ *sdk.CallToolRequest, in pathArg) (*sdk.CallToolResult, any, error) {
		t, err := floorfs.List(root, in.Path)
		if err != nil {
			return nil, nil, err
		}
		return text(t), nil, nil
	})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
