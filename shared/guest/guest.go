// Package guest is what a Go wasm tool imports: a tool is a typed function
// plus a JSON schema, and the package provides the list_tools and call_tool
// exports of toolhost's guest contract (docs/wasm.md), reading input and
// writing output at memory speed over WASI stdio when the host offers it.
//
// A plugin registers its tools in init and has an empty main:
//
//	func init() {
//		guest.Register(guest.Func("add", "Adds two numbers.", addSchema,
//			func(in struct{ A, B int }) (int, error) { return in.A + in.B, nil }))
//	}
//
//	func main() {}
//
// Build it with the standard toolchain:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o tool.wasm .
//
// The registry is package state because a wasm module is one plugin: Register
// is meant to be called from init, before the host calls any export.
package guest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
)

// Tool is one tool of a plugin.
type Tool struct {
	Name        string
	Title       string
	Description string
	// InputSchema is the JSON Schema of the arguments object.
	InputSchema json.RawMessage
	// OutputSchema, if set, describes StructuredContent.
	OutputSchema json.RawMessage
	// ReadOnly is the readOnlyHint annotation.
	ReadOnly bool
	// Handler runs one call.
	Handler func(c *Call) (*Result, error)
	// Args, if set, is a value of the type Handler decodes the arguments
	// into (readIn{}, say). Register then builds encoding/json's decoder for
	// that type while the plugin initialises — which toolhost does once, at
	// load, and snapshots — instead of in every fresh instance's first call,
	// where it costs tens of microseconds. Func sets it itself.
	Args any

	warm func() // prepares the handler's first call; may be nil
}

// Call is one call as a tool sees it.
type Call struct {
	// Name is the tool name.
	Name string `json:"name"`
	// Arguments is the JSON object the caller sent.
	Arguments json.RawMessage `json:"arguments"`
	// Answers holds the caller's answers to a question the tool asked in an
	// earlier round (Result.NeedsInput), keyed by question ID.
	Answers map[string]json.RawMessage `json:"answers,omitempty"`
}

// Bind decodes the call's arguments into v strictly: a field v does not
// declare is an error, one a model can act on (a misspelt argument would
// otherwise be ignored in silence). A call without arguments leaves v as
// it is.
func (c *Call) Bind(v any) error {
	if len(c.Arguments) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(c.Arguments))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// Question is what a tool asks when it needs the caller's input before it
// can go on; the caller calls again with Call.Answers.
type Question struct {
	ID   string `json:"id"`
	Text string `json:"text"`
	// Type is "boolean", "text" or "select".
	Type    string   `json:"type"`
	Options []string `json:"options,omitempty"`
}

// Content is one item of a result, shaped like MCP content.
type Content struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	Data     []byte `json:"data,omitempty"` // base64 in JSON
	MIMEType string `json:"mimeType,omitempty"`
	URI      string `json:"uri,omitempty"`
	Name     string `json:"name,omitempty"`
	// Resource is the embedded resource of a "resource" item.
	Resource *Resource `json:"resource,omitempty"`
}

// Resource is an embedded text resource, as in MCP.
type Resource struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
	Text     string `json:"text"`
}

// ArtifactURIPrefix marks an embedded resource the host keeps as an
// artifact of the call instead of passing it to the model (docs/wasm.md).
const ArtifactURIPrefix = "toolhost-artifact:"

// Artifact returns a content item that the host stores as an artifact
// named name (a diff, a report) and lists in the result's artifacts; the
// model sees only the reference.
func Artifact(name, mimeType, text string) Content {
	return Content{Type: "resource", Resource: &Resource{URI: ArtifactURIPrefix + name, MIMEType: mimeType, Text: text}}
}

// Result is what a tool returns: an MCP CallToolResult.
type Result struct {
	Content           []Content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	// NeedsInput asks the caller a question (a toolhost extension of the
	// MCP result).
	NeedsInput *Question `json:"needsInput,omitempty"`
	// Code is the stable error code of a failed call (a toolhost extension
	// of the MCP result), e.g. "FILE_NOT_FOUND"; see ErrorCode. Empty means
	// TOOL_EXECUTION_FAILED when IsError is set.
	Code string `json:"code,omitempty"`
}

// ErrorCode returns a failed result carrying one of toolhost's stable error
// codes, so that the caller (and a model) can tell "no such file" from a
// crash. The host accepts the codes a tool can know about — INVALID_REQUEST,
// FILE_NOT_FOUND, FILE_TOO_LARGE, PERMISSION_DENIED, CAPABILITY_DENIED,
// LIMIT_EXCEEDED, TOOL_EXECUTION_FAILED — and treats any other as
// TOOL_EXECUTION_FAILED.
func ErrorCode(code, format string, args ...any) *Result {
	r := Errorf(format, args...)
	r.Code = code
	return r
}

// Text returns a result holding one text item.
func Text(s string) *Result { return &Result{Content: []Content{{Type: "text", Text: s}}} }

// Errorf returns a result with IsError set: the call worked, the tool
// reports a failure the model should see.
func Errorf(format string, args ...any) *Result {
	r := Text(fmt.Sprintf(format, args...))
	r.IsError = true
	return r
}

// Func makes a typed tool. The arguments are decoded into In; Out is
// returned both as structuredContent (when it encodes to a JSON object) and
// as JSON text. schema is the JSON Schema of In.
func Func[In, Out any](name, description, schema string, fn func(In) (Out, error)) Tool {
	if !json.Valid([]byte(schema)) {
		panic(fmt.Sprintf("guest.Func(%q): schema is not valid JSON", name))
	}
	return Tool{
		Name:        name,
		Description: description,
		InputSchema: json.RawMessage(schema),
		warm: func() {
			// Build encoding/json's codecs for In and Out now, during the
			// guest's initialisation (off the host's request path), rather
			// than in the first call.
			var in In
			_ = json.Unmarshal([]byte(`{}`), &in)
			var out Out
			_, _ = json.Marshal(out)
		},
		Handler: func(c *Call) (*Result, error) {
			var in In
			if len(c.Arguments) > 0 {
				if err := json.Unmarshal(c.Arguments, &in); err != nil {
					return Errorf("invalid arguments: %v", err), nil
				}
			}
			out, err := fn(in)
			if err != nil {
				return nil, err
			}
			b, err := json.Marshal(out)
			if err != nil {
				return nil, err
			}
			r := Text(string(b))
			if len(b) > 0 && b[0] == '{' {
				r.StructuredContent = b
			}
			return r, nil
		},
	}
}

var registry = map[string]Tool{}

// Register adds tools to the plugin. It panics on a duplicate or nameless
// tool: that is a bug in the plugin.
func Register(tools ...Tool) {
	for _, t := range tools {
		if t.Name == "" || t.Handler == nil {
			panic("guest.Register: a tool needs a Name and a Handler")
		}
		if _, dup := registry[t.Name]; dup {
			panic(fmt.Sprintf("guest.Register: tool %q registered twice", t.Name))
		}
		if len(t.InputSchema) == 0 {
			t.InputSchema = json.RawMessage(`{"type":"object"}`)
		}
		registry[t.Name] = t
		if t.warm != nil {
			t.warm()
		}
		if t.Args != nil {
			v := reflect.New(reflect.TypeOf(t.Args))
			_ = json.Unmarshal([]byte(`{}`), v.Interface())
		}
	}
	warmUp()
}

var warmed bool

// warmUp runs the call path once on a dummy request, so that the costs of
// a first call (encoding/json's codecs for the request and result types,
// first allocations) are paid while the host initialises the instance.
// Package state it leaves behind is the same in every instance and holds
// no caller data.
func warmUp() {
	if warmed {
		return
	}
	warmed = true
	var req struct {
		Params Call `json:"params"`
	}
	_ = json.Unmarshal([]byte(`{"params":{"name":"","arguments":{},"answers":{"x":true}}}`), &req)
	_, _ = json.Marshal(&Result{Content: []Content{{Type: "text", Text: "x"}}, StructuredContent: json.RawMessage(`{}`), NeedsInput: &Question{}})
	_ = ListTools()
	_, _ = EncodeFast(&Result{Content: []Content{{Type: "text", Text: string(make([]byte, rawTextMin))}}})
	warmAllocator()
}

// smallSizes are Go's allocation size classes up to 4 KiB
// (runtime/sizeclasses.go); a Go version with other classes only warms
// other spans.
var smallSizes = [...]int{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256,
	288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792,
	2048, 2304, 2688, 3072, 3200, 3456, 4096}

// Where warmAllocator's objects go, so that they are heap objects.
var (
	sinkBytes []byte
	sinkPtrs  []*byte
)

// warmAllocator takes one object of each small size class from Go's
// allocator, without and with pointers. toolhost runs every call in a
// fresh instance restored from a snapshot taken after initialisation; in
// that heap, the first allocation of a size class finds no span cached
// for it and takes the allocator's slow path (central lists, span set-up).
// After this each class has a cached span with free room, and a call's
// first allocations are the fast path: a tenth fewer instructions for a
// directory listing of filesystem.list. The objects are garbage at once;
// the spans add some 20 KiB to the snapshot.
func warmAllocator() {
	for _, n := range smallSizes {
		sinkBytes = make([]byte, n)
		sinkPtrs = make([]*byte, max(1, n/8))
	}
	sinkBytes, sinkPtrs = nil, nil
}

type descriptor struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *annotations    `json:"annotations,omitempty"`
}

type annotations struct {
	ReadOnlyHint bool `json:"readOnlyHint,omitempty"`
}

// ListTools returns the list_tools output for the registered tools.
func ListTools() []byte {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	out := struct {
		Tools []descriptor `json:"tools"`
	}{Tools: []descriptor{}}
	for _, n := range names {
		t := registry[n]
		d := descriptor{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema}
		if t.ReadOnly {
			d.Annotations = &annotations{ReadOnlyHint: true}
		}
		out.Tools = append(out.Tools, d)
	}
	b, _ := json.Marshal(out)
	return b
}

// ErrUnknownTool is returned by CallTool for a name no tool was registered
// under.
var ErrUnknownTool = errors.New("unknown tool")

// CallTool runs the call_tool input against the registered tools and
// returns the call_tool output. An error means the call could not run at
// all; a tool's own failure is a Result with IsError.
func CallTool(input []byte) ([]byte, error) {
	res, err := callTool(input)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

func callTool(input []byte) (*Result, error) {
	var req struct {
		Params Call `json:"params"`
	}
	if c, ok := decodeCall(input); ok {
		req.Params = c
	} else if err := json.Unmarshal(input, &req); err != nil {
		return nil, fmt.Errorf("call_tool input: %w", err)
	}
	t, ok := registry[req.Params.Name]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownTool, req.Params.Name)
	}
	res, err := t.Handler(&req.Params)
	if err != nil {
		return nil, err
	}
	if res == nil {
		res = &Result{}
	}
	if res.Content == nil {
		res.Content = []Content{}
	}
	return res, nil
}

// rawTextMin is the size from which a text item travels outside the JSON
// on the fast path: escaping a large string in the guest costs far more
// than moving its bytes.
const rawTextMin = 4 << 10

// wireContent is a content item on the fast path: a large text is replaced
// by a reference into the raw bytes after the JSON line.
type wireContent struct {
	Content
	TextRef *[2]int `json:"textRef,omitempty"`
}

type wireResult struct {
	Content           []wireContent   `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	NeedsInput        *Question       `json:"needsInput,omitempty"`
	Code              string          `json:"code,omitempty"`
}

// EncodeFast encodes a result for the fast I/O path (docs/wasm.md): one
// line of JSON, then a newline, then the raw bytes of every large text item,
// which the JSON references as "textRef": [offset, length]. A result with no
// large text is plain JSON.
func EncodeFast(res *Result) ([]byte, error) {
	big := 0
	for _, c := range res.Content {
		if c.Type == "text" && len(c.Text) >= rawTextMin {
			big += len(c.Text)
		}
	}
	var refs []*[2]int
	var tail []byte
	if big > 0 {
		refs = make([]*[2]int, len(res.Content))
		tail = make([]byte, 0, big)
		for i, c := range res.Content {
			if c.Type == "text" && len(c.Text) >= rawTextMin {
				refs[i] = &[2]int{len(tail), len(c.Text)}
				tail = append(tail, c.Text...)
			}
		}
	}
	if head, ok := appendResult(make([]byte, 0, 512), res, refs); ok {
		if big == 0 {
			return head, nil
		}
		return append(append(append(make([]byte, 0, len(head)+1+len(tail)), head...), '\n'), tail...), nil
	}
	if big == 0 {
		return json.Marshal(res)
	}
	w := wireResult{StructuredContent: res.StructuredContent, IsError: res.IsError, NeedsInput: res.NeedsInput, Code: res.Code}
	for i, c := range res.Content {
		wc := wireContent{Content: c, TextRef: refs[i]}
		if wc.TextRef != nil {
			wc.Text = ""
		}
		w.Content = append(w.Content, wc)
	}
	head, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(head)+1+len(tail))
	out = append(append(append(out, head...), '\n'), tail...)
	return out, nil
}
