package guest

import (
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"
)

type addIn struct{ A, B int }

func init() {
	Register(
		Func("add", "Adds.", `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}}}`,
			func(in addIn) (map[string]int, error) { return map[string]int{"sum": in.A + in.B}, nil }),
		Func("upper", "Upper-cases.", `{"type":"object"}`,
			func(in struct{ S string }) (string, error) { return strings.ToUpper(in.S), nil }),
		Func("broken", "Fails.", `{"type":"object"}`,
			func(struct{}) (int, error) { return 0, errors.New("went wrong") }),
		Tool{Name: "confirm", Handler: func(c *Call) (*Result, error) {
			if _, ok := c.Answers["ok"]; !ok {
				r := Text("sure?")
				r.NeedsInput = &Question{ID: "ok", Type: "boolean", Text: "Sure?"}
				return r, nil
			}
			return ErrorCode("FILE_NOT_FOUND", "no such file: %s", "x"), nil
		}},
	)
}

func TestListTools(t *testing.T) {
	var out struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(ListTools(), &out); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range out.Tools {
		names = append(names, d.Name)
		if len(d.InputSchema) == 0 {
			t.Errorf("%s has no inputSchema", d.Name)
		}
	}
	if got := strings.Join(names, ","); got != "add,broken,confirm,upper" {
		t.Fatalf("tools = %s", got)
	}
}

func TestCallTool(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{`{"params":{"name":"add","arguments":{"a":2,"b":40}}}`, `{"content":[{"type":"text","text":"{\"sum\":42}"}],"structuredContent":{"sum":42}}`},
		{`{"params":{"name":"upper","arguments":{"S":"abc"}}}`, `{"content":[{"type":"text","text":"\"ABC\""}]}`},
		{`{"params":{"name":"add","arguments":{"a":"two"}}}`, `"isError":true`},
		{`{"params":{"name":"confirm","arguments":{}}}`, `"needsInput":{"id":"ok","text":"Sure?","type":"boolean"}`},
		{`{"params":{"name":"confirm","arguments":{},"answers":{"ok":true}}}`, `"code":"FILE_NOT_FOUND"`},
	} {
		out, err := CallTool([]byte(tc.in))
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("%s: got %s, want %s", tc.in, out, tc.want)
		}
	}
	if _, err := CallTool([]byte(`{"params":{"name":"nope"}}`)); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("unknown tool: %v", err)
	}
	if _, err := CallTool([]byte(`{"params":{"name":"broken","arguments":{}}}`)); err == nil || err.Error() != "went wrong" {
		t.Errorf("handler error: %v", err)
	}
	if _, err := CallTool([]byte(`not json`)); err == nil {
		t.Error("malformed input accepted")
	}
}

func TestRegisterRefuses(t *testing.T) {
	for name, tool := range map[string]Tool{
		"duplicate":  {Name: "add", Handler: func(*Call) (*Result, error) { return nil, nil }},
		"nameless":   {Handler: func(*Call) (*Result, error) { return nil, nil }},
		"no handler": {Name: "x"},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("Register did not panic")
				}
			}()
			Register(tool)
		})
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Func with a bad schema did not panic")
		}
	}()
	Func("bad", "", `{not json`, func(struct{}) (int, error) { return 0, nil })
}

func TestBind(t *testing.T) {
	type in struct {
		Path  string `json:"path"`
		Limit int    `json:"limit"`
	}
	v := in{Limit: 7}
	if err := (&Call{}).Bind(&v); err != nil || v.Limit != 7 {
		t.Fatalf("no arguments: %v, %+v", err, v)
	}
	if err := (&Call{Arguments: json.RawMessage(`{"path":"a","limit":2}`)}).Bind(&v); err != nil || v != (in{"a", 2}) {
		t.Fatalf("arguments: %v, %+v", err, v)
	}
	err := (&Call{Arguments: json.RawMessage(`{"path":"a","lmit":2}`)}).Bind(&v)
	if err == nil || !strings.Contains(err.Error(), `unknown field "lmit"`) {
		t.Fatalf("a misspelt field: %v", err)
	}
	if err := (&Call{Arguments: json.RawMessage(`{"limit":"ten"}`)}).Bind(&v); err == nil {
		t.Fatal("a string for an int decoded")
	}
}

var argsTestRan bool

// Args prepares encoding/json's decoder for the handler's argument type
// at Register, so the first call's Bind builds none: it allocates less
// than the first Bind into a type of the same shape that no tool named.
func TestArgsPreparesTheDecoder(t *testing.T) {
	if argsTestRan {
		t.Skip("encoding/json keeps its decoders for the process: measured on the first run only")
	}
	argsTestRan = true
	type warmIn struct {
		Path   string   `json:"path"`
		Depth  int      `json:"depth"`
		Glob   string   `json:"glob"`
		Tags   []string `json:"tags"`
		Strict *bool    `json:"strict"`
	}
	type coldIn warmIn // same shape, a type of its own to encoding/json
	Register(Tool{Name: "args-warm", Handler: func(*Call) (*Result, error) { return Text(""), nil }, Args: warmIn{}})
	c := &Call{Arguments: json.RawMessage(`{"path":"a","depth":2,"glob":"*","tags":["x"],"strict":true}`)}
	mallocs := func(v any) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := c.Bind(v); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.Mallocs - before.Mallocs
	}
	warm, cold := mallocs(&warmIn{}), mallocs(&coldIn{})
	if warm >= cold {
		t.Errorf("first Bind: %d allocations with Args registered, %d without; want fewer", warm, cold)
	}
}
