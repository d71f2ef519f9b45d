// Package callproto is the wire format of tool plugins, the hyper-mcp v1
// contract (docs/wasm.md): the JSON a guest's call_tool export receives, and
// what its call_tool and list_tools exports return, including the fast I/O
// path's raw text after the JSON line. It decodes a guest's answer into a
// plugin.Result and says precisely what is wrong with one it cannot.
package callproto

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/toolhost/toolhost/plugin"
)

// Input is what call_tool receives.
type Input struct {
	Params Params `json:"params"`
}

// Params are a call's: the tool's name (as the plugin knows it), the
// arguments, and answers to the questions the tool asked before
// (plugin.Question).
type Params struct {
	Name      string                     `json:"name"`
	Arguments json.RawMessage            `json:"arguments"`
	Answers   map[string]json.RawMessage `json:"answers,omitempty"`
}

// ListOutput is what list_tools returns.
type ListOutput struct {
	Tools []plugin.Descriptor `json:"tools"`
}

// wireContent is one content item as a guest writes it: image and audio
// data are base64 strings, as in MCP.
type wireContent struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	// TextRef, on the fast I/O path, points at the text in the raw bytes
	// after the JSON line: [offset, length].
	TextRef  *[2]int64       `json:"textRef,omitempty"`
	Data     string          `json:"data,omitempty"`
	MIMEType string          `json:"mimeType,omitempty"`
	URI      string          `json:"uri,omitempty"`
	Name     string          `json:"name,omitempty"`
	Resource json.RawMessage `json:"resource,omitempty"`
}

// callToolOutput is what call_tool returns: an MCP CallToolResult.
type callToolOutput struct {
	Content           *[]wireContent   `json:"content"`
	StructuredContent json.RawMessage  `json:"structuredContent,omitempty"`
	IsError           bool             `json:"isError,omitempty"`
	NeedsInput        *plugin.Question `json:"needsInput,omitempty"`
	Code              plugin.Code      `json:"code,omitempty"`
}

// guestCodes are the error codes a guest may report for its own failures;
// the others describe what only the host can know (timeouts, approvals).
var guestCodes = map[plugin.Code]bool{
	plugin.CodeInvalidRequest: true, plugin.CodeFileNotFound: true, plugin.CodeFileTooLarge: true,
	plugin.CodePermissionDenied: true, plugin.CodeCapabilityDenied: true, plugin.CodeLimitExceeded: true,
	plugin.CodeToolExecutionFailed: true,
	// A guest may time out its own work (an HTTP request with a timeout).
	plugin.CodeToolExecutionTimeout: true,
}

// Split splits fast-path output (docs/wasm.md) into its JSON line and the
// raw bytes after it. Output without a newline after a complete JSON value
// is all JSON.
func Split(out []byte) (head, tail []byte) {
	i := bytes.IndexByte(out, '\n')
	if i < 0 || !json.Valid(out[:i]) {
		return out, nil
	}
	return out[:i], out[i+1:]
}

// rawTextHead is the start of the fast path's most common output, one text
// item sent raw from its first byte (the built-in Rust module's every
// answer): {"content":[{"type":"text","textRef":[0,N]}]}.
const rawTextHead = `{"content":[{"type":"text","textRef":[0,`

// decodeRawText decodes out if it is exactly rawTextHead, N, and "]}]}",
// and the raw bytes are N; otherwise it returns nil and the output is
// decoded in general (to the same result, with encoding/json's reflection).
func decodeRawText(out, tail []byte) *plugin.Result {
	n, ok := bytes.CutPrefix(out, []byte(rawTextHead))
	if !ok {
		return nil
	}
	n, ok = bytes.CutSuffix(n, []byte("]}]}"))
	if !ok || len(n) == 0 || len(n) > 10 || (n[0] == '0' && len(n) > 1) {
		return nil
	}
	size := 0
	for _, c := range n {
		if c < '0' || c > '9' {
			return nil
		}
		size = size*10 + int(c-'0')
	}
	if size != len(tail) {
		return nil
	}
	return &plugin.Result{Content: []plugin.Content{{Type: "text", Text: rawText(tail)}}}
}

// rawText is raw bytes a textRef refers to as text: invalid UTF-8 becomes
// U+FFFD.
func rawText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// Decode turns call_tool's output into a Result, or explains what is wrong
// with it. tail holds the raw bytes that textRef items point into (Split).
func Decode(out, tail []byte) (*plugin.Result, error) {
	if res := decodeRawText(out, tail); res != nil {
		return res, nil
	}
	return decodeCallToolJSON(out, tail)
}

// Head is the start of call_tool's input for the tool the plugin knows as
// name; Encode appends to it.
func Head(name string) []byte {
	quoted, _ := json.Marshal(name)
	return append(append([]byte(`{"params":{"name":`), quoted...), `,"arguments":`...)
}

// Encode encodes call_tool's input: head is Head(name). The arguments are
// the pipeline's (plugin.Request: a validated, compacted JSON object) and
// go in as they are; encoding/json would check and compact them again.
func Encode(head []byte, name string, args json.RawMessage, answers map[string]json.RawMessage) ([]byte, error) {
	if len(answers) > 0 {
		return json.Marshal(Input{Params: Params{Name: name, Arguments: args, Answers: answers}})
	}
	b := make([]byte, 0, len(head)+len(args)+2)
	b = append(append(append(b, head...), args...), "}}"...)
	return b, nil
}

// decodeCallToolJSON is Decode for any output.
func decodeCallToolJSON(out, tail []byte) (*plugin.Result, error) {
	var w callToolOutput
	if err := json.Unmarshal(out, &w); err != nil {
		return nil, fmt.Errorf("call_tool output is not a JSON CallToolResult: %v", err)
	}
	if w.Content == nil {
		return nil, fmt.Errorf(`call_tool output has no "content" array`)
	}
	res := &plugin.Result{IsError: w.IsError, NeedsInput: w.NeedsInput}
	if w.IsError && guestCodes[w.Code] {
		res.Code = w.Code
	}
	if len(w.StructuredContent) > 0 && string(w.StructuredContent) != "null" {
		if w.StructuredContent[0] != '{' {
			return nil, fmt.Errorf(`call_tool output: "structuredContent" must be a JSON object`)
		}
		res.StructuredContent = w.StructuredContent
	}
	for i, c := range *w.Content {
		pc := plugin.Content{Type: c.Type, Text: c.Text, MIMEType: c.MIMEType, URI: c.URI, Name: c.Name}
		switch c.Type {
		case "text":
			if r := c.TextRef; r != nil {
				if r[0] < 0 || r[1] < 0 || r[0]+r[1] > int64(len(tail)) {
					return nil, fmt.Errorf("call_tool output: content[%d].textRef %v is outside the %d raw bytes", i, *r, len(tail))
				}
				pc.Text = rawText(tail[r[0] : r[0]+r[1]])
			}
		case "image", "audio":
			b, err := base64.StdEncoding.DecodeString(c.Data)
			if err != nil {
				return nil, fmt.Errorf("call_tool output: content[%d].data is not base64: %v", i, err)
			}
			pc.Data = b
		case "resource_link":
			if c.URI == "" {
				return nil, fmt.Errorf("call_tool output: content[%d] is a resource_link without uri", i)
			}
		case "resource":
			var r struct {
				URI      string `json:"uri"`
				MIMEType string `json:"mimeType"`
				Text     string `json:"text"`
			}
			if len(c.Resource) > 0 {
				if err := json.Unmarshal(c.Resource, &r); err != nil {
					return nil, fmt.Errorf("call_tool output: content[%d].resource: %v", i, err)
				}
			}
			pc.URI, pc.MIMEType, pc.Text = r.URI, r.MIMEType, r.Text
		default:
			return nil, fmt.Errorf("call_tool output: content[%d] has unknown type %q", i, c.Type)
		}
		res.Content = append(res.Content, pc)
	}
	return res, nil
}
