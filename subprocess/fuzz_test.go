package subprocess

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzCheckReadOnly feeds the bash.read-only parser (untrusted input: a
// model's command line). It must never panic; the line it gives bash may
// hold a newline only inside single quotes (elsewhere one would start a
// second command); and bash runs the words it read.
func FuzzCheckReadOnly(f *testing.F) {
	for _, s := range []string{"ls -la", "cat f | grep x", "echo $(rm x)", "ls; rm x", `grep "a|b" f 2>&1`,
		"find . -exec rm x \\;", "cat <(ls)", "a'b\"c", "${HOME}", "ls 2>/dev/null", "\\\n", "sort -ofile",
		"cat \\\r", "echo 'a\nb' \"c\\\"d\" e\\ f", "echo \"it's\" '#' ~ !x", "echo \"a\\$b\\`c\\-d\\\ne\""} {
		f.Add(s)
	}
	bash, _ := exec.LookPath("bash")
	f.Fuzz(func(t *testing.T, line string) {
		segs, canon, err := parseReadOnly(line)
		if err != nil {
			return
		}
		// What of the line bash reads outside single quotes and escapes.
		var unquoted []byte
		for i := 0; i < len(canon); i++ {
			switch canon[i] {
			case '\\':
				i++
			case '\'':
				j := strings.IndexByte(canon[i+1:], '\'')
				if j < 0 {
					t.Fatalf("%q: an unterminated quote in %q", line, canon)
				}
				i += j + 1
			default:
				unquoted = append(unquoted, canon[i])
			}
		}
		if strings.ContainsAny(string(unquoted), "\n\r") {
			t.Fatalf("%q: a newline outside quotes in the line for bash: %q", line, canon)
		}
		// Bash must run the words the check read. Every allowlisted
		// program is made a function printing its arguments; glob
		// characters and redirections are left to other tests.
		if bash == "" || len(segs) != 1 || strings.ContainsAny(line, "*?[<>\x00") || !utf8.ValidString(line) {
			return
		}
		var defs strings.Builder
		for _, name := range readOnlyCommandNames() {
			fmt.Fprintf(&defs, "%s() { printf '%%s\\0' \"$@\"; }\n", name)
		}
		out, err := exec.Command(bash, "--noprofile", "--norc", "-c", defs.String()+canon).Output()
		if err != nil {
			t.Fatalf("bash -c %q: %v", canon, err)
		}
		got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		if len(segs[0]) == 1 {
			got = nil
		}
		if !slices.Equal(got, segs[0][1:]) {
			t.Fatalf("%q: the check read %q, bash ran %q (as %s)", line, segs[0][1:], got, canon)
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
