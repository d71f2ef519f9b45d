package callproto

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestDecodeFastPath: references outside the raw bytes are refused; the
// common shape's shortcut decodes as the general decoder does, and takes
// nothing else; invalid UTF-8 in raw text becomes U+FFFD.
func TestDecodeFastPath(t *testing.T) {
	for _, tc := range []struct{ name, out string }{
		{"ref past the end", "{\"content\":[{\"type\":\"text\",\"textRef\":[0,10]}]}\nabc"},
		{"negative ref", "{\"content\":[{\"type\":\"text\",\"textRef\":[-1,2]}]}\nabc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head, tail := Split([]byte(tc.out))
			if _, err := Decode(head, tail); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	// The common shape's shortcut decodes as the general decoder does, and
	// takes nothing else.
	const ref = "{\"content\":[{\"type\":\"text\",\"textRef\":[0,"
	for _, tc := range []struct {
		out  string
		take bool
	}{
		{ref + "3]}]}\nabc", true},
		{ref + "0]}]}\n", true},
		{ref + "4]}]}\na\xffbc", true},
		{ref + "2]}]}\nabc", false},  // a reference to part of the bytes
		{ref + "03]}]}\nabc", false}, // not JSON
		{ref + "+3]}]}\nabc", false}, // not JSON
		{ref + "3]}],\"isError\":true}\nabc", false},
	} {
		head, tail := Split([]byte(tc.out))
		got := decodeRawText(head, tail)
		if (got != nil) != tc.take {
			t.Errorf("%q: shortcut taken %v, want %v", tc.out, got != nil, tc.take)
			continue
		}
		if want, err := decodeCallToolJSON(head, tail); got != nil && (err != nil || !reflect.DeepEqual(got, want)) {
			t.Errorf("%q: shortcut %+v, general %+v, %v", tc.out, got, want, err)
		}
	}
	t.Run("invalid UTF-8 in raw text", func(t *testing.T) {
		head, tail := Split([]byte("{\"content\":[{\"type\":\"text\",\"textRef\":[0,3]}]}\na\xffb"))
		res, err := Decode(head, tail)
		if err != nil || res.Content[0].Text != "a\uFFFDb" {
			t.Fatalf("%+v %v", res, err)
		}
	})
}

// TestCallToolInput: the input written by hand decodes as encoding/json's
// encoding of the same call does, for names that need escaping and with
// answers or without.
func TestCallToolInput(t *testing.T) {
	for _, name := range []string{"filesystem.read", `q"uote\back<slash>`, "ünïcode\u2028"} {
		for _, answers := range []map[string]json.RawMessage{nil, {"q1": json.RawMessage(`"yes"`)}} {
			args := json.RawMessage(`{"path":"a<b>&c","n":[1,{"x":null}]}`)
			got, err := Encode(Head(name), name, args, answers)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(Input{Params: Params{Name: name, Arguments: args, Answers: answers}})
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatalf("%s: %v", got, err)
			}
			json.Unmarshal(want, &w)
			if !reflect.DeepEqual(g, w) {
				t.Errorf("got %s\nwant %s", got, want)
			}
		}
	}
}

// FuzzDecode feeds arbitrary call_tool output, a guest's to choose:
// Decode must not panic, and where the common shape's shortcut takes the
// output it must give the general decoder's answer.
func FuzzDecode(f *testing.F) {
	const ref = "{\"content\":[{\"type\":\"text\",\"textRef\":[0,"
	for _, seed := range []string{
		ref + "3]}]}\nabc", ref + "0]}]}\n", ref + "4]}]}\na\xffbc", ref + "2]}]}\nabc", ref + "03]}]}\nabc",
		ref + "3]}],\"isError\":true}\nabc", "{\"content\":[{\"type\":\"text\",\"textRef\":[-1,2]}]}\nabc",
		`{"content":[{"type":"text","text":"hi"}],"isError":true,"code":"FILE_NOT_FOUND"}`,
		`{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}],"structuredContent":{"a":1}}`,
		`{"content":[]}`, `{}`, ``, "\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		head, tail := Split(out)
		res, err := Decode(head, tail)
		if (res == nil) == (err == nil) {
			t.Fatalf("Decode(%q) = %+v, %v: want a result or an error", out, res, err)
		}
		if fast := decodeRawText(head, tail); fast != nil {
			if slow, err := decodeCallToolJSON(head, tail); err != nil || !reflect.DeepEqual(fast, slow) {
				t.Fatalf("%q: shortcut %+v, general %+v, %v", out, fast, slow, err)
			}
		}
	})
}
