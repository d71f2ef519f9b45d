package plugintest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/plugin"
)

// InProcessHarness returns a Harness whose fixtures are in-process tools
// (plugin.Func) loaded through the in-process adapter, plugin.InProcess
// (kind "go"), from specs of Source kind "go" naming the fixture: the path
// a configuration's go {} block takes. It is the reference implementation
// of the fixtures: the in-process adapter runs the suite over it, and
// other adapters can compare their fixtures' behaviour with these.
func InProcessHarness() Harness {
	a := InProcessAdapter()
	return Harness{
		Load: func(t testing.TB, fixture string) plugin.Tool {
			t.Helper()
			sp := spec(fixture)
			sp.Source = plugin.Source{Kind: a.Kind(), Tool: fixture}
			tool, err := a.Load(context.Background(), &sp)
			if err != nil {
				t.Fatalf("plugintest: the in-process adapter cannot load fixture %q: %v", fixture, err)
			}
			return tool
		},
	}
}

// InProcessAdapter returns an in-process adapter (kind "go") with every
// fixture added under its own name.
func InProcessAdapter() *plugin.InProcess {
	a := plugin.NewInProcess()
	for _, name := range Fixtures() {
		tool, ok := InProcessFixture(name)
		if !ok {
			panic("plugintest: no in-process fixture " + name)
		}
		if err := a.Add(name, tool); err != nil {
			panic(err)
		}
	}
	return a
}

// InProcessFixture returns the named fixture as a plugin.Func tool.
func InProcessFixture(name string) (plugin.Tool, bool) {
	switch name {
	case "echo":
		return plugin.Func(desc(name, "Returns its text.",
			`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`, ""),
			func(_ context.Context, req *plugin.Request) (*plugin.Result, error) {
				var in struct{ Text string }
				if err := req.DecodeArguments(&in); err != nil {
					return nil, err
				}
				return &plugin.Result{Content: []plugin.Content{plugin.Text(in.Text)}}, nil
			}), true
	case "structured":
		return plugin.Func(desc(name, "Adds a and b.",
			`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`, outputSchema),
			func(_ context.Context, req *plugin.Request) (*plugin.Result, error) {
				var in struct{ A, B int64 }
				if err := req.DecodeArguments(&in); err != nil {
					return nil, err
				}
				out, err := json.Marshal(map[string]int64{"sum": in.A + in.B})
				if err != nil {
					return nil, err
				}
				return &plugin.Result{Content: []plugin.Content{plugin.Text(string(out))}, StructuredContent: out}, nil
			}), true
	case "fail":
		return plugin.Func(desc(name, "Always fails.", `{"type":"object"}`, ""),
			func(context.Context, *plugin.Request) (*plugin.Result, error) {
				return &plugin.Result{Content: []plugin.Content{plugin.Text("boom: the fail fixture always fails")}, IsError: true}, nil
			}), true
	case "sleep":
		return plugin.Func(desc(name, "Sleeps ms milliseconds.",
			`{"type":"object","properties":{"ms":{"type":"integer","minimum":0}},"required":["ms"]}`, ""),
			func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
				var in struct{ MS int64 }
				if err := req.DecodeArguments(&in); err != nil {
					return nil, err
				}
				timer := time.NewTimer(time.Duration(in.MS) * time.Millisecond)
				defer timer.Stop()
				select {
				case <-timer.C:
					return &plugin.Result{Content: []plugin.Content{plugin.Textf("slept %dms", in.MS)}}, nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}), true
	case "big":
		return plugin.Func(desc(name, "Returns a text of the given size.",
			`{"type":"object","properties":{"bytes":{"type":"integer","minimum":0}},"required":["bytes"]}`, ""),
			func(_ context.Context, req *plugin.Request) (*plugin.Result, error) {
				var in struct{ Bytes int }
				if err := req.DecodeArguments(&in); err != nil {
					return nil, err
				}
				s := strings.Repeat("0123456789", in.Bytes/10+1)[:in.Bytes]
				return &plugin.Result{Content: []plugin.Content{plugin.Text(s)}}, nil
			}), true
	case "ask":
		return plugin.Func(desc(name, "Asks for confirmation.", `{"type":"object"}`, ""),
			func(_ context.Context, req *plugin.Request) (*plugin.Result, error) {
				q := &plugin.Question{ID: "confirm", Type: plugin.AnswerBoolean, Text: "Go ahead?"}
				a, ok, err := req.Answer(q)
				if err != nil {
					return nil, err
				}
				if !ok {
					return &plugin.Result{NeedsInput: q}, nil
				}
				if a.Bool {
					return &plugin.Result{Content: []plugin.Content{plugin.Text("confirmed")}}, nil
				}
				return &plugin.Result{Content: []plugin.Content{plugin.Text("cancelled")}}, nil
			}), true
	case "crash":
		return plugin.Func(desc(name, "Crashes.", `{"type":"object"}`, ""),
			func(context.Context, *plugin.Request) (*plugin.Result, error) {
				panic("crash fixture: crashing on purpose")
			}), true
	}
	return nil, false
}

func desc(name, description, input, output string) plugin.Descriptor {
	d := plugin.Descriptor{Name: name, Description: description, InputSchema: json.RawMessage(input)}
	if output != "" {
		d.OutputSchema = json.RawMessage(output)
	}
	return d
}
