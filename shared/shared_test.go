package shared_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/toolhost/toolhost/shared"
)

type greeter struct{}

func (greeter) ListTools(context.Context) ([]shared.Tool, error) {
	return []shared.Tool{{Name: "greet", Description: "Greet someone.",
		InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: json.RawMessage(`{"readOnlyHint":true}`)}}, nil
}

func (greeter) CallTool(_ context.Context, name string, args json.RawMessage) (*shared.CallToolResult, error) {
	switch name {
	case "greet":
		var a struct{ Name string }
		if err := json.Unmarshal(args, &a); err != nil || a.Name == "" {
			return shared.ErrorResult("name: expected a non-empty string"), nil
		}
		return shared.TextResult("hello, " + a.Name), nil
	case "nil":
		return nil, nil
	}
	return nil, fmt.Errorf("%w: %s", shared.ErrUnknownTool, name)
}

// client returns a host-side client talking gRPC to greeter in process,
// through go-plugin's own transport.
func client(t *testing.T) *shared.Client {
	t.Helper()
	c, _ := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{shared.PluginName: &shared.GRPCPlugin{Impl: greeter{}}})
	// Close asks the server to shut down (go-plugin's controller); stopping
	// the server here as well would race with that.
	t.Cleanup(func() { c.Close() })
	raw, err := c.Dispense(shared.PluginName)
	if err != nil {
		t.Fatal(err)
	}
	return raw.(*shared.Client)
}

func TestListTools(t *testing.T) {
	got, err := client(t).ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"tools":[{"name":"greet","description":"Greet someone.","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestCallTool(t *testing.T) {
	c := client(t)
	for _, tc := range []struct {
		req, want, err string
	}{
		{`{"params":{"name":"greet","arguments":{"name":"Ada"}}}`, `{"content":[{"type":"text","text":"hello, Ada"}]}`, ""},
		{`{"params":{"name":"greet","arguments":{}}}`, `{"content":[{"type":"text","text":"name: expected a non-empty string"}],"isError":true}`, ""},
		{`{"params":{"name":"nil"}}`, `{"content":[]}`, ""},
		{`{"params":{"name":"nope"}}`, "", "unknown tool: nope"},
		{`not json`, "", "tools/call request"},
	} {
		got, err := c.CallTool(context.Background(), []byte(tc.req))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want %q", tc.req, err, tc.err)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("%s:\n got  %s (%v)\n want %s", tc.req, got, err, tc.want)
		}
	}
}

func TestGRPCServerNeedsImpl(t *testing.T) {
	if err := (&shared.GRPCPlugin{}).GRPCServer(nil, nil); err == nil {
		t.Fatal("a server without Impl was accepted")
	}
	if !errors.Is(fmt.Errorf("x: %w", shared.ErrUnknownTool), shared.ErrUnknownTool) {
		t.Fatal("ErrUnknownTool does not match wrapped")
	}
}
