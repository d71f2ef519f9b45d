// Command jsonrpcfloor is the lowest baseline of BenchmarkFilesystem: the
// same two tools as sdkfloor (plain, unsandboxed Go file access), answered
// over stdio by a loop of a few dozen lines of newline-delimited JSON-RPC,
// with no MCP library. What it costs per call is what the client, the
// pipes and the process hand-offs cost; the difference to sdkfloor is the
// SDK's server.
//
//	jsonrpcfloor DIR
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"github.com/toolhost/toolhost/mcp/testdata/floorfs"
)

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		ProtocolVersion string `json:"protocolVersion"`
		Name            string `json:"name"`
		Arguments       struct {
			Path string `json:"path"`
		} `json:"arguments"`
	} `json:"params"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: jsonrpcfloor DIR")
		os.Exit(2)
	}
	root, err := os.OpenRoot(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	out := bufio.NewWriter(os.Stdout)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return
		}
		var req request
		if json.Unmarshal(line, &req) != nil || len(req.ID) == 0 {
			continue // a notification, or not a request: nothing to answer
		}
		result, rerr := serve(root, &req)
		msg := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		if rerr != nil {
			msg["error"] = rerr
		} else {
			msg["result"] = result
		}
		b, _ := json.Marshal(msg)
		out.Write(append(b, '\n'))
		out.Flush()
	}
}

func serve(root *os.Root, req *request) (any, *rpcError) {
	text := func(s string) any {
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}}
	}
	failed := func(err error) any {
		return map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": err.Error()}}}
	}
	switch req.Method {
	case "initialize":
		return map[string]any{
			"protocolVersion": req.Params.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "jsonrpcfloor", "version": "0"},
		}, nil
	case "ping":
		return map[string]any{}, nil
	case "tools/list":
		schema := map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}
		return map[string]any{"tools": []any{
			map[string]any{"name": "read_text_file", "inputSchema": schema},
			map[string]any{"name": "list_directory", "inputSchema": schema},
		}}, nil
	case "tools/call":
		p := req.Params.Arguments.Path
		switch req.Params.Name {
		case "read_text_file":
			t, err := floorfs.Read(root, p)
			if err != nil {
				return failed(err), nil
			}
			return text(t), nil
		case "list_directory":
			t, err := floorfs.List(root, p)
			if err != nil {
				return failed(err), nil
			}
			return text(t), nil
		}
		return nil, &rpcError{Code: -32602, Message: "unknown tool " + req.Params.Name}
	}
	return nil, &rpcError{Code: -32601, Message: "method not found: " + req.Method}
}
