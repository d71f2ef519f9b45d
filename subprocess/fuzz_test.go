package subprocess

import (
	"strings"
	"testing"
)

// FuzzCheckReadOnly feeds the bash.read-only parser (untrusted input: a
// model's command line). It must never panic, and nothing it accepts may
// hold a newline, which would start a second command.
func FuzzCheckReadOnly(f *testing.F) {
	for _, s := range []string{"ls -la", "cat f | grep x", "echo $(rm x)", "ls; rm x", `grep "a|b" f 2>&1`,
		"find . -exec rm x \\;", "cat <(ls)", "a'b\"c", "${HOME}", "ls 2>/dev/null", "\\\n", "sort -ofile"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if checkReadOnly(line) == nil && strings.ContainsAny(line, "\n\r") {
			t.Fatalf("accepted a command line with a newline: %q", line)
		}
	})
}

// FuzzDecodeResult feeds the decoder of plugin results (untrusted input: a
// plugin's output). It must never panic, and what it accepts must be within
// the size limit and hold only known content types.
func FuzzDecodeResult(f *testing.F) {
	for _, s := range []string{`{"content":[{"type":"text","text":"hi"}]}`, `{"content":[],"isError":true}`,
		`{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}]}`, `{}`, `null`, `{"content":5}`,
		"\x00garbage", `{"content":[{"type":"bogus"}]}`, `{"content":[]} trailing`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		res, err := decodeResult(out, 1<<10)
		if err != nil {
			return
		}
		if len(out) > 1<<10 {
			t.Fatalf("accepted %d bytes over the limit", len(out))
		}
		for _, c := range res.Content {
			switch c.Type {
			case "text", "image", "audio", "resource_link", "resource":
			default:
				t.Fatalf("accepted content type %q", c.Type)
			}
		}
	})
}
