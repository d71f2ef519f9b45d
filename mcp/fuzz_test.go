package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/plugin/declared"
)

// The parsers of what MCP peers send: request states and arguments from
// clients, request bodies at the HTTP guard, and tool results from remote
// servers. None may panic, and each must keep its promise on any input.

func FuzzRequestState(f *testing.F) {
	s, err := newSealer()
	if err != nil {
		f.Fatal(err)
	}
	good, err := s.seal(&roundState{Tool: "t", Args: "a", Expires: time.Now().Add(time.Hour).Unix(),
		Approvals: []approvalRecord{{Tool: "t", Args: "a", OK: true}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add("")
	f.Add(".")
	f.Add("eyJ0IjoidCJ9.AAAA")
	f.Add(strings.Replace(good, "e", "f", 1))
	f.Fuzz(func(t *testing.T, state string) {
		st, err := s.open(state)
		if err != nil {
			return
		}
		// Only what this sealer produced opens: re-sealing gives a state
		// that opens to the same thing.
		again, err := s.seal(st)
		if err != nil {
			t.Fatal(err)
		}
		st2, err := s.open(again)
		if err != nil || st2.Tool != st.Tool || len(st2.Approvals) != len(st.Approvals) {
			t.Fatalf("re-sealed state differs: %v", err)
		}
		if state != good && !strings.HasPrefix(state, strings.SplitN(good, ".", 2)[0]) {
			t.Fatalf("a state this sealer never produced opened: %q", state)
		}
	})
}

func FuzzSplitAnswers(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"a":1}`, `{"_answers":{"q":true},"x":1}`, `{"_answers":5}`, `[1]`, `{"_answers":null}`, `{"_answers"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		args, answers, err := splitAnswers(json.RawMessage(raw))
		if err != nil {
			return
		}
		if answers != nil {
			var m map[string]json.RawMessage
			if json.Unmarshal(args, &m) != nil {
				t.Fatalf("arguments after removing answers are not an object: %s", args)
			}
			if _, still := m[AnswersArgument]; still {
				t.Fatalf("%s left in the arguments", AnswersArgument)
			}
		}
	})
}

func FuzzRequestIDs(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled"}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"x"},{"jsonrpc":"2.0","method":"y"}]`,
		`{"id":null,"method":"x"}`, `garbage`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ids, ok := requestIDs(body)
		got := !ok || len(ids) > 0
		// A body that is one response or notification (an object without
		// a method, or with a method but no id) is never held back by the
		// concurrency cap.
		var m map[string]json.RawMessage
		if json.Unmarshal(body, &m) == nil && m != nil && got {
			id, hasID := m["id"]
			if _, hasMethod := m["method"]; !hasMethod || !hasID || string(bytes.TrimSpace(id)) == "null" {
				t.Fatalf("a message that is not a request counted as one: %s", body)
			}
		}
	})
}

// FuzzResponseID checks the reading of an answer's id from a server-sent
// event against decoding the whole message.
func FuzzResponseID(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`,
		`{"jsonrpc":"2.0","result":{},"id":"a"}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"elicitation/create","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`,
		`{"jsonrpc":"2.0","id":null,"result":{}}`, `{"id":1.0,"result":1}`, `garbage`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		id, ok := responseID(data)
		var m map[string]json.RawMessage
		if json.Unmarshal(data, &m) != nil || m == nil {
			// Only the start of a message is read (a result may be
			// megabytes); the SDK writes whole, valid messages.
			return
		}
		_, hasResult := m["result"]
		_, hasError := m["error"]
		_, hasMethod := m["method"]
		raw, hasID := m["id"]
		want := (hasResult || hasError) && !hasMethod && hasID && string(bytes.TrimSpace(raw)) != "null"
		if ok && !want {
			t.Fatalf("%s read as a response to %s", data, id)
		}
		if ok && id != idKey(raw) {
			t.Fatalf("%s: id %s, want %s", data, id, idKey(raw))
		}
	})
}

func FuzzRemoteResult(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hi"}]}`,
		`{"content":[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}],"isError":true}`,
		`{"content":[{"type":"resource","resource":{"uri":"file:///x","blob":"AAE="}}],"structuredContent":{"a":1}}`,
		`{"content":[{"type":"resource_link","uri":"x","name":"n"}],"_meta":{"dev.toolhost/question":{"id":"q","text":"t","type":"boolean"}}}`,
		`{"content":[],"isError":true,"_meta":{"dev.toolhost/code":"LIMIT_EXCEEDED"}}`,
		`{"content":[{"type":"nope"}]}`, `{}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var res sdk.CallToolResult
		if json.Unmarshal(raw, &res) != nil {
			return
		}
		out, err := toPluginResult(&res)
		if err != nil {
			return
		}
		if out.Code != "" && !out.IsError {
			t.Fatalf("a code on a successful result: %s", out.Code)
		}
		if out.Code != "" {
			known := false
			for _, c := range plugin.Codes() {
				known = known || c == out.Code
			}
			if !known {
				t.Fatalf("unknown code %q passed through", out.Code)
			}
		}
	})
}

// What a client sends to prompts/get and completion/complete: any names
// and values. Values go into the text as they are (a "{{x}}" in one is
// never expanded); a completion never offers more than 100 values, each
// one starting with what was typed.
func FuzzDeclaredRequests(f *testing.F) {
	f.Add("topic", "{{topic}}", "go")
	f.Add("other", "x", "")
	f.Add("topic", "", "G")
	h, err := plugin.NewHost(plugin.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { h.Close() })
	text := declared.ParseText("About {{topic}}, in {{style}}.")
	many := make([]string, 300)
	for i := range many {
		many[i] = strings.Repeat("g", i%7) + string(rune('a'+i%26))
	}
	s, err := NewServer(h, ServerOptions{Prompts: []declared.Prompt{{
		Name: "p", Description: "d",
		Arguments: []declared.Argument{{Name: "topic", Required: true}, {Name: "style", Completions: many}},
		Messages:  []declared.Message{{Role: declared.RoleUser, Text: &text}},
	}}})
	if err != nil {
		f.Fatal(err)
	}
	get := s.getPrompt(s.offer.prompts["p"])
	f.Fuzz(func(t *testing.T, name, value, typed string) {
		args := map[string]string{name: value, "style": typed}
		res, err := get(context.Background(), &sdk.GetPromptRequest{Params: &sdk.GetPromptParams{Name: "p", Arguments: args}})
		switch {
		case name != "topic" && name != "style":
			if err == nil {
				t.Fatalf("unknown argument %q accepted", name)
			}
		case name == "topic" && value == "":
			if err == nil {
				t.Fatal("a missing required argument accepted")
			}
		case err != nil:
			t.Fatalf("%v: %v", args, err)
		case name == "topic":
			want := "About " + value + ", in " + typed + "."
			if got := res.Messages[0].Content.(*sdk.TextContent).Text; got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
		}
		c, err := s.complete(context.Background(), &sdk.CompleteRequest{Params: &sdk.CompleteParams{
			Ref: &sdk.CompleteReference{Type: "ref/prompt", Name: "p"}, Argument: sdk.CompleteParamsArgument{Name: "style", Value: typed},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Completion.Values) > 100 || c.Completion.Total < len(c.Completion.Values) || c.Completion.HasMore != (c.Completion.Total > len(c.Completion.Values)) {
			t.Fatalf("completion of %q: %d values, total %d, hasMore %v", typed, len(c.Completion.Values), c.Completion.Total, c.Completion.HasMore)
		}
		for _, v := range c.Completion.Values {
			if !strings.HasPrefix(strings.ToLower(v), strings.ToLower(typed)) {
				t.Fatalf("completion of %q offers %q", typed, v)
			}
		}
	})
}

// Every URI template the configuration accepts is one the SDK accepts too:
// NewServer never fails (or panics) on one.
func FuzzDeclaredTemplate(f *testing.F) {
	for _, s := range []string{"test://template/{id}/data", "x://a%20/{id}?q={q}", "x://é/{a}.{b}", "x://[::1]/{id}#f"} {
		f.Add(s)
	}
	h, err := plugin.NewHost(plugin.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { h.Close() })
	f.Fuzz(func(t *testing.T, tmpl string) {
		u, err := declared.ParseURITemplate(tmpl)
		if err != nil {
			return
		}
		if _, err := NewServer(h, ServerOptions{ResourceTemplates: []declared.Template{{URITemplate: u, Name: "t"}}}); err != nil {
			t.Fatalf("%q: accepted by the configuration, refused by the server: %v", tmpl, err)
		}
	})
}
