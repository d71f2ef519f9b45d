//go:build wasip1

// Command conformance is the wasm plugin of fixture tools that
// TestOfficialConformance serves to the official MCP conformance suite: the
// content each of its tools-call scenarios asks for, returned by a guest and
// carried through toolhost's pipeline to MCP content, as a real plugin's
// would be; and the sampling and elicitation requests of its sampling and
// elicitation scenarios, asked by the guest (guest.Sample, guest.Elicit)
// and carried to the client by host serve.
package main

import (
	"encoding/base64"
	"encoding/json"
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
		argTool("test_sampling", "Asks the client's LLM (sampling) to answer a prompt.", "prompt", "The prompt to send to the LLM",
			func(prompt string) (string, error) {
				res, err := guest.Sample(guest.SampleRequest{Messages: []guest.SamplingMessage{guest.UserText(prompt)}, MaxTokens: 100})
				if err != nil {
					return "", err
				}
				return "LLM response: " + res.Content.Text, nil
			}),
		argTool("test_elicitation", "Asks the client's user (elicitation) for a username and an email address.", "message", "The message to show the user",
			func(message string) (string, error) {
				res, err := guest.Elicit(guest.ElicitRequest{Message: message, RequestedSchema: []byte(userForm)})
				if err != nil {
					return "", err
				}
				return fmt.Sprintf("User response: <action: %s, content: %s>", res.Action, content(res)), nil
			}),
		elicitTool("test_elicitation_sep1034_defaults", "Asks the user a form with a default for every primitive type (SEP-1034).",
			"Please review and update the form fields with defaults", defaultsForm),
		elicitTool("test_elicitation_sep1330_enums", "Asks the user a form with every enum schema form (SEP-1330).",
			"Please select options from the enum fields", enumsForm),
	)
}

// The forms of the elicitation scenarios: what each asks the client, as
// the suite describes it; toolhost passes them on as written.
const (
	userForm = `{"type":"object","properties":{` +
		`"username":{"type":"string","description":"User's response"},` +
		`"email":{"type":"string","description":"User's email address"}},` +
		`"required":["username","email"]}`
	defaultsForm = `{"type":"object","properties":{` +
		`"name":{"type":"string","description":"User name","default":"John Doe"},` +
		`"age":{"type":"integer","description":"User age","default":30},` +
		`"score":{"type":"number","description":"User score","default":95.5},` +
		`"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},` +
		`"verified":{"type":"boolean","description":"Verification status","default":true}}}`
	enumsForm = `{"type":"object","properties":{` +
		`"untitledSingle":{"type":"string","description":"Choose one option","enum":["option1","option2","option3"]},` +
		`"titledSingle":{"type":"string","description":"Choose a titled option","oneOf":[` +
		`{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},` +
		`"legacyEnum":{"type":"string","description":"Choose a legacy option","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},` +
		`"untitledMulti":{"type":"array","description":"Choose multiple options","items":{"type":"string","enum":["option1","option2","option3"]}},` +
		`"titledMulti":{"type":"array","description":"Choose multiple titled options","items":{"anyOf":[` +
		`{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}}}`
)

// argTool is a tool of one required string argument that answers in text
// (a failure, a *guest.ClientError, as a tool error the client sees).
func argTool(name, description, arg, argDescription string, fn func(string) (string, error)) guest.Tool {
	schema := fmt.Sprintf(`{"type":"object","properties":{%q:{"type":"string","description":%q}},"required":[%q]}`, arg, argDescription, arg)
	return guest.Tool{
		Name: name, Description: description, InputSchema: []byte(schema),
		Handler: func(c *guest.Call) (*guest.Result, error) {
			var in map[string]string
			if err := json.Unmarshal(c.Arguments, &in); err != nil {
				return nil, err
			}
			text, err := fn(in[arg])
			if err != nil {
				return guest.Errorf("%v", err), nil
			}
			return guest.Text(text), nil
		},
	}
}

// content is the accepted form, or {} when there is none.
func content(res *guest.ElicitResult) string {
	if len(res.Content) == 0 {
		return "{}"
	}
	return string(res.Content)
}

// elicitTool asks the user form with message and reports the answer.
func elicitTool(name, description, message, form string) guest.Tool {
	return guest.Tool{
		Name: name, Description: description, InputSchema: []byte(noArgs),
		Handler: func(*guest.Call) (*guest.Result, error) {
			res, err := guest.Elicit(guest.ElicitRequest{Message: message, RequestedSchema: []byte(form)})
			if err != nil {
				return guest.Errorf("%v", err), nil
			}
			return guest.Text(fmt.Sprintf("Elicitation completed: action=%s, content=%s", res.Action, content(res))), nil
		},
	}
}

func main() {}
