//go:build wasip1

// Command conformance is the wasm plugin of fixture tools that
// TestOfficialConformance serves to the official MCP conformance suite: the
// content each of its tools-call scenarios asks for, returned by a guest and
// carried through toolhost's pipeline to MCP content, as a real plugin's
// would be.
package main

import (
	"encoding/base64"
	"fmt"
	"time"

	pdk "github.com/extism/go-pdk"

	"github.com/toolhost/toolhost/shared/guest"
)

// A 1×1 PNG and a 44-byte WAV header with two silent samples: content a
// client can decode.
var (
	png, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")
	wav, _ = base64.StdEncoding.DecodeString("UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQQAAAAAAAAA")
)

const noArgs = `{"type":"object","properties":{},"additionalProperties":false}`

func tool(name, description string, handler func() *guest.Result) guest.Tool {
	return guest.Tool{
		Name: name, Description: description, InputSchema: []byte(noArgs), ReadOnly: true,
		Handler: func(*guest.Call) (*guest.Result, error) { return handler(), nil },
	}
}

func init() {
	guest.Register(
		tool("test_simple_text", "Returns a text item.", func() *guest.Result {
			return guest.Text("This is a simple text response for testing.")
		}),
		tool("test_image_content", "Returns an image item (a 1x1 PNG).", func() *guest.Result {
			return &guest.Result{Content: []guest.Content{{Type: "image", Data: png, MIMEType: "image/png"}}}
		}),
		tool("test_audio_content", "Returns an audio item (a short WAV).", func() *guest.Result {
			return &guest.Result{Content: []guest.Content{{Type: "audio", Data: wav, MIMEType: "audio/wav"}}}
		}),
		tool("test_embedded_resource", "Returns an embedded text resource.", func() *guest.Result {
			return &guest.Result{Content: []guest.Content{{Type: "resource", Resource: &guest.Resource{
				URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content."}}}}
		}),
		tool("test_multiple_content_types", "Returns text, an image and an embedded resource.", func() *guest.Result {
			return &guest.Result{Content: []guest.Content{
				{Type: "text", Text: "Multiple content types test:"},
				{Type: "image", Data: png, MIMEType: "image/png"},
				{Type: "resource", Resource: &guest.Resource{URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`}},
			}}
		}),
		tool("test_tool_with_logging", "Logs three messages while it runs (the client sees them).", func() *guest.Result {
			for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
				if i > 0 {
					time.Sleep(50 * time.Millisecond)
				}
				guest.Log(pdk.LogInfo, msg)
			}
			return guest.Text("Logging test completed")
		}),
		tool("test_tool_with_progress", "Reports its progress three times while it runs.", func() *guest.Result {
			for i, p := range []float64{0, 50, 100} {
				if i > 0 {
					time.Sleep(50 * time.Millisecond)
				}
				guest.Progress(p, 100, fmt.Sprintf("step %d of 3", i+1))
			}
			return guest.Text("Progress test completed")
		}),
		tool("test_error_handling", "Always fails, as a tool reports a failure the model should see.", func() *guest.Result {
			return guest.Errorf("This tool intentionally returns an error for testing")
		}),
	)
}

func main() {}
