package toolhost_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost"
	"github.com/toolhost/toolhost/mcp"
)

// A host application serves the prompts the configuration declares beside
// its tools: Host.ServerOptions hands them to the MCP server.
func ExampleHost_ServerOptions() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "config.hcl")
	os.WriteFile(cfg, []byte(`
host { log_level = "off" }
prompt "greet" {
  description = "Greet someone."
  argument "who" { required = true }
  message {
    role = "user"
    text = "Say hello to {{who}}."
  }
}`), 0o600)

	ctx := context.Background()
	h, err := toolhost.Open(ctx, toolhost.Options{ConfigFile: cfg})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	srv, err := mcp.NewServer(h.Host, h.ServerOptions(mcp.ServerOptions{}))
	if err != nil {
		fmt.Println(err)
		return
	}

	// An MCP client on the other end of a pair of pipes.
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(sctx, sr, sw, time.Second) }()
	client := sdk.NewClient(&sdk.Implementation{Name: "example", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &sdk.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "Ada"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Messages[0].Role, res.Messages[0].Content.(*sdk.TextContent).Text)
	cs.Close()
	stop()
	sw.Close()
	sr.Close()
	<-done
	// Output: user Say hello to Ada.
}
