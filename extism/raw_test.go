package extism

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/plugin"
)

func rawSpec(module, export string, out string) plugin.Spec {
	sp := plugin.Spec{
		Name:        export,
		Description: "raw export " + export,
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Source:      plugin.Source{Kind: Kind, Path: wasmPath[module], Export: export},
	}
	if out != "" {
		sp.OutputSchema = json.RawMessage(out)
	}
	return sp
}

func TestRawMode(t *testing.T) {
	t.Run("plain export with declared schemas", func(t *testing.T) {
		sp := rawSpec("vowels", "count_vowels", `{"type":"object","properties":{"count":{"type":"integer"}}}`)
		tool := load(t, sp)
		if d := tool.Descriptor(); d.Name != "count_vowels" || d.Description != "raw export count_vowels" || string(d.OutputSchema) == "" {
			t.Fatalf("descriptor %+v", d)
		}
		res, err := call(t, tool, &sp, map[string]any{"text": "Hello, World of WebAssembly"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if m := structured(t, res); m["count"] != float64(7) || m["vowels"] != "eoa" {
			t.Fatalf("count_vowels = %v", m)
		}
	})
	t.Run("text output without output schema", func(t *testing.T) {
		sp := rawSpec("rawguest", "not_json", "")
		res, err := call(t, load(t, sp), &sp, map[string]any{}, nil)
		if err != nil || res.TextContent() != "this is not json" || res.StructuredContent != nil {
			t.Fatalf("res %+v err %v", res, err)
		}
	})
	t.Run("output not JSON although a schema is declared", func(t *testing.T) {
		sp := rawSpec("rawguest", "not_json", `{"type":"object"}`)
		tool := load(t, sp)
		_, err := call(t, tool, &sp, map[string]any{}, nil)
		wantCode(t, err, plugin.CodeOutputInvalid)
		ok := rawSpec("rawguest", "small", `{"type":"object"}`)
		if res, err := call(t, load(t, ok), &ok, map[string]any{}, nil); err != nil || structured(t, res)["ok"] != true {
			t.Fatalf("after invalid output: %v %v", res, err)
		}
	})
}

func TestCallToolOutputInvalid(t *testing.T) {
	for _, tc := range []struct{ tool, want string }{
		{"garbage", "not a JSON CallToolResult"},
		{"truncated", "not a JSON CallToolResult"},
		{"nocontent", `no "content" array`},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			sp := guestSpec("rawguest", tc.tool)
			tool := load(t, sp)
			_, err := call(t, tool, &sp, map[string]any{}, nil)
			wantCode(t, err, plugin.CodeOutputInvalid)
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

func TestStructuredOutput(t *testing.T) {
	// The adapter passes structured content through; the pipeline checks it
	// against the output schema (see TestPipeline).
	sp := guestSpec("hostile", "typed")
	tool := load(t, sp)
	if len(tool.Descriptor().OutputSchema) == 0 {
		t.Fatal("typed declares no output schema")
	}
	res, err := call(t, tool, &sp, map[string]any{}, nil)
	if err != nil || structured(t, res)["n"] != float64(7) {
		t.Fatalf("typed: %v %v", res, err)
	}
}

func TestFastOutput(t *testing.T) {
	t.Run("large text outside the JSON", func(t *testing.T) {
		sp := guestSpec("hostile", "blob")
		res, err := call(t, load(t, sp), &sp, map[string]any{"n": 3 << 20}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.TextContent(); len(got) != 3<<20 || strings.Trim(got, "y") != "" {
			t.Fatalf("got %d bytes", len(got))
		}
	})
	t.Run("secrets redacted from raw text", func(t *testing.T) {
		sp := guestSpec("hostile", "echo")
		long := strings.Repeat("pad ", 2000) + "token=hunter2-secret " + strings.Repeat("pad ", 2000)
		res, err := call(t, load(t, sp), &sp, map[string]any{"text": long}, map[string]string{"PW": "hunter2-secret"})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(res.TextContent(), "hunter2-secret") || !strings.Contains(res.TextContent(), "[REDACTED:PW]") {
			t.Fatalf("secret not redacted from %d bytes of output", len(res.TextContent()))
		}
	})
}
