package mcp_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolhost/toolhost/mcp"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/plugin/plugintest"
)

// TestConformance runs the adapter conformance suite over the MCP client
// adapter, with the fixtures served by a toolhost MCP server over
// streamable HTTP: the adapter and the server front-end meet each other the
// way two toolhost hosts chained together do.
func TestConformance(t *testing.T) {
	backing, err := plugin.NewHost(plugin.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backing.Close() })
	for _, f := range plugintest.Fixtures() {
		tool, ok := plugintest.InProcessFixture(f)
		if !ok {
			t.Fatalf("no in-process fixture %q", f)
		}
		// The backing host must not shape results itself: the suite checks
		// truncation and timeouts at the host it drives.
		spec := plugin.Spec{Name: f, Tier: plugin.TierReadOnly, Limits: plugin.Limits{Preview: plugin.MaxLimits().Preview, Timeout: time.Minute}}
		if err := backing.Register(spec, tool); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := mcp.NewServer(backing, mcp.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	url, _ := httpServer(t, srv, mcp.HTTPOptions{MaxConcurrent: 64})
	server := &plugin.MCPServer{Name: "fx", URL: url}
	plugintest.Run(t, plugintest.Harness{
		Load: func(t testing.TB, fixture string) plugin.Tool {
			a := mcp.NewAdapter(mcp.AdapterOptions{})
			t.Cleanup(func() { a.Close() })
			tool, err := a.Load(context.Background(), &plugin.Spec{Name: "fx/" + fixture, Tier: plugin.TierReadOnly,
				Source: plugin.Source{Kind: mcp.Kind, Tool: fixture, Server: server}})
			if err != nil {
				t.Fatalf("Load %s: %v", fixture, err)
			}
			return tool
		},
	})
}
