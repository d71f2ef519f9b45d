package plugin_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolhost/toolhost/plugin"
)

// fuzzSchema is deliberately nontrivial: nesting, arrays, enums, formats
// of numbers, patterns, a $ref and a oneOf.
const fuzzSchema = `{
	"type": "object",
	"properties": {
		"path":    {"type": "string", "minLength": 1, "maxLength": 4096, "pattern": "^[^\\x00]*$"},
		"limit":   {"type": "integer", "minimum": 0, "maximum": 1000},
		"ratio":   {"type": "number", "exclusiveMinimum": 0},
		"mode":    {"enum": ["fast", "slow", null, 3]},
		"tags":    {"type": "array", "items": {"type": "string"}, "maxItems": 8, "uniqueItems": true},
		"options": {"$ref": "#/$defs/options"},
		"target":  {"oneOf": [{"type": "string", "format": "uri"}, {"type": "object", "required": ["host"]}]}
	},
	"required": ["path"],
	"additionalProperties": false,
	"$defs": {
		"options": {
			"type": "object",
			"properties": {"depth": {"type": "integer"}, "follow": {"type": "boolean"}},
			"additionalProperties": {"type": "string"}
		}
	}
}`

// FuzzInvokeArguments sends arbitrary bytes as a call's arguments. The
// pipeline must never panic, must always return a Result, and may only
// answer with success, INVALID_REQUEST or LIMIT_EXCEEDED (arguments). A
// call that succeeds must have handed the tool a JSON object valid against
// the schema.
func FuzzInvokeArguments(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `{"path":"a"}`, `{"path":""}`, `{"path":"a","limit":10,"mode":"fast","tags":["x","y"]}`,
		`{"path":"a","limit":"ten"}`, `{"path":"a","options":{"depth":2,"extra":"s"}}`, `{"path":"a","options":{"extra":1}}`,
		`{"path":"a","target":"https://example.com"}`, `{"path":"a","target":{"host":"x"}}`, `{"path":"a","target":1}`,
		`{"path":"a","ratio":1e308}`, `{"path":"a","limit":1e400}`, `{"path":"a","limit":-0}`, `{"path":"a","limit":1.0}`,
		`{"path":"a","tags":["x","x"]}`, `{"path":"a","mode":null}`, `{"path":"a","path":"b"}`, `{"path":"\u0000"}`,
		`{"path":"\ud800"}`, "{\"path\":\"\xff\"}", `[`, `[]`, `null`, `"x"`, `1`, `true`, `{"a":`, `{} {}`, ` {"path":"a"} `,
		strings.Repeat("[", 10000), `{"path":"a","x":` + strings.Repeat(`{"a":`, 200) + `1` + strings.Repeat(`}`, 200) + `}`,
	} {
		f.Add([]byte(seed))
	}
	schema, err := plugin.CompileSchema(json.RawMessage(fuzzSchema))
	if err != nil {
		f.Fatal(err)
	}
	h, err := plugin.NewHost(plugin.Options{})
	if err != nil {
		f.Fatal(err)
	}
	defer h.Close()
	tool := fn(fuzzSchema, func(_ context.Context, req *plugin.Request) (*plugin.Result, error) {
		var v map[string]any
		if err := json.Unmarshal(req.Arguments, &v); err != nil {
			return nil, plugin.Errorf(plugin.CodeOutputInvalid, "tool got arguments that are not an object: %v", err)
		}
		if err := schema.ValidateJSON(req.Arguments); err != nil {
			return nil, plugin.Errorf(plugin.CodeOutputInvalid, "tool got invalid arguments: %v", err)
		}
		return textResult("ok"), nil
	})
	if err := h.Register(plugin.Spec{Name: "fuzz", Tier: plugin.TierReadOnly, Limits: plugin.Limits{Arguments: 64 << 10}}, tool); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		c := plugin.Call{Name: "fuzz", Arguments: args}
		res, err := h.Invoke(context.Background(), c)
		checkResult(t, c, res, err)
		switch res.Code {
		case "":
			if res.TextContent() != "ok" {
				t.Fatalf("success with %q", res.TextContent())
			}
		case plugin.CodeInvalidRequest:
			if !utf8.ValidString(err.Error()) && utf8.Valid(args) {
				t.Fatalf("invalid UTF-8 in the message for valid UTF-8 arguments: %q", err)
			}
		case plugin.CodeLimitExceeded:
			if res.Limit != "arguments" || len(args) <= 64<<10 {
				t.Fatalf("LIMIT_EXCEEDED %q for %d bytes", res.Limit, len(args))
			}
		default:
			t.Fatalf("code %s for %q: %v", res.Code, args, err)
		}
	})
}

// FuzzTruncate checks Truncate's promises on arbitrary input: within max
// when max ≥ 64, valid UTF-8 in gives valid UTF-8 out, and head + omitted +
// tail add up to the input.
func FuzzTruncate(f *testing.F) {
	f.Add("hello", 64)
	f.Add(strings.Repeat("0123456789", 100), 100)
	f.Add(strings.Repeat("line\n", 100), 64)
	f.Add(strings.Repeat("😀é", 200), 65)
	f.Add(strings.Repeat("\n", 300), 64)
	f.Add("\xff\xfe\xfd"+strings.Repeat("a", 200), 70)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max > 1<<20 {
			max %= 1 << 20
		}
		got, omitted := plugin.Truncate(s, max)
		if len(s) <= max || max <= 0 {
			if got != s || omitted != 0 {
				t.Fatalf("Truncate(%q, %d) changed a string that fits", s, max)
			}
			return
		}
		checkTruncated(t, s, got, max, omitted)
	})
}

// FuzzToolOutput feeds arbitrary text and structured content through the
// output half of the pipeline (output checks, redaction, truncation) as a
// tool holding a secret returns them. The host must not panic, must answer
// with success, OUTPUT_INVALID or LIMIT_EXCEEDED (output), must produce a
// result that encodes as JSON, and the secret's value must not survive in
// it, however the output spells it.
func FuzzToolOutput(f *testing.F) {
	const secret = "s3cr3t-XYZ"
	for _, seed := range []struct {
		text       string
		structured []byte
	}{
		{"plain", nil},
		{"key " + secret, []byte(`{"k":"` + secret + `"}`)},
		{`{"a":1}`, nil},
		{"", []byte(`{"s3cr3t\u002dXYZ":"s3cr3t\u002dXYZ"}`)},
		{"", []byte(`{"a":`)},
		{"", []byte(`[1,2,{"x":"s3cr3t-XYZ"}]`)},
		{strings.Repeat("line "+secret+"\n", 500), nil},
		{"\xff\xfe" + secret, []byte(`"\ud800"`)},
	} {
		f.Add(seed.text, seed.structured)
	}
	h, err := plugin.NewHost(plugin.Options{
		Grants:  plugin.Capabilities{Secrets: []string{"KEY"}},
		Secrets: plugin.SecretFunc(func(context.Context, string) (string, error) { return secret, nil }),
	})
	if err != nil {
		f.Fatal(err)
	}
	defer h.Close()
	type output struct {
		text       string
		structured []byte
	}
	outputs := make(chan output, 1)
	tool := fn(`{"type":"object"}`, func(context.Context, *plugin.Request) (*plugin.Result, error) {
		o := <-outputs
		res := &plugin.Result{StructuredContent: o.structured}
		if o.text != "" {
			res.Content = []plugin.Content{plugin.Text(o.text)}
		}
		return res, nil
	})
	limits := plugin.Limits{Preview: 256, Output: 64 << 10}
	caps := plugin.Capabilities{Secrets: []string{"KEY"}}
	if err := h.Register(plugin.Spec{Name: "free", Capabilities: caps, Limits: limits}, tool); err != nil {
		f.Fatal(err)
	}
	if err := h.Register(plugin.Spec{Name: "typed", Capabilities: caps, Limits: limits, OutputSchema: json.RawMessage(`{"type":"object"}`)}, tool); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string, structured []byte) {
		for _, name := range []string{"free", "typed"} {
			outputs <- output{text, structured}
			c := plugin.Call{Name: name}
			res, err := h.Invoke(context.Background(), c)
			checkResult(t, c, res, err)
			switch res.Code {
			case "", plugin.CodeOutputInvalid:
			case plugin.CodeLimitExceeded:
				if res.Limit != "output" {
					t.Fatalf("LIMIT_EXCEEDED %q", res.Limit)
				}
			default:
				t.Fatalf("%s: code %s: %v", name, res.Code, err)
			}
			b, merr := json.Marshal(res)
			if merr != nil {
				t.Fatalf("%s: the result cannot be encoded: %v", name, merr)
			}
			if strings.Contains(string(b), secret) || strings.Contains(res.TextContent(), secret) {
				t.Fatalf("%s: the secret survived: %s", name, b)
			}
		}
	})
}

// FuzzParseHostRule: a rule that parses prints back to itself and covers
// itself.
func FuzzParseHostRule(f *testing.F) {
	for _, s := range []string{"example.com", "*.example.com:443", "[::1]:8080", "::1", "127.0.0.1", "a:b:c", "*", "[x]:1", "Ex.COM."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := plugin.ParseHostRule(s)
		if err != nil {
			return
		}
		again, err := plugin.ParseHostRule(r.String())
		if err != nil || again != r {
			t.Fatalf("%q parsed to %+v, whose String %q parses to %+v, %v", s, r, r.String(), again, err)
		}
		if !r.Covers(r) {
			t.Fatalf("%+v does not cover itself", r)
		}
	})
}

// FuzzParseSize: sizes are never negative and FormatSize round-trips.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"0", "512B", "64KiB", "1.5MiB", "10MB", "-1", "1e3", "NaN", "9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := plugin.ParseSize(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
		if back, err := plugin.ParseSize(plugin.FormatSize(n)); err != nil || back != n {
			t.Fatalf("ParseSize(FormatSize(%d)) = %d, %v", n, back, err)
		}
	})
}
