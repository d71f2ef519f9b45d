package extism

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/plugin/config"
)

// exampleHost loads an example's toolhost.hcl, with the example built from
// source beside it, into a host.
func exampleHost(t *testing.T, example string, setup func(dir string)) *plugin.Host {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("..", "examples", "plugins", example, "toolhost.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "toolhost.hcl"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := os.ReadFile(wasmPath[example])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, example+".wasm"), w, 0o644); err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(dir)
	}
	cfg, diags := config.Load(filepath.Join(dir, "toolhost.hcl"))
	if diags.HasErrors() {
		t.Fatalf("%s/toolhost.hcl: %v", example, diags)
	}
	a, err := New(Config{CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	h, err := plugin.NewHost(plugin.Options{Grants: cfg.Grants, Secrets: cfg.Secrets, Adapters: []plugin.Adapter{a}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	for _, sp := range cfg.Tools {
		if err := h.Load(context.Background(), sp); err != nil {
			t.Fatal(err)
		}
	}
	// Compilation runs in the background; under -race on a busy machine it
	// can take longer than the tools' timeouts.
	if err := a.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestExamples(t *testing.T) {
	t.Run("textstats", func(t *testing.T) {
		h := exampleHost(t, "textstats", func(dir string) {
			ws := filepath.Join(dir, "workspace")
			os.Mkdir(ws, 0o755)
			os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("alpha\nbeta\ngamma alpha\n"), 0o644)
		})
		res, err := invoke(t, h, "text_stats", map[string]string{"text": "one two\nthree"})
		if err != nil {
			t.Fatal(err)
		}
		if m := structured(t, res); m["lines"] != float64(2) || m["words"] != float64(3) || m["bytes"] != float64(13) {
			t.Fatalf("text_stats = %v", m)
		}
		res, err = invoke(t, h, "grep_file", map[string]string{"path": "notes.txt", "contains": "alpha"})
		if err != nil {
			t.Fatal(err)
		}
		var g struct{ Matches []string }
		json.Unmarshal(res.StructuredContent, &g)
		if len(g.Matches) != 2 || g.Matches[1] != "gamma alpha" {
			t.Fatalf("grep_file = %s", res.StructuredContent)
		}
		_, err = invoke(t, h, "grep_file", map[string]string{"path": "../../etc/passwd", "contains": "root"})
		if err == nil {
			t.Fatal("grep_file read outside its mount")
		}
		if _, err := invoke(t, h, "text_stats", map[string]any{"text": 42}); plugin.CodeOf(err) != plugin.CodeInvalidRequest {
			t.Fatalf("schema violation: %v", err)
		}
	})
	t.Run("vowels", func(t *testing.T) {
		h := exampleHost(t, "vowels", nil)
		res, err := invoke(t, h, "count_vowels", map[string]string{"text": "Hello, WebAssembly"})
		if err != nil {
			t.Fatal(err)
		}
		if m := structured(t, res); m["count"] != float64(5) || m["vowels"] != "eoa" {
			t.Fatalf("count_vowels = %v", m)
		}
	})
}
