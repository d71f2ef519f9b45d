package jsonscan

import "testing"

func TestEnd(t *testing.T) {
	for doc, want := range map[string]int{
		`"a\"b" ,`:               6,
		`{"a":"}","b":[1,{}]} x`: 20,
		`[["]"],"\\"]`:           12,
		`-1.5e3,`:                6,
		`true}`:                  4,
		`"open`:                  -1,
		`{"a":[1}`:               -1,
		`,`:                      -1,
		``:                       -1,
	} {
		if got := End([]byte(doc), 0); got != want {
			t.Errorf("End(%q) = %d, want %d", doc, got, want)
		}
	}
}

func TestASCIIString(t *testing.T) {
	for doc, want := range map[string]string{
		`"path" :`: "path",
		`""`:       "",
	} {
		s, next, ok := ASCIIString([]byte(doc), 0)
		if !ok || string(s) != want || next != len(want)+2 {
			t.Errorf("ASCIIString(%q) = %q, %d, %v", doc, s, next, ok)
		}
	}
	for _, doc := range []string{`"pa\u0074h"`, `"é"`, "\"a\tb\"", `"open`, `x`, ``} {
		if _, _, ok := ASCIIString([]byte(doc), 0); ok {
			t.Errorf("ASCIIString(%q): ok", doc)
		}
	}
	if i := Space([]byte(" \t\r\n x"), 0); i != 5 {
		t.Errorf("Space: %d", i)
	}
}

func TestMembers(t *testing.T) {
	var got []string
	collect := func(name, value []byte) bool {
		got = append(got, string(name)+"="+string(value))
		return true
	}
	if !Members([]byte(` { "a" : 1 , "b":{"c":"}"},"d":[] } `), collect) || len(got) != 3 || got[1] != `b={"c":"}"}` || got[2] != "d=[]" {
		t.Errorf("members: %q", got)
	}
	for _, doc := range []string{`{}`, ` {} `} {
		if !Members([]byte(doc), collect) {
			t.Errorf("Members(%s): not an object", doc)
		}
	}
	for _, doc := range []string{`[]`, `"x"`, ``, `{"a"}`, `{"a":1`, `{"a":1 "b":2}`, `{"\u0061":1}`, `{"é":1}`} {
		if Members([]byte(doc), func(_, _ []byte) bool { return true }) {
			t.Errorf("Members(%s) = true", doc)
		}
	}
	n := 0
	if Members([]byte(`{"a":1,"b":2}`), func(_, _ []byte) bool { n++; return false }) || n != 1 {
		t.Errorf("fn returning false: Members went on (%d calls)", n)
	}
}
