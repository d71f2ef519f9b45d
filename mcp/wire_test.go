package mcp

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// wireSamples are messages of every shape: the ones decodeCommon takes and
// the ones it leaves to the SDK.
var wireSamples = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fs_read","arguments":{"path":"a b"}}}`,
	`{"jsonrpc":"2.0","id":"abc","method":"tools/list"}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"x"}}`,
	` { "jsonrpc" : "2.0" , "id" : 7 , "method" : "ping" , "params" : { "a" : [ 1 , "}" , {"b":"\"]"} ] } } `,
	`{"jsonrpc":"2.0","id":2,"result":{"action":"accept","content":{"ok":true}}}`,
	`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no"}}`,
	`{"jsonrpc":"2.0","id":2,"result":null}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":null}`,
	`{"jsonrpc":"2.0","id":null,"method":"x"}`,
	`{"jsonrpc":"2.0","id":1.7,"method":"x"}`,
	`{"jsonrpc":"2.0","id":-3e2,"method":"x"}`,
	`{"jsonrpc":"2.0","id":12345678901234567890,"method":"x"}`,
	`{"jsonrpc":"2.0","id":1e400,"method":"x"}`,
	`{"jsonrpc":"2.0","id":true,"method":"x"}`,
	`{"jsonrpc":"2.0","id":"\u00e9","method":"x"}`,
	`{"jsonrpc":"2.0","id":"é","method":"x"}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools\/call"}`,
	`{"jsonrpc":"2.0","id":1,"method":""}`,
	`{"jsonrpc":"2.0","id":1,"method":5}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","method":"y"}`,
	`{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}`,
	`{"jsonrpc":"1.0","id":1,"method":"x"}`,
	`{"JSONRPC":"2.0","id":1,"method":"x"}`,
	`{"jsonrpc":"2.0","ID":1,"method":"x"}`,
	`{"jsonrpc":"2.0","id":1,"Method":"x"}`,
	`{"jsonrpc":"2.0","id":1}`,
	`{"jsonrpc":"2.0","result":{}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","extra":{"deep":[[[]]]}}`,
	`{}`,
	`[]`,
	`"x"`,
	`null`,
}

// TestDecodeCommon: whatever decodeCommon decodes, it decodes as the SDK
// does; the common shapes are its to decode.
func TestDecodeCommon(t *testing.T) {
	taken := 0
	for _, s := range wireSamples {
		if compareDecoders(t, []byte(s)) {
			taken++
		}
	}
	for _, s := range wireSamples[:6] {
		if decodeCommon([]byte(s)) == nil {
			t.Errorf("decodeCommon left a common message to the SDK: %s", s)
		}
	}
	if taken == len(wireSamples) {
		t.Error("decodeCommon took every sample, the odd ones too")
	}
}

func FuzzDecodeCommon(f *testing.F) {
	for _, s := range wireSamples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if json.Valid([]byte(s)) {
			compareDecoders(t, []byte(s))
		}
	})
}

// compareDecoders checks that decodeCommon, if it takes b, gives what
// jsonrpc.DecodeMessage gives, and reports whether it took it.
func compareDecoders(t *testing.T, b []byte) bool {
	t.Helper()
	got := decodeCommon(b)
	if got == nil {
		return false
	}
	want, err := jsonrpc.DecodeMessage(b)
	if err != nil {
		t.Errorf("decodeCommon decoded what the SDK refuses (%v): %s", err, b)
		return true
	}
	if g, w := describeMessage(got), describeMessage(want); g != w {
		t.Errorf("decoding %s\ngot  %s\nwant %s", b, g, w)
	}
	return true
}

func describeMessage(m jsonrpc.Message) string {
	switch m := m.(type) {
	case *jsonrpc.Request:
		return fmt.Sprintf("request id %#v method %q params %q", m.ID.Raw(), m.Method, m.Params)
	case *jsonrpc.Response:
		return fmt.Sprintf("response id %#v result %q error %v", m.ID.Raw(), m.Result, m.Error)
	}
	return fmt.Sprintf("%T", m)
}
