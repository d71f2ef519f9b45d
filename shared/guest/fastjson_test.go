package guest

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// decodeCallSlow is what callTool does without decodeCall.
func decodeCallSlow(in []byte) (Call, error) {
	var req struct {
		Params Call `json:"params"`
	}
	err := json.Unmarshal(in, &req)
	return req.Params, err
}

func sameCall(t *testing.T, in []byte) {
	t.Helper()
	fast, ok := decodeCall(in)
	if !ok {
		return // left to encoding/json: the same by construction
	}
	slow, err := decodeCallSlow(in)
	if err != nil {
		t.Fatalf("decodeCall(%q) took what encoding/json refuses: %v", in, err)
	}
	if fast.Name != slow.Name || string(fast.Arguments) != string(slow.Arguments) || len(fast.Answers) != 0 || len(slow.Answers) != 0 {
		t.Fatalf("decodeCall(%q) = %q %q; encoding/json %q %q %v", in, fast.Name, fast.Arguments, slow.Name, slow.Arguments, slow.Answers)
	}
}

func TestDecodeCall(t *testing.T) {
	for _, c := range []struct {
		in   string
		ok   bool
		name string
		args string
	}{
		{`{"params":{"name":"fs.read","arguments":{"path":"a \"b\" \\ c","n":[1,{"x":null}]}}}`, true, "fs.read", `{"path":"a \"b\" \\ c","n":[1,{"x":null}]}`},
		{` { "jsonrpc" : "2.0", "params" : { "arguments" : {} , "name" : "t" , "extra": [true, false, -1.5e3] } , "id": 1 } `, true, "t", `{}`},
		{`{"params":{"name":"t"}}`, true, "t", ``},
		{`{"params":{"name":"t","arguments":null}}`, true, "t", `null`},
		{`{"params":null}`, true, "", ``},
		{`{"params":{"name":"t","answers":{"q":true}}}`, false, "", ``}, // answers: encoding/json
		{`{"params":{"name":"t","answers":null}}`, true, "t", ``},
		{`{"params":{"name":"t\u00e9"}}`, false, "", ``}, // an escape in the name
		{`{"params":{"Name":"t"}}`, false, "", ``},       // case-insensitive match
		{`{"params":{"argumentſ":{}}}`, false, "", ``},   // LONG S folds to s
		{`{"params":{"name":"t"}`, false, "", ``},        // not JSON
		{`[]`, false, "", ``},
		{`{"params":{"name":"a","name":"b"}}`, true, "b", ``}, // the last wins, as in encoding/json
	} {
		got, ok := decodeCall([]byte(c.in))
		if ok != c.ok || ok && (got.Name != c.name || string(got.Arguments) != c.args) {
			t.Errorf("decodeCall(%s) = %q %q %v; want %q %q %v", c.in, got.Name, got.Arguments, ok, c.name, c.args, c.ok)
		}
		sameCall(t, []byte(c.in))
	}
}

func FuzzDecodeCall(f *testing.F) {
	f.Add([]byte(`{"params":{"name":"fs.read","arguments":{"path":"x"}}}`))
	f.Add([]byte(`{"params":{"name":"t","arguments":[1,"]}",{"a":"\\"}]},"x":{}}`))
	f.Fuzz(func(t *testing.T, in []byte) { sameCall(t, in) })
}

// sameResult: what the host decodes from appendResult equals what it
// decodes from encoding/json's encoding of the same wire result.
func sameResult(t *testing.T, res *Result, refs []*[2]int) {
	t.Helper()
	fast, ok := appendResult(nil, res, refs)
	if !ok {
		return
	}
	w := wireResult{StructuredContent: res.StructuredContent, IsError: res.IsError, NeedsInput: res.NeedsInput, Code: res.Code}
	if res.Content != nil {
		w.Content = []wireContent{}
	}
	for i, c := range res.Content {
		wc := wireContent{Content: c}
		if i < len(refs) && refs[i] != nil {
			wc.TextRef, wc.Text = refs[i], ""
		}
		w.Content = append(w.Content, wc)
	}
	slow, err := json.Marshal(w)
	if err != nil {
		t.Fatalf("encoding/json refuses what appendResult took: %v", err)
	}
	var a, b any
	if err := json.Unmarshal(fast, &a); err != nil {
		t.Fatalf("appendResult wrote invalid JSON %q: %v", fast, err)
	}
	if err := json.Unmarshal(slow, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("appendResult:\n%s\nencoding/json:\n%s", fast, slow)
	}
}

func TestAppendResult(t *testing.T) {
	for _, res := range []*Result{
		Text("plain"),
		Text("quotes \" backslash \\ newline \n tab \t <html> & \x01 \x7f é \u2028 \u2029 \xff\xfe bad"),
		{Content: []Content{}},
		{},
		ErrorCode("FILE_NOT_FOUND", "x does not exist"),
		{Content: []Content{{Type: "image", Data: []byte{0, 1, 2, 250}, MIMEType: "image/png"}, {Type: "resource_link", URI: "file:///x", Name: "x"}}},
		{Content: []Content{{Type: "resource", Resource: &Resource{URI: ArtifactURIPrefix + "diff", Text: "+a\n-b"}}}, StructuredContent: json.RawMessage(" { \"n\" : [ 1 , \"a b\\\" c\" ] } ")},
		{Content: []Content{{Type: "resource", Resource: &Resource{URI: "u", MIMEType: "text/plain", Text: ""}}}},
	} {
		sameResult(t, res, nil)
	}
	// A question, or structured content that is not JSON: encoding/json.
	if _, ok := appendResult(nil, &Result{NeedsInput: &Question{ID: "q"}}, nil); ok {
		t.Error("a question was encoded without encoding/json")
	}
	if _, ok := appendResult(nil, &Result{StructuredContent: json.RawMessage("{")}, nil); ok {
		t.Error("invalid structured content was encoded without encoding/json")
	}
	// Large text by reference.
	big := strings.Repeat("x", rawTextMin)
	sameResult(t, &Result{Content: []Content{{Type: "text", Text: "small"}, {Type: "text", Text: big}}}, []*[2]int{nil, {0, len(big)}})
	out, err := EncodeFast(&Result{Content: []Content{{Type: "text", Text: big}}})
	if err != nil || !strings.HasSuffix(string(out), "\n"+big) || !strings.Contains(string(out), `"textRef":[0,4096]`) {
		t.Fatalf("EncodeFast: %v %.80q", err, out)
	}
}

func FuzzAppendResult(f *testing.F) {
	f.Add("text", "hello", []byte{1, 2}, "uri", `{"a":1}`, true, "CODE")
	f.Add("text", "\xff\u2028<>&\"\\\n", []byte(nil), "", ``, false, "")
	f.Fuzz(func(t *testing.T, typ, text string, data []byte, uri, structured string, isErr bool, code string) {
		res := &Result{
			Content:           []Content{{Type: typ, Text: text, Data: data, URI: uri, Name: text, MIMEType: uri}, {Type: "resource", Resource: &Resource{URI: uri, Text: text}}},
			StructuredContent: json.RawMessage(structured),
			IsError:           isErr,
			Code:              code,
		}
		sameResult(t, res, nil)
	})
}

// TestPlainRun holds the word-at-a-time scan to the byte-by-byte rule.
func TestPlainRun(t *testing.T) {
	plain := func(c byte) bool {
		return c >= 0x20 && c < 0x80 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	var cases []string
	for c := range 256 {
		for pos := range 8 {
			b := []byte("aaaaaaaaaaaaaaaa")
			b[pos] = byte(c)
			b[pos+8] = byte(c)
			cases = append(cases, string(b))
		}
	}
	for _, s := range append(cases, "", "abcdefgh", "abcdefghijklmnop", "abc\ndefghijklmno", "abcdefg\x7f", "abcdefgh\x00",
		"abcdefgé", "é", "abcdef\"h", "ab<>&\\xyzzzzzzzzz", " !#$%'()*+,-./0123456789:;=?@[]^_`{|}~abcdefghi", "\x1f\x20\x21\x22abcdefgh") {
		for i := 0; i <= len(s); i++ {
			want := 0
			for want < len(s)-i && plain(s[i+want]) {
				want++
			}
			got := plainRun(s, i)
			// plainRun stops at a special byte, or where fewer than eight
			// remain; it never claims a byte that is not plain.
			if got > want || (got < want && len(s)-i-got >= 8) {
				t.Errorf("plainRun(%q, %d) = %d, want %d", s, i, got, want)
			}
		}
	}
}
