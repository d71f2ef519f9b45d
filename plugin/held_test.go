package plugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/toolhost/toolhost/plugin"
)

// holder is a tool holding a credential of its own (as an MCP server's
// OAuth token), which it replaces while a call runs (a refresh), keeping
// the one replaced among those it holds, as SecretHolder asks.
type holder struct {
	plugin.Tool
	mu          sync.Mutex
	token, past string
}

func (h *holder) HeldSecrets() map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	held := map[string]string{"oauth_access_token": h.token}
	if h.past != "" {
		held["oauth_access_token_2"] = h.past
	}
	return held
}

func (h *holder) rotate(to string) {
	h.mu.Lock()
	h.token, h.past = to, h.token
	h.mu.Unlock()
}

var _ plugin.SecretHolder = (*holder)(nil)

// TestHeldSecretsRedacted: what a tool holds (plugin.SecretHolder) is
// redacted as a granted secret is, from its reports, its result and its
// error, and so is the credential that replaced it during the call, from
// the next report on; a granted secret keeps its own name when both hold
// the same value.
func TestHeldSecretsRedacted(t *testing.T) {
	const granted = "granted-secret-value"
	for _, tc := range []struct {
		name         string
		rotate, fail bool
	}{{"result", true, false}, {"error", true, true}, {"unchanged", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, plugin.Options{
				Grants:  plugin.Capabilities{Secrets: []string{"KEY"}},
				Secrets: plugin.SecretFunc(func(context.Context, string) (string, error) { return granted, nil }),
			})
			tool := &holder{token: "at-old-123456"}
			tool.Tool = fn(`{"type":"object"}`, func(_ context.Context, req *plugin.Request) (*plugin.Result, error) {
				req.Notify.Log("info", "sending at-old-123456")
				text := "old at-old-123456, granted " + granted
				if tc.rotate {
					tool.rotate("at-new-654321")
					text += ", new at-new-654321"
					// Reported after the refresh, in the same call.
					req.Notify.Log("info", "now sending at-new-654321")
				}
				if tc.fail {
					return nil, errors.New(text)
				}
				return textResult(text), nil
			})
			mustRegister(t, h, plugin.Spec{Name: "held", Tier: plugin.TierReadOnly, Capabilities: plugin.Capabilities{Secrets: []string{"KEY"}}}, tool)
			rec := &recorder{}
			c := call("held", `{}`)
			c.Notify = rec
			res, err := h.Invoke(context.Background(), c)
			b, _ := json.Marshal(res)
			seen := string(b)
			if err != nil {
				seen += err.Error()
			}
			rec.mu.Lock()
			seen += strings.Join(rec.messages, "\n")
			rec.mu.Unlock()
			for _, leak := range []string{"at-old-123456", "at-new-654321", granted} {
				if strings.Contains(seen, leak) {
					t.Errorf("%q reached the caller: %s", leak, seen)
				}
			}
			for _, mark := range []string{"[REDACTED:oauth_access_token]", "[REDACTED:KEY]"} {
				if !strings.Contains(seen, mark) {
					t.Errorf("no %s in what the caller saw: %s", mark, seen)
				}
			}
		})
	}
}
