package extism

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/extism/builtin"
	"github.com/toolhost/toolhost/plugin"
)

// A host compiles only the tools it calls, and a restart lists a
// multi-tool plugin's tools without instantiating it: the list_tools answer
// is cached beside the module.
func TestLazyCompileAndCachedListing(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	mount := []plugin.Mount{{HostPath: ws, GuestPath: "/workspace", ReadOnly: true}}
	tools := []string{"filesystem.read", "filesystem.list", "filesystem.search"}

	start := func() (*plugin.Host, *syncBuffer) {
		logs := &syncBuffer{}
		a, err := New(Config{CacheDir: cache, Builtins: builtin.LookupTool,
			Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: logs})})
		if err != nil {
			t.Fatal(err)
		}
		h, err := plugin.NewHost(plugin.Options{Adapters: []plugin.Adapter{a}, Grants: plugin.Capabilities{Mounts: mount}})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range tools {
			if err := h.Load(context.Background(), plugin.Spec{Name: name, Tier: plugin.TierReadOnly,
				Source:       plugin.Source{Kind: Kind, Builtin: "filesystem", Tool: name},
				Capabilities: plugin.Capabilities{Mounts: mount}}); err != nil {
				t.Fatal(err)
			}
		}
		return h, logs
	}

	// First start: listing needs one compiled tool per module (the
	// filesystem plugin's read and list tools are the filesystem-rs
	// module's, search the Go module's); the others stay idle.
	h, logs := start()
	if n := strings.Count(logs.String(), "compiled:"); n != 2 {
		t.Errorf("first start compiled %d tools to list them, want 2", n)
	}
	for _, ti := range h.Tools() {
		if !strings.Contains(string(ti.Descriptor.InputSchema), `"path"`) {
			t.Errorf("%s: descriptor not from list_tools: %s", ti.Descriptor.Name, ti.Descriptor.InputSchema)
		}
	}
	h.Close()

	// Second start: nothing is compiled until a call, and then only the
	// called tool.
	h, logs = start()
	defer h.Close()
	if n := strings.Count(logs.String(), "compiled:"); n != 0 {
		t.Errorf("warm start compiled %d tools before any call, want 0", n)
	}
	res, err := h.Invoke(context.Background(), plugin.Call{Name: "filesystem.read", Arguments: json.RawMessage(`{"path":"a.txt"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.TextContent(), "alpha") {
		t.Errorf("read = %q", res.TextContent())
	}
	if n := strings.Count(logs.String(), "compiled:"); n != 1 {
		t.Errorf("one call compiled %d tools, want 1", n)
	}
}
