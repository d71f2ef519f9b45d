package toolhost_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolhost/toolhost"
	"github.com/toolhost/toolhost/plugin"
)

// A host application registers its own Go tool, lets the configuration
// give it a policy, and calls it through the pipeline.
func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "config.hcl")
	os.WriteFile(cfg, []byte(`
host { log_level = "off" }
tool "greet" {
  tier = "read_only"
  go {}
}`), 0o600)

	tools := plugin.NewInProcess()
	tools.Add("greet", plugin.Func(plugin.Descriptor{
		Name:        "greet",
		Description: "Greets someone.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
	}, func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
		var in struct{ Name string }
		if err := req.DecodeArguments(&in); err != nil {
			return nil, err
		}
		return &plugin.Result{Content: []plugin.Content{plugin.Textf("Hello, %s!", in.Name)}}, nil
	}))

	h, err := toolhost.Open(context.Background(), toolhost.Options{ConfigFile: cfg, GoTools: tools})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()

	res, _ := h.Invoke(context.Background(), plugin.Call{Name: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
	fmt.Println(res.TextContent())
	_, err = h.Invoke(context.Background(), plugin.Call{Name: "greet", Arguments: json.RawMessage(`{"name":42}`)})
	fmt.Println(err)
	// Output:
	// Hello, Ada!
	// INVALID_REQUEST: invalid arguments: "name": expected string, got integer 42
}

// A host loaded from a configuration lists the tools it enabled, each
// under the policy its block gives it; a disabled block loads nothing.
func ExampleHost_Tools() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "config.hcl")
	os.WriteFile(cfg, []byte(`
host {
  log_level = "off"
  cache_dir = "./cache"
}
tool "clock.now" {
  tier = "read_only"
  go { tool = "now" }
}
tool "clock.set" {
  tier        = "privileged"
  description = "Sets the clock (asks first)."
  go { tool = "set" }
}
tool "clock.reset" {
  enabled = false
  go { tool = "set" }
}`), 0o600)

	tools := plugin.NewInProcess()
	for _, name := range []string{"now", "set"} {
		tools.Add(name, plugin.Func(plugin.Descriptor{Name: name, Description: "Tells the time."},
			func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
				return &plugin.Result{Content: []plugin.Content{plugin.Text("12:00")}}, nil
			}))
	}
	h, err := toolhost.Open(context.Background(), toolhost.Options{ConfigFile: cfg, GoTools: tools})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()

	for _, t := range h.Tools() {
		fmt.Printf("%s %s %s: %s\n", t.Descriptor.Name, t.Kind, t.Tier, t.Descriptor.Description)
	}
	// Output:
	// clock.now go read_only: Tells the time.
	// clock.set go privileged: Sets the clock (asks first).
}

// Configuration mistakes come back as one error holding every diagnostic,
// printed the way Terraform prints them.
func ExampleConfigError() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "config.hcl")
	os.WriteFile(cfg, []byte(`tool "t" {
  tier = "sometimes"
  go {}
}
`), 0o600)
	_, err := toolhost.Open(context.Background(), toolhost.Options{ConfigFile: cfg})
	if ce, ok := err.(*toolhost.ConfigError); ok {
		for _, d := range ce.Diagnostics {
			fmt.Printf("line %d: %s: %s\n", d.Subject.Start.Line, d.Summary, d.Detail)
		}
	}
	// Output:
	// line 2: Invalid tier: unknown tier "sometimes": want read_only, side_effecting or privileged.
}
