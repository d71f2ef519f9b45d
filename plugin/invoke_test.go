package plugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolhost/toolhost/plugin"
)

func TestInvokeLookup(t *testing.T) {
	h := newHost(t, plugin.Options{})
	for _, name := range []string{"read_file", "write_file", "list_dir"} {
		mustRegister(t, h, plugin.Spec{Name: name, Tier: plugin.TierReadOnly}, echoArgs())
	}
	tests := []struct {
		name      string
		tool      string
		fragments []string
		absent    []string
	}{
		{"typo", "read_fil", []string{`unknown tool "read_fil"`, `did you mean "read_file"?`}, nil},
		{"case", "READ_FILE", []string{`did you mean "read_file"`}, nil},
		{"two close", "xrite_file", []string{`"write_file"`}, nil},
		{"substring", "dir", []string{`did you mean "list_dir"`}, nil},
		{"nothing close", "launch_missiles", []string{`unknown tool "launch_missiles"`}, []string{"did you mean"}},
		{"empty", "", []string{`unknown tool ""`}, nil},
		{"disabled", "old_tool", []string{`tool "old_tool" is disabled (enabled = false at config.hcl:7)`}, []string{"unknown"}},
	}
	h.NoteDisabled("old_tool", "config.hcl:7")
	if _, err := h.Find("old_tool"); err == nil || !strings.Contains(err.Error(), "is disabled") {
		t.Errorf("Find(old_tool) = %v, want the disabled error", err)
	}
	if ti, err := h.Find("read_file"); err != nil || ti.Descriptor.Name != "read_file" {
		t.Errorf("Find(read_file) = %+v, %v", ti, err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := invoke(t, h, call(tc.tool, `{}`))
			wantErr(t, res, err, plugin.CodeToolNotFound, "", tc.fragments...)
			for _, a := range tc.absent {
				if strings.Contains(err.Error(), a) {
					t.Errorf("error %q contains %q", err, a)
				}
			}
			if !errors.Is(err, plugin.ErrToolNotFound) {
				t.Errorf("errors.Is(err, ErrToolNotFound) = false")
			}
		})
	}
}

func TestInvokeArguments(t *testing.T) {
	var calls atomic.Int64
	tool := fn(`{"type":"object"}`, func(_ context.Context, req *plugin.Request) (*plugin.Result, error) {
		calls.Add(1)
		return textResult(string(req.Arguments)), nil
	})
	h := newHost(t, plugin.Options{})
	mustRegister(t, h, plugin.Spec{Name: "args", Tier: plugin.TierReadOnly, Limits: plugin.Limits{Preview: 2 << 20}}, tool)
	mustRegister(t, h, plugin.Spec{Name: "small", Tier: plugin.TierReadOnly, Limits: plugin.Limits{Arguments: 100}}, tool)

	// A JSON object of exactly n bytes.
	object := func(n int) string {
		const pre, post = `{"s":"`, `"}`
		return pre + strings.Repeat("x", n-len(pre)-len(post)) + post
	}
	tests := []struct {
		name   string
		tool   string
		args   string
		want   string // the arguments the tool sees, on success
		code   plugin.Code
		limit  string
		phrase string
	}{
		{name: "empty is {}", tool: "args", args: "", want: "{}"},
		{name: "whitespace is {}", tool: "args", args: " \n\t ", want: "{}"},
		{name: "object", tool: "args", args: `{"a":1}`, want: `{"a":1}`},
		{name: "surrounding space trimmed", tool: "args", args: "  {\"a\": [1, 2]}\n", want: `{"a": [1, 2]}`},
		{name: "malformed", tool: "args", args: `{"a":`, code: plugin.CodeInvalidRequest, phrase: "arguments are not valid JSON"},
		{name: "trailing garbage", tool: "args", args: `{} {}`, code: plugin.CodeInvalidRequest, phrase: "not valid JSON"},
		{name: "array", tool: "args", args: `[1,2]`, code: plugin.CodeInvalidRequest, phrase: "arguments must be a JSON object, got array"},
		{name: "string", tool: "args", args: `"hi"`, code: plugin.CodeInvalidRequest, phrase: "must be a JSON object, got string"},
		{name: "null", tool: "args", args: `null`, code: plugin.CodeInvalidRequest, phrase: "must be a JSON object, got null"},
		{name: "number", tool: "args", args: `42`, code: plugin.CodeInvalidRequest, phrase: "must be a JSON object, got number"},
		{name: "at default limit", tool: "args", args: object(1 << 20), want: object(1 << 20)},
		{name: "over default limit", tool: "args", args: object(1<<20 + 1), code: plugin.CodeLimitExceeded, limit: "arguments", phrase: "over the 1MiB limit"},
		{name: "garbage over limit", tool: "args", args: strings.Repeat("[", 1<<20+1), code: plugin.CodeLimitExceeded, limit: "arguments"},
		{name: "at spec limit", tool: "small", args: object(100), want: object(100)},
		{name: "over spec limit", tool: "small", args: object(101), code: plugin.CodeLimitExceeded, limit: "arguments", phrase: "arguments are 101B, over the 100B limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := calls.Load()
			res, err := invoke(t, h, call(tc.tool, tc.args))
			if tc.code == "" {
				wantOK(t, res, err, tc.want)
				return
			}
			wantErr(t, res, err, tc.code, tc.limit, tc.phrase)
			if calls.Load() != before {
				t.Error("the tool ran on refused arguments")
			}
			if tc.limit != "" && !errors.Is(err, &plugin.Error{Code: plugin.CodeLimitExceeded, Limit: tc.limit}) {
				t.Errorf("errors.Is(err, LIMIT_EXCEEDED/%s) = false", tc.limit)
			}
		})
	}
}

func TestRegisterComposition(t *testing.T) {
	grants := plugin.Capabilities{
		Mounts: []plugin.Mount{
			{HostPath: "/work/a", GuestPath: "/a"},
			{HostPath: "/data", GuestPath: "/data", ReadOnly: true},
		},
		Hosts:   []plugin.HostRule{{Host: "api.example.com"}, {Host: "*.example.org", Port: 443}},
		Secrets: []string{"API_KEY"},
		Invoke:  []string{"echo"},
		Env:     []string{"HOME"},
	}
	mount := func(p string, ro bool) plugin.Capabilities {
		return plugin.Capabilities{Mounts: []plugin.Mount{{HostPath: p, GuestPath: "/m", ReadOnly: ro}}}
	}
	host := func(s string) plugin.Capabilities {
		r, err := plugin.ParseHostRule(s)
		if err != nil {
			t.Fatal(err)
		}
		return plugin.Capabilities{Hosts: []plugin.HostRule{r}}
	}
	tests := []struct {
		name   string
		caps   plugin.Capabilities
		denied string // "" when the tool loads; else a fragment of the message
	}{
		{"nothing", plugin.Capabilities{}, ""},
		{"granted mount", mount("/work/a", false), ""},
		{"below granted mount", mount("/work/a/sub/dir", true), ""},
		{"read-only under read-write grant", mount("/work/a", true), ""},
		{"prefix is not a parent", mount("/work/ab", false), `declares mount "/work/ab" (read-write), which the host does not grant`},
		{"parent of grant", mount("/work", true), `mount "/work" (read-only)`},
		{"dot-dot escape", mount("/work/a/../b", true), `mount "/work/a/../b"`},
		{"relative path", mount("work/a", true), `mount "work/a"`},
		{"read-only grant, read-only mount", mount("/data/x", true), ""},
		{"read-write under read-only grant", mount("/data", false), `mount "/data" (read-write)`},
		{"granted host", host("api.example.com"), ""},
		{"granted host covers a web port", host("api.example.com:443"), ""},
		{"granted host without port: no other port", host("api.example.com:8443"), `declares host "api.example.com:8443"`},
		{"other host", host("evil.com"), `declares host "evil.com"`},
		{"subdomain of exact grant", host("x.api.example.com"), `host "x.api.example.com"`},
		{"wildcard grant, subdomain, port", host("x.example.org:443"), ""},
		{"wildcard grant, deep subdomain", host("a.b.example.org:443"), ""},
		{"wildcard grant, other port", host("x.example.org:80"), `host "x.example.org:80"`},
		{"wildcard grant, any port", host("x.example.org"), `host "x.example.org"`},
		{"wildcard grant, apex", host("example.org:443"), `host "example.org:443"`},
		{"wildcard under wildcard", host("*.example.org:443"), ""},
		{"wildcard over exact", host("*.example.com"), `host "*.example.com"`},
		{"granted secret", plugin.Capabilities{Secrets: []string{"API_KEY"}}, ""},
		{"other secret", plugin.Capabilities{Secrets: []string{"DB_PASSWORD"}}, `declares secret "DB_PASSWORD"`},
		{"granted invoke", plugin.Capabilities{Invoke: []string{"echo"}}, ""},
		{"other invoke", plugin.Capabilities{Invoke: []string{"shell"}}, `declares invoke "shell"`},
		{"invoke everything", plugin.Capabilities{Invoke: []string{"*"}}, `declares invoke "*"`},
		{"subprocess", plugin.Capabilities{Subprocess: true}, "tool.exec.subprocess"},
		{"granted env", plugin.Capabilities{Env: []string{"HOME"}}, ""},
		{"other env", plugin.Capabilities{Env: []string{"AWS_SECRET_ACCESS_KEY"}}, `declares env "AWS_SECRET_ACCESS_KEY"`},
		{"several", plugin.Capabilities{Secrets: []string{"A"}, Env: []string{"B"}}, `secret "A"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, plugin.Options{Grants: grants})
			err := h.Register(plugin.Spec{Name: "tool", Capabilities: tc.caps}, echoArgs())
			if tc.denied == "" {
				if err != nil {
					t.Fatalf("Register: %v", err)
				}
				if _, ok := h.Tool("tool"); !ok {
					t.Fatal("registered tool is not listed")
				}
				return
			}
			if err == nil {
				t.Fatalf("Register succeeded; want CAPABILITY_DENIED mentioning %q", tc.denied)
			}
			if !errors.Is(err, plugin.ErrCapabilityDenied) {
				t.Errorf("errors.Is(err, ErrCapabilityDenied) = false for %v", err)
			}
			if !strings.Contains(err.Error(), tc.denied) {
				t.Errorf("error %q does not contain %q", err, tc.denied)
			}
			if _, ok := h.Tool("tool"); ok {
				t.Error("a refused tool is listed")
			}
			if len(h.Tools()) != 0 {
				t.Errorf("Tools() = %d entries, want none", len(h.Tools()))
			}
			res, err := invoke(t, h, call("tool", `{}`))
			wantErr(t, res, err, plugin.CodeToolNotFound, "")
		})
	}
	t.Run("every violation is named", func(t *testing.T) {
		caps := plugin.Capabilities{Secrets: []string{"A"}, Env: []string{"B"}, Subprocess: true, Mounts: mount("/etc", true).Mounts}
		v := caps.Exceeding(grants)
		var kinds []string
		for _, x := range v {
			kinds = append(kinds, x.Kind)
		}
		if got := strings.Join(kinds, ","); got != "mount,secret,capability,env" {
			t.Errorf("violation kinds = %s", got)
		}
	})
	t.Run("subprocess granted", func(t *testing.T) {
		h := newHost(t, plugin.Options{Grants: plugin.Capabilities{Subprocess: true}})
		mustRegister(t, h, plugin.Spec{Name: "native", Capabilities: plugin.Capabilities{Subprocess: true}}, echoArgs())
	})
	t.Run("invoke star granted", func(t *testing.T) {
		h := newHost(t, plugin.Options{Grants: plugin.Capabilities{Invoke: []string{"*"}}})
		mustRegister(t, h, plugin.Spec{Name: "any", Capabilities: plugin.Capabilities{Invoke: []string{"*", "x"}}}, echoArgs())
	})
}

func TestRegisterRefusals(t *testing.T) {
	tests := []struct {
		name   string
		spec   plugin.Spec
		tool   plugin.Tool
		phrase string
	}{
		{"nil tool", plugin.Spec{Name: "x"}, nil, "nil tool"},
		{"empty name", plugin.Spec{Name: ""}, echoArgs(), "tool name"},
		{"bad name", plugin.Spec{Name: "rm -rf"}, echoArgs(), `tool name "rm -rf"`},
		{"leading slash", plugin.Spec{Name: "/x"}, echoArgs(), "tool name"},
		{"long name", plugin.Spec{Name: strings.Repeat("a", 129)}, echoArgs(), "tool name"},
		{"limit above max", plugin.Spec{Name: "x", Limits: plugin.Limits{Memory: 2 << 30}}, echoArgs(), "limit memory = 2GiB is above the maximum 1GiB"},
		{"negative limit", plugin.Spec{Name: "x", Limits: plugin.Limits{HTTPRequests: -1}}, echoArgs(), "http_requests"},
		{"input schema not an object", plugin.Spec{Name: "x", InputSchema: json.RawMessage(`{"type":"string"}`)}, echoArgs(), "input schema must describe an object"},
		{"input schema not JSON", plugin.Spec{Name: "x", InputSchema: json.RawMessage(`{"type":`)}, echoArgs(), "input schema: schema is not valid JSON"},
		{"input schema an array", plugin.Spec{Name: "x", InputSchema: json.RawMessage(`[]`)}, echoArgs(), "schema must be a JSON object, got array"},
		{"unknown type", plugin.Spec{Name: "x", InputSchema: json.RawMessage(`{"type":"objekt"}`)}, echoArgs(), "input schema: invalid schema"},
		{"bad keyword value", plugin.Spec{Name: "x", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"minimum":"zero"}}}`)}, echoArgs(), "invalid schema"},
		{"bad pattern", plugin.Spec{Name: "x", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","pattern":"(("}}}`)}, echoArgs(), "invalid schema"},
		{"output schema invalid", plugin.Spec{Name: "x", OutputSchema: json.RawMessage(`{"type":12}`)}, echoArgs(), "output schema: invalid schema"},
		{"tool's own schema invalid", plugin.Spec{Name: "x"}, fn(`{"type":"object","required":"a"}`, nil), "input schema: invalid schema"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, plugin.Options{})
			err := h.Register(tc.spec, tc.tool)
			if err == nil {
				t.Fatalf("Register succeeded; want an error containing %q", tc.phrase)
			}
			if !strings.Contains(err.Error(), tc.phrase) {
				t.Errorf("error %q does not contain %q", err, tc.phrase)
			}
			if len(h.Tools()) != 0 {
				t.Error("a refused tool is listed")
			}
		})
	}
	t.Run("twice", func(t *testing.T) {
		h := newHost(t, plugin.Options{})
		mustRegister(t, h, plugin.Spec{Name: "x"}, echoArgs())
		if err := h.Register(plugin.Spec{Name: "x"}, echoArgs()); err == nil || !strings.Contains(err.Error(), "registered twice") {
			t.Errorf("second Register: %v", err)
		}
	})
	t.Run("after close", func(t *testing.T) {
		h := newHost(t, plugin.Options{})
		h.Close()
		if err := h.Register(plugin.Spec{Name: "x"}, echoArgs()); err == nil {
			t.Error("Register on a closed host succeeded")
		}
		res, err := invoke(t, h, call("x", `{}`))
		wantErr(t, res, err, plugin.CodeToolUnavailable, "")
	})
}

// TestSchemaExternalRefs proves that a schema never makes the host read a
// file or fetch a URL: the referenced documents exist and are valid, so a
// compile that followed the reference would succeed.
func TestSchemaExternalRefs(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "defs.json")
	if err := os.WriteFile(file, []byte(`{"type":"string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"type":"string"}`)
	}))
	defer srv.Close()

	for _, ref := range []string{
		"file:///etc/passwd",
		"file://" + filepath.ToSlash(file),
		"/etc/passwd",
		"../../../../etc/passwd",
		srv.URL + "/defs.json",
	} {
		t.Run(ref, func(t *testing.T) {
			h := newHost(t, plugin.Options{})
			schema := fmt.Sprintf(`{"type":"object","properties":{"a":{"$ref":%q}}}`, ref)
			err := h.Register(plugin.Spec{Name: "x", InputSchema: json.RawMessage(schema)}, echoArgs())
			if err == nil {
				t.Fatalf("a schema with $ref %q compiled", ref)
			}
			if !strings.Contains(err.Error(), "external references are not loaded") {
				t.Errorf("error %q does not say external references are refused", err)
			}
			if _, err := plugin.CompileSchema(json.RawMessage(schema)); err == nil {
				t.Error("CompileSchema accepted it")
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the schema server was asked %d times", n)
	}
	t.Run("internal refs and known drafts work", func(t *testing.T) {
		for _, schema := range []string{
			`{"type":"object","properties":{"a":{"$ref":"#/$defs/s"}},"$defs":{"s":{"type":"string"}}}`,
			`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"$ref":"#/definitions/s"}},"definitions":{"s":{"type":"string"}}}`,
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`,
		} {
			s, err := plugin.CompileSchema(json.RawMessage(schema))
			if err != nil {
				t.Errorf("CompileSchema(%s): %v", schema, err)
				continue
			}
			if err := s.ValidateJSON([]byte(`{"a":1}`)); err == nil && strings.Contains(schema, `"a"`) {
				t.Errorf("%s accepted {\"a\":1}", schema)
			}
		}
	})
}

func TestInputValidation(t *testing.T) {
	const schema = `{
		"type": "object",
		"properties": {
			"path":    {"type": "string"},
			"limit":   {"type": "integer"},
			"mode":    {"enum": ["fast", "slow"]},
			"flag":    {"const": true},
			"options": {
				"type": "object",
				"properties": {"depth": {"type": "integer", "minimum": 0}},
				"additionalProperties": false
			},
			"items":   {"type": "array", "items": {"type": "string"}}
		},
		"required": ["path"],
		"additionalProperties": false
	}`
	var ran atomic.Int64
	h := newHost(t, plugin.Options{})
	mustRegister(t, h, plugin.Spec{Name: "read", Tier: plugin.TierReadOnly}, fn(schema, func(context.Context, *plugin.Request) (*plugin.Result, error) {
		ran.Add(1)
		return textResult("ok"), nil
	}))
	const prefix = "INVALID_REQUEST: invalid arguments: "
	tests := []struct {
		name string
		args string
		want string // the whole error message after prefix; "" for success
	}{
		{"valid", `{"path":"a","limit":10,"mode":"fast","options":{"depth":2},"items":["x"]}`, ""},
		{"missing required", `{}`, `missing required field "path"`},
		{"wrong type", `{"path":"a","limit":"ten"}`, `"limit": expected integer, got string "ten"`},
		{"number for integer", `{"path":"a","limit":1.5}`, `"limit": expected integer, got number 1.5`},
		{"null", `{"path":null}`, `"path": expected string, got null`},
		{"object for string", `{"path":{"p":1}}`, `"path": expected string, got object`},
		{"boolean for string", `{"path":true}`, `"path": expected string, got boolean true`},
		{"unexpected field", `{"path":"a","recursive":true}`, `unexpected field "recursive" (not in the schema)`},
		{"enum", `{"path":"a","mode":"medium"}`, `"mode": expected one of "fast", "slow", got string "medium"`},
		{"const", `{"path":"a","flag":false}`, `"flag": expected true, got boolean false`},
		{"nested type", `{"path":"a","options":{"depth":"deep"}}`, `"options.depth": expected integer, got string "deep"`},
		{"nested unexpected", `{"path":"a","options":{"width":1}}`, `"options": unexpected field "width" (not in the schema)`},
		{"array item", `{"path":"a","items":["x",2]}`, `"items[1]": expected string, got integer 2`},
		{"long value is abbreviated", `{"path":"a","limit":"` + strings.Repeat("z", 100) + `"}`, `"limit": expected integer, got string "` + strings.Repeat("z", 50) + `..." (100 bytes)`},
		{"abbreviation keeps UTF-8 whole", `{"path":"a","limit":"` + strings.Repeat("é", 100) + `"}`, `"limit": expected integer, got string "` + strings.Repeat("é", 25) + `..." (200 bytes)`},
		{"abbreviation keeps escapes whole", `{"path":"a","limit":"` + strings.Repeat(`\"`, 60) + `"}`, `"limit": expected integer, got string "` + strings.Repeat(`\"`, 50) + `..." (60 bytes)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := ran.Load()
			res, err := invoke(t, h, call("read", tc.args))
			if tc.want == "" {
				wantOK(t, res, err, "ok")
				return
			}
			wantErr(t, res, err, plugin.CodeInvalidRequest, "")
			if got := strings.TrimPrefix(err.Error(), prefix); got != tc.want {
				t.Errorf("message:\n got %s\nwant %s", got, tc.want)
			}
			if ran.Load() != before {
				t.Error("the tool ran on invalid arguments")
			}
			var se *plugin.SchemaError
			if !errors.As(err, &se) || len(se.Problems) == 0 {
				t.Errorf("errors.As(err, *SchemaError) failed")
			}
		})
	}
	t.Run("minimum", func(t *testing.T) {
		res, err := invoke(t, h, call("read", `{"path":"a","options":{"depth":-1}}`))
		wantErr(t, res, err, plugin.CodeInvalidRequest, "", `"options.depth": `, "-1")
	})
	t.Run("several problems, always in one order", func(t *testing.T) {
		const want = prefix + `missing required field "path"; unexpected fields "extra", "more", "zz" (not in the schema); ` +
			`"items[0]": expected string, got integer 1; "limit": expected integer, got string "x"; "mode": expected one of "fast", "slow", got integer 3; ` +
			`"options.depth": expected integer, got boolean true`
		for range 20 {
			res, err := invoke(t, h, call("read", `{"zz":0,"options":{"depth":true},"mode":3,"limit":"x","items":[1],"more":2,"extra":1}`))
			wantErr(t, res, err, plugin.CodeInvalidRequest, "")
			if err.Error() != want {
				t.Fatalf("message:\n got %s\nwant %s", err, want)
			}
		}
	})
}

// TestHugeNumbers: the validator checks numbers exactly (math/big) before
// any deadline exists, so numbers that would cost it seconds are refused
// first, cheaply.
func TestHugeNumbers(t *testing.T) {
	h := newHost(t, plugin.Options{})
	mustRegister(t, h, plugin.Spec{Name: "n", Tier: plugin.TierReadOnly},
		fn(`{"type":"object","properties":{"n":{"type":"integer"},"xs":{"type":"array","items":{"type":"number","multipleOf":3}},"s":{"type":"string"}}}`,
			func(context.Context, *plugin.Request) (*plugin.Result, error) { return textResult("ok"), nil }))
	tests := []struct {
		args string
		ok   bool
	}{
		{`{"n":12345678901234567890}`, true},
		{`{"xs":[1.7976931348623157e308, -4.9e-324, 6e23, 1E+400, 1e-400]}`, true},
		{`{"s":"1e1000000 ` + strings.Repeat("9", 1000) + `"}`, true}, // in a string: not a number
		{`{"s":"\"","n":1}`, true},
		{`{"n":1e1000000}`, false},
		{`{"n":-1E+401}`, false},
		{`{"xs":[3, 1e-1000000]}`, false},
		{`{"n":1` + strings.Repeat("0", 1_000_000) + `}`, false},
		{`{"n":0.` + strings.Repeat("3", 100) + `}`, false},
		{`{"s":"\\","n":1e999}`, false},
	}
	for _, tc := range tests {
		name := tc.args
		if len(name) > 60 {
			name = name[:60]
		}
		t.Run(name, func(t *testing.T) {
			res, err := invoke(t, h, call("n", tc.args))
			if tc.ok {
				if err != nil && !strings.Contains(err.Error(), "multipleOf") {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			wantErr(t, res, err, plugin.CodeInvalidRequest, "", "is out of range")
			if len(err.Error()) > 200 {
				t.Errorf("message of %d bytes", len(err.Error()))
			}
		})
	}
}
