package subprocess

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/shared"
)

// A call whose caller listens for reports, or whose tool is granted a
// client right, runs over the plugin's CallToolSession stream: what the
// plugin reports goes through the call's plugin.Notifier and what it asks
// through its plugin.Client, which check, bound, redact and audit exactly
// as they do for a wasm tool's host functions.

// maxAsk bounds the JSON of one request a plugin sends to the client: the
// pipeline's cap on a request, with room for the JSON around it.
const maxAsk = plugin.MaxClientMessage + 64<<10

// useSession reports whether a call needs the session stream: something
// the plugin reports could reach someone, or it may ask the client.
func useSession(req *plugin.Request) bool {
	if req.Spec != nil && (req.Spec.Capabilities.Sampling || req.Spec.Capabilities.Elicitation) && req.Client != nil {
		return true
	}
	return plugin.Listening(req.Notify)
}

// session is the shared.SessionHandler of one call.
type session struct {
	req *plugin.Request
}

var _ shared.SessionHandler = (*session)(nil)

// Notify implements shared.SessionHandler. A notification that is not
// one of the two defined shapes is dropped, as a wasm guest's malformed
// report is.
func (s *session) Notify(b []byte) {
	var n struct {
		Progress *struct {
			Progress float64 `json:"progress"`
			Total    float64 `json:"total"`
			Message  string  `json:"message"`
		} `json:"progress"`
		Log *struct {
			Level   string `json:"level"`
			Message string `json:"message"`
		} `json:"log"`
	}
	if s.req.Notify == nil || json.Unmarshal(b, &n) != nil {
		return
	}
	if p := n.Progress; p != nil {
		s.req.Notify.Progress(p.Progress, p.Total, p.Message)
	}
	if l := n.Log; l != nil {
		s.req.Notify.Log(l.Level, l.Message)
	}
}

// Ask implements shared.SessionHandler.
func (s *session) Ask(ctx context.Context, kind string, b []byte) ([]byte, error) {
	refuse := func(format string, args ...any) ([]byte, error) {
		a, _ := plugin.ClientAnswer(nil, plugin.Errorf(plugin.CodeInvalidRequest, format, args...))
		return a, nil
	}
	if s.req.Client == nil {
		a, _ := plugin.ClientAnswer(nil, plugin.Errorf(plugin.CodeCapabilityDenied, "this call has no client to ask"))
		return a, nil
	}
	if len(b) > maxAsk {
		return refuse("the request is %s; at most %s may go to the client", plugin.FormatSize(int64(len(b))), plugin.FormatSize(plugin.MaxClientMessage))
	}
	var res any
	var err error
	switch kind {
	case "sampling":
		var in plugin.SampleRequest
		if err := json.Unmarshal(b, &in); err != nil {
			return refuse("malformed sampling request: %v", err)
		}
		res, err = s.req.Client.Sample(ctx, &in)
	case "elicitation":
		var in plugin.ElicitRequest
		if err := json.Unmarshal(b, &in); err != nil {
			return refuse("malformed elicitation request: %v", err)
		}
		res, err = s.req.Client.Elicit(ctx, &in)
	default:
		return refuse("unknown kind of request %q (want %q or %q)", kind, "sampling", "elicitation")
	}
	a, stop := plugin.ClientAnswer(res, err)
	if stop != nil {
		return nil, stop
	}
	return a, nil
}

// String names the handler in logs.
func (s *session) String() string { return fmt.Sprintf("session of %s", s.req.Name) }
