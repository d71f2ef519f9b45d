package mcp

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestJSONLen(t *testing.T) {
	for _, c := range []struct {
		s    string
		want int
	}{
		{"", 0},
		{"plain text", 10},
		{`"q"`, 5},
		{`a\b`, 4},
		{"<&>", 18},
		{"\x01", 6},
		{"\xff", 6},
		{"é", 2},
		{"\u2028", 6},
	} {
		if got := jsonLen(c.s); got != c.want {
			t.Errorf("jsonLen(%q) = %d, want %d", c.s, got, c.want)
		}
	}
}

// FuzzJSONLen: jsonLen is never less than what encoding/json writes inside
// the quotes.
func FuzzJSONLen(f *testing.F) {
	for _, s := range []string{"", "abc", "<script>&amp;", "\x00\n\t\"\\", "\xed\xa0\x80", "\u2028\u2029", strings.Repeat("é", 10)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if n := jsonLen(s); n < len(b)-2 {
			t.Errorf("jsonLen(%q) = %d, encoding/json wrote %d", s, n, len(b)-2)
		}
	})
}
