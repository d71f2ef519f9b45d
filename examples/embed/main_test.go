package main

import (
	"bytes"
	"context"
	"testing"
)

func TestEmbedExample(t *testing.T) {
	var out bytes.Buffer
	if err := runTo(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	want := `tool text.stats (read_only): Counts the words, lines and characters of a text.
result: {"chars":18,"lines":2,"words":4}
error: INVALID_REQUEST: invalid arguments: missing required field "text"; unexpected field "txt" (not in the schema)
`
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
}
