package builtin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/plugin"
)

// fixture builds a workspace with the awkward files the tools must handle,
// next to an "outside" directory the tools must never reach.
func fixture(t *testing.T) (ws, outside string) {
	t.Helper()
	root := t.TempDir()
	ws, outside = filepath.Join(root, "ws"), filepath.Join(root, "outside")
	var lines strings.Builder
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&lines, "line %d\n", i)
	}
	writeFiles(t, ws, map[string]string{
		"hello.txt":        "hello\nworld\n",
		"lines.txt":        lines.String(),
		"bom.txt":          "\xef\xbb\xbfwith bom\n",
		"latin1.txt":       "caf\xe9 cr\xe8me\n",
		"bin.dat":          "GIF89a\x00\x01\x02needle",
		"big.txt":          strings.Repeat("x", 100<<10),
		"src/main.go":      "package main\n\nfunc main() {\n\tprintln(\"needle\")\n}\n",
		"src/deep/util.go": "package deep\n\n// Needle in a comment.\nvar needle = 1 // needle twice\n",
		"docs/guide.md":    "# Guide\n\nFind the needle here.\n",
		".gitignore":       "ignored/\n*.log\n",
		"ignored/x.txt":    "needle in an ignored dir\n",
		"debug.log":        "needle in an ignored file\n",
		".git/config":      "needle in .git\n",
		"bad\xffname.txt":  "needle in a badly named file\n",
		"unicode/ünï.txt":  "αβγ needle\n",
	})
	writeFiles(t, outside, map[string]string{"secret.txt": "needle: top secret\n"})
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(ws, "escape.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "escapedir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("hello.txt", filepath.Join(ws, "link.txt")); err != nil {
		t.Fatal(err)
	}
	return ws, outside
}

// hostile are the bad paths every file tool must refuse with a code.
func hostile(tool string, extra map[string]any) []check {
	args := func(p string) string {
		m := map[string]any{"path": p}
		for k, v := range extra {
			m[k] = v
		}
		b, err := json.Marshal(m)
		if err != nil {
			panic(err)
		}
		return string(b)
	}
	return []check{
		{name: "dotdot", tool: tool, args: args("../outside/secret.txt"), code: plugin.CodePermissionDenied, want: []string{".."}},
		{name: "dotdot inside", tool: tool, args: args("src/../../outside/secret.txt"), code: plugin.CodePermissionDenied},
		{name: "absolute outside", tool: tool, args: args("/etc/passwd"), code: plugin.CodePermissionDenied, want: []string{"outside every mounted directory"}},
		{name: "absolute climbing", tool: tool, args: args("/workspace/../etc/passwd"), code: plugin.CodePermissionDenied},
		{name: "tmp is not a mount", tool: tool, args: args("/tmp/x"), code: plugin.CodePermissionDenied},
		{name: "symlink out", tool: tool, args: args("escape.txt"), code: plugin.CodePermissionDenied},
		{name: "through symlinked dir", tool: tool, args: args("escapedir/secret.txt"), code: plugin.CodePermissionDenied},
		{name: "null byte", tool: tool, args: args("hello.txt\x00.png"), code: plugin.CodeInvalidRequest, want: []string{"NUL"}},
		{name: "over-long path", tool: tool, args: args(strings.Repeat("a/", 2100) + "x"), code: plugin.CodeInvalidRequest},
		{name: "over-long name", tool: tool, args: args(strings.Repeat("n", 300)), code: plugin.CodeInvalidRequest},
		{name: "non-UTF-8 name", tool: tool, args: `{"path":"bad` + "\xff" + `name.txt"}`, code: plugin.CodeInvalidRequest},
		{name: "replacement char", tool: tool, args: args("bad\uFFFDname.txt"), code: plugin.CodeInvalidRequest},
		{name: "path not a string", tool: tool, args: `{"path": 7}`, code: plugin.CodeInvalidRequest},
		{name: "unknown argument", tool: tool, args: args("hello.txt")[:len(args("hello.txt"))-1] + `,"bogus":1}`, code: plugin.CodeInvalidRequest},
	}
}

func TestFilesystemRead(t *testing.T) {
	ws, _ := fixture(t)
	h := newHost(t, fsSpec("filesystem.read", ws, map[string]string{"max_file_size": "64KiB"}))
	probe := check{tool: "filesystem.read", args: `{"path":"hello.txt"}`, want: []string{"hello"}}
	cases := []check{
		{name: "whole file", tool: "filesystem.read", args: `{"path":"hello.txt"}`, want: []string{"hello\nworld\n"}, notWant: []string{"["}},
		{name: "absolute inside mount", tool: "filesystem.read", args: `{"path":"/workspace/hello.txt"}`, want: []string{"hello\nworld"}},
		{name: "symlink inside", tool: "filesystem.read", args: `{"path":"link.txt"}`, want: []string{"hello"}},
		{name: "offset and limit", tool: "filesystem.read", args: `{"path":"lines.txt","offset":10,"limit":3}`,
			want: []string{"line 10\nline 11\nline 12\n", "[lines 10-12 of 100; call again with offset=13 for more]"}, notWant: []string{"line 9\n", "line 13"}},
		{name: "offset to end", tool: "filesystem.read", args: `{"path":"lines.txt","offset":99}`, want: []string{"line 99\nline 100\n[lines 99-100 of 100]"}},
		{name: "offset past end", tool: "filesystem.read", args: `{"path":"lines.txt","offset":500}`, want: []string{"offset 500 is past the end: the file has 100 lines"}},
		{name: "bom stripped", tool: "filesystem.read", args: `{"path":"bom.txt"}`, want: []string{"with bom"}, notWant: []string{"\ufeff"}},
		{name: "latin-1 fallback", tool: "filesystem.read", args: `{"path":"latin1.txt"}`, want: []string{"café crème", "not valid UTF-8; it was decoded as latin-1"}},
		{name: "latin-1 asked", tool: "filesystem.read", args: `{"path":"latin1.txt","encoding":"latin-1"}`, want: []string{"café crème"}, notWant: []string{"not valid"}},
		{name: "binary", tool: "filesystem.read", args: `{"path":"bin.dat"}`, want: []string{"Binary file, 15 bytes"}, notWant: []string{"needle"}},
		{name: "unicode name", tool: "filesystem.read", args: `{"path":"unicode/ünï.txt"}`, want: []string{"αβγ"}},
		{name: "too large", tool: "filesystem.read", args: `{"path":"big.txt"}`, code: plugin.CodeFileTooLarge, want: []string{"102400 bytes", "65536"}},
		{name: "missing", tool: "filesystem.read", args: `{"path":"nope.txt"}`, code: plugin.CodeFileNotFound, want: []string{"nope.txt does not exist"}},
		{name: "missing parent", tool: "filesystem.read", args: `{"path":"hello.txt/x"}`, code: plugin.CodeFileNotFound},
		{name: "directory", tool: "filesystem.read", args: `{"path":"src"}`, code: plugin.CodeInvalidRequest, want: []string{"filesystem.list"}},
		{name: "offset zero", tool: "filesystem.read", args: `{"path":"hello.txt","offset":0}`, code: plugin.CodeInvalidRequest},
		{name: "bad encoding", tool: "filesystem.read", args: `{"path":"hello.txt","encoding":"ebcdic"}`, code: plugin.CodeInvalidRequest},
		{name: "no path", tool: "filesystem.read", args: `{}`, code: plugin.CodeInvalidRequest},
	}
	cases = append(cases, hostile("filesystem.read", nil)...)
	runChecks(t, h, probe, cases)
}

// TestFilesystemConfig: the operator's config reaches the plugin whole
// (toolhost_config_get, asked again with room for a value longer than its
// first buffer), and a value it cannot use is named in the error.
func TestFilesystemConfig(t *testing.T) {
	ws, _ := fixture(t)
	for _, c := range []struct {
		name, size string
		code       plugin.Code
		want       string
	}{
		{"a long value it cannot use", strings.Repeat("nine ", 60) + "KiB", plugin.CodeToolExecutionFailed, "max_file_size = \"" + strings.Repeat("nine ", 60) + "KiB\" is not a size"},
		{"a size padded past the first buffer", strings.Repeat(" ", 200) + "8", plugin.CodeFileTooLarge, "12 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHost(t, fsSpec("filesystem.read", ws, map[string]string{"max_file_size": c.size}))
			_, err := invoke(t, h, "filesystem.read", `{"path":"hello.txt"}`)
			if plugin.CodeOf(err) != c.code || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %s containing %q", err, c.code, c.want)
			}
		})
	}
}

func TestFilesystemList(t *testing.T) {
	ws, _ := fixture(t)
	for i := range 30 {
		writeFiles(t, ws, map[string]string{fmt.Sprintf("many/f%02d", i): "x"})
	}
	// One entry of each kind with a known time, for the exact line format.
	writeFiles(t, ws, map[string]string{"stamped/a file.txt": "12345", "stamped/sub/x": ""})
	stamp := time.Date(2024, 3, 1, 12, 34, 56, 0, time.UTC)
	for _, p := range []string{"stamped/a file.txt", "stamped/sub"} {
		if err := os.Chtimes(filepath.Join(ws, p), stamp, stamp); err != nil {
			t.Fatal(err)
		}
	}
	// A link to a directory inside the workspace: listed as the link, not
	// followed (the module opens what it lists without following links).
	if err := os.MkdirAll(filepath.Join(ws, "links"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../src", filepath.Join(ws, "links", "srclink")); err != nil {
		t.Fatal(err)
	}
	h := newHost(t, fsSpec("filesystem.list", ws, map[string]string{"max_entries": "20"}))
	probe := check{tool: "filesystem.list", args: `{"path":"src"}`, want: []string{"main.go"}}
	cases := []check{
		{name: "workspace", tool: "filesystem.list", args: `{"path":"."}`,
			want:    []string{"\nfile hello.txt\n", "\ndir  src/\n", "\nlink link.txt -> hello.txt\n", "\ndir  unicode/"},
			notWant: []string{"src/main.go", "2024-", "  12  "}},
		{name: "workspace with details", tool: "filesystem.list", args: `{"path":".","details":true}`,
			want:    []string{"file         12  ", "  hello.txt\n", "dir           -  ", "  src/\n", "link ", "link.txt -> hello.txt", "unicode/"},
			notWant: []string{"src/main.go"}},
		{name: "default path", tool: "filesystem.list", args: `{}`, want: []string{"hello.txt"}},
		{name: "exact lines", tool: "filesystem.list", args: `{"path":"stamped"}`,
			want: []string{"file stamped/a file.txt\ndir  stamped/sub/"}},
		{name: "exact lines with details", tool: "filesystem.list", args: `{"path":"stamped","details":true}`,
			want: []string{"file          5  2024-03-01 12:34:56  stamped/a file.txt\ndir           -  2024-03-01 12:34:56  stamped/sub/"}},
		{name: "exact line of a file", tool: "filesystem.list", args: `{"path":"stamped/a file.txt"}`,
			want: []string{"file stamped/a file.txt"}},
		{name: "exact line of a file with details", tool: "filesystem.list", args: `{"path":"stamped/a file.txt","details":true}`,
			want: []string{"file          5  2024-03-01 12:34:56  stamped/a file.txt"}},
		{name: "a link to a directory", tool: "filesystem.list", args: `{"path":"links/srclink"}`,
			want: []string{"link links/srclink -> ../src"}, notWant: []string{"main.go"}},
		{name: "a link to a directory out of the workspace", tool: "filesystem.list", args: `{"path":"escapedir"}`,
			want: []string{"link escapedir -> "}, notWant: []string{"secret"}},
		{name: "details false", tool: "filesystem.list", args: `{"path":"stamped","details":false}`,
			want: []string{"file stamped/a file.txt\n"}, notWant: []string{"2024-"}},
		{name: "details not a boolean", tool: "filesystem.list", args: `{"details":"yes"}`, code: plugin.CodeInvalidRequest},
		{name: "subdir shows workspace paths", tool: "filesystem.list", args: `{"path":"src"}`, want: []string{"file src/main.go", "dir  src/deep/\n"}},
		{name: "depth", tool: "filesystem.list", args: `{"path":"src","depth":3}`, want: []string{"src/deep/util.go"}},
		{name: "glob", tool: "filesystem.list", args: `{"path":"src","depth":3,"glob":"*.go"}`, want: []string{"src/main.go", "src/deep/util.go"}, notWant: []string{"src/deep/\n"}},
		{name: "glob no match", tool: "filesystem.list", args: `{"glob":"*.rs"}`, want: []string{`[no entries match "*.rs"]`}},
		{name: "non-UTF-8 name shown quoted", tool: "filesystem.list", args: `{"glob":"bad*"}`, want: []string{`bad\xffname.txt  (name is not valid UTF-8`}},
		{name: "a file", tool: "filesystem.list", args: `{"path":"hello.txt"}`, want: []string{"hello.txt"}},
		{name: "entry cap", tool: "filesystem.list", args: `{"path":"many"}`, want: []string{"many/f19\n[listing stopped at 20 entries"}, notWant: []string{"f20"}},
		{name: "does not descend into .git", tool: "filesystem.list", args: `{"depth":5,"glob":"config"}`, notWant: []string{".git/config"}},
		{name: "empty dir", tool: "filesystem.list", args: `{"path":"ignored","glob":"nothing"}`, want: []string{"[no entries match"}},
		{name: "missing", tool: "filesystem.list", args: `{"path":"nope"}`, code: plugin.CodeFileNotFound},
		{name: "bad glob", tool: "filesystem.list", args: `{"glob":"[a"}`, code: plugin.CodeInvalidRequest},
		{name: "depth too deep", tool: "filesystem.list", args: `{"depth":99}`, code: plugin.CodeInvalidRequest},
	}
	cases = append(cases, hostile("filesystem.list", nil)...)
	// A symlink to a file lists fine (it is an entry); listing through a
	// symlinked directory that leads out is refused.
	for i := range cases {
		if cases[i].name == "symlink out" {
			cases[i] = check{name: "symlink out is listed as a link", tool: "filesystem.list", args: `{"path":"escape.txt"}`, want: []string{"link "}}
		}
	}
	runChecks(t, h, probe, cases)
}

func TestFilesystemSearch(t *testing.T) {
	ws, _ := fixture(t)
	h := newHost(t, fsSpec("filesystem.search", ws, map[string]string{"max_file_size": "64KiB"}))
	probe := check{tool: "filesystem.search", args: `{"name":"*.md"}`, want: []string{"docs/guide.md"}}
	cases := []check{
		{name: "literal", tool: "filesystem.search", args: `{"pattern":"needle"}`,
			want:    []string{"src/main.go:4:11: \tprintln(\"needle\")", "src/deep/util.go:4:5: var needle = 1", "docs/guide.md:3:10: Find the needle here.", "unicode/ünï.txt:1:5: αβγ needle"},
			notWant: []string{"ignored/x.txt", "debug.log", ".git/config", "secret", "bin.dat", "util.go:3:"}},
		{name: "one line once", tool: "filesystem.search", args: `{"pattern":"needle","name":"util.go"}`, want: []string{"[1 matching lines; 1 files searched]"}},
		{name: "case insensitive", tool: "filesystem.search", args: `{"pattern":"NEEDLE","case_sensitive":false,"path":"src/deep"}`,
			want: []string{"src/deep/util.go:3:4: // Needle in a comment.", "src/deep/util.go:4:5:"}},
		{name: "regex", tool: "filesystem.search", args: `{"pattern":"^func \\w+","regex":true}`, want: []string{"src/main.go:3:1: func main() {"}},
		{name: "regex multiline anchors", tool: "filesystem.search", args: `{"pattern":"needle\"\\)$","regex":true}`, want: []string{"src/main.go:4:11:"}},
		{name: "by name", tool: "filesystem.search", args: `{"name":"*.go"}`, want: []string{"src/main.go\n", "src/deep/util.go\n", "[2 files]"}},
		{name: "by path glob", tool: "filesystem.search", args: `{"name":"src/**/*.go"}`, want: []string{"src/deep/util.go"}},
		{name: "name and pattern", tool: "filesystem.search", args: `{"name":"*.md","pattern":"needle"}`, want: []string{"docs/guide.md:3:10:"}, notWant: []string{"main.go"}},
		{name: "a single file", tool: "filesystem.search", args: `{"path":"docs/guide.md","pattern":"Guide"}`, want: []string{"docs/guide.md:1:3: # Guide"}},
		{name: "cap", tool: "filesystem.search", args: `{"pattern":"line","max_results":5}`, want: []string{"lines.txt:5:1: line 5", "stopped after 5 matching lines"}, notWant: []string{"line 6"}},
		{name: "binary skipped", tool: "filesystem.search", args: `{"pattern":"GIF"}`, want: []string{"no matches", "1 binary files skipped"}},
		{name: "large skipped", tool: "filesystem.search", args: `{"pattern":"xxx"}`, want: []string{"1 files over 65536 bytes"}},
		{name: "bad names counted", tool: "filesystem.search", args: `{"pattern":"badly"}`, want: []string{"no matches", "1 files with names that are not UTF-8"}},
		{name: "no match", tool: "filesystem.search", args: `{"pattern":"zebra"}`, want: []string{"[no matches;"}},
		{name: "nothing to search for", tool: "filesystem.search", args: `{}`, code: plugin.CodeInvalidRequest},
		{name: "bad regex", tool: "filesystem.search", args: `{"pattern":"(","regex":true}`, code: plugin.CodeInvalidRequest, want: []string{"regular expression"}},
		{name: "bad glob", tool: "filesystem.search", args: `{"name":"{a"}`, code: plugin.CodeInvalidRequest},
		{name: "missing dir", tool: "filesystem.search", args: `{"path":"nope","pattern":"x"}`, code: plugin.CodeFileNotFound},
	}
	cases = append(cases, hostile("filesystem.search", map[string]any{"pattern": "needle"})...)
	runChecks(t, h, probe, cases)
}

// artifact returns the text of the named artifact of a result.
func artifact(t *testing.T, h *plugin.Host, res *plugin.Result, name string) string {
	t.Helper()
	for _, a := range res.Artifacts {
		if a.Name == name {
			_, rc, err := h.Artifact(context.Background(), a.ID)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			b, err := io.ReadAll(rc)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
	}
	t.Fatalf("no artifact %q in %+v", name, res.Artifacts)
	return ""
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFilesystemWrite(t *testing.T) {
	ws, outside := fixture(t)
	h := newHost(t, fsSpec("filesystem.write", ws, nil))

	res, err := invoke(t, h, "filesystem.write", `{"path":"new/dir/a.txt","content":"one\ntwo\n"}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.TextContent(); got != "Wrote 8 bytes to new/dir/a.txt (new file)" {
		t.Errorf("text = %q", got)
	}
	if got := readFile(t, filepath.Join(ws, "new/dir/a.txt")); got != "one\ntwo\n" {
		t.Errorf("file = %q", got)
	}
	if d := artifact(t, h, res, "new_dir_a.txt.diff"); d != "--- /dev/null\n+++ b/new/dir/a.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n" {
		t.Errorf("diff = %q", d)
	}

	res, err = invoke(t, h, "filesystem.write", `{"path":"new/dir/a.txt","content":"one\n2\n"}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.TextContent(); got != "Wrote 6 bytes to new/dir/a.txt (+1 -1 lines; the diff is kept as an artifact)" {
		t.Errorf("text = %q", got)
	}
	if d := artifact(t, h, res, "new_dir_a.txt.diff"); d != "--- a/new/dir/a.txt\n+++ b/new/dir/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n" {
		t.Errorf("diff = %q", d)
	}
	// No temporary file is left behind.
	entries, _ := os.ReadDir(filepath.Join(ws, "new/dir"))
	if len(entries) != 1 {
		t.Errorf("new/dir holds %d entries, want 1", len(entries))
	}

	probe := check{tool: "filesystem.write", args: `{"path":"probe.txt","content":"ok"}`, want: []string{"Wrote 2 bytes"}}
	cases := []check{
		{name: "unchanged", tool: "filesystem.write", args: `{"path":"hello.txt","content":"hello\nworld\n"}`, want: []string{"(content unchanged)"}},
		{name: "no create_directories", tool: "filesystem.write", args: `{"path":"nodir/x.txt","content":"x","create_directories":false}`,
			code: plugin.CodeFileNotFound, want: []string{"create_directories"}},
		{name: "onto a directory", tool: "filesystem.write", args: `{"path":"src","content":"x"}`, code: plugin.CodeInvalidRequest},
		{name: "the mount itself", tool: "filesystem.write", args: `{"path":".","content":"x"}`, code: plugin.CodeInvalidRequest},
		{name: "content missing", tool: "filesystem.write", args: `{"path":"x.txt"}`, code: plugin.CodeInvalidRequest},
		{name: "symlink inside", tool: "filesystem.write", args: `{"path":"link.txt","content":"x"}`, code: plugin.CodeInvalidRequest, want: []string{"symbolic link"}},
	}
	cases = append(cases, hostile("filesystem.write", map[string]any{"content": "pwned"})...)
	runChecks(t, h, probe, cases)
	if got := readFile(t, filepath.Join(outside, "secret.txt")); got != "needle: top secret\n" {
		t.Fatalf("a file outside the mount changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(ws), "pwned")); err == nil {
		t.Fatal("a file was created outside the mount")
	}
}

func TestFilesystemWriteReadOnlyMount(t *testing.T) {
	ws, _ := fixture(t)
	spec := fsSpec("filesystem.write", ws, nil)
	spec.Capabilities.Mounts[0].ReadOnly = true
	h := newHost(t, spec)
	_, err := invoke(t, h, "filesystem.write", `{"path":"hello.txt","content":"x"}`)
	if plugin.CodeOf(err) != plugin.CodePermissionDenied {
		t.Fatalf("err = %v, want PERMISSION_DENIED", err)
	}
	if got := readFile(t, filepath.Join(ws, "hello.txt")); got != "hello\nworld\n" {
		t.Fatalf("file changed: %q", got)
	}
}

func TestFilesystemEdit(t *testing.T) {
	ws, _ := fixture(t)
	writeFiles(t, ws, map[string]string{"code.go": "a := 1\nb := 2\na := 1\nc := 3\n"})
	h := newHost(t, fsSpec("filesystem.edit", ws, map[string]string{"max_file_size": "64KiB"}))

	res, err := invoke(t, h, "filesystem.edit", `{"path":"code.go","old":"b := 2","new":"b := 20"}`)
	if err != nil {
		t.Fatal(err)
	}
	want := "Edited code.go (+1 -1 lines)\n\n--- a/code.go\n+++ b/code.go\n@@ -1,4 +1,4 @@\n a := 1\n-b := 2\n+b := 20\n a := 1\n c := 3\n"
	if got := res.TextContent(); got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	if got := artifact(t, h, res, "code.go.diff"); !strings.Contains(want, got) {
		t.Errorf("artifact = %q", got)
	}
	if got := readFile(t, filepath.Join(ws, "code.go")); got != "a := 1\nb := 20\na := 1\nc := 3\n" {
		t.Errorf("file = %q", got)
	}

	cases := []check{
		{name: "several matches", tool: "filesystem.edit", args: `{"path":"code.go","old":"a := 1","new":"x"}`,
			code: plugin.CodeInvalidRequest, want: []string{"occurs 2 times", "at lines 1, 3"}},
		{name: "no match", tool: "filesystem.edit", args: `{"path":"code.go","old":"zzz","new":"x"}`, code: plugin.CodeInvalidRequest, want: []string{"0 matches"}},
		{name: "whitespace hint", tool: "filesystem.edit", args: `{"path":"code.go","old":"b  :=  20","new":"x"}`, code: plugin.CodeInvalidRequest, want: []string{"different whitespace"}},
		{name: "same text", tool: "filesystem.edit", args: `{"path":"code.go","old":"c","new":"c"}`, code: plugin.CodeInvalidRequest},
		{name: "empty old", tool: "filesystem.edit", args: `{"path":"code.go","old":"","new":"x"}`, code: plugin.CodeInvalidRequest},
		{name: "missing file", tool: "filesystem.edit", args: `{"path":"nope.go","old":"a","new":"b"}`, code: plugin.CodeFileNotFound},
		{name: "binary", tool: "filesystem.edit", args: `{"path":"bin.dat","old":"GIF","new":"PNG"}`, code: plugin.CodeInvalidRequest},
		{name: "too large", tool: "filesystem.edit", args: `{"path":"big.txt","old":"x","new":"y"}`, code: plugin.CodeFileTooLarge},
		{name: "directory", tool: "filesystem.edit", args: `{"path":"src","old":"x","new":"y"}`, code: plugin.CodeInvalidRequest},
		{name: "symlink inside", tool: "filesystem.edit", args: `{"path":"link.txt","old":"hello","new":"bye"}`, code: plugin.CodeInvalidRequest, want: []string{"symbolic link (to hello.txt)"}},
	}
	cases = append(cases, hostile("filesystem.edit", map[string]any{"old": "needle", "new": "pwned"})...)
	runChecks(t, h, check{tool: "filesystem.edit", args: `{"path":"code.go","old":"c := 3","new":"c := 4"}`, want: []string{"Edited code.go"}}, cases[:1])
	// Every later probe flips the line back and forth.
	for i, c := range cases[1:] {
		old, new := "c := 4", "c := 3"
		if i%2 == 1 {
			old, new = new, old
		}
		runChecks(t, h, check{tool: "filesystem.edit", args: jsonArgs(t, map[string]string{"path": "code.go", "old": old, "new": new}), want: []string{"Edited code.go"}}, []check{c})
	}
}

func TestFilesystemDelete(t *testing.T) {
	ws, outside := fixture(t)
	h := newHost(t, fsSpec("filesystem.delete", ws, nil))
	if got := mustText(t, h, "filesystem.delete", `{"path":"docs/guide.md"}`); got != "Deleted docs/guide.md" {
		t.Errorf("text = %q", got)
	}
	if _, err := os.Stat(filepath.Join(ws, "docs/guide.md")); err == nil {
		t.Error("file still there")
	}
	// Deleting a link removes the link, not what it points at.
	mustText(t, h, "filesystem.delete", `{"path":"link.txt"}`)
	if got := readFile(t, filepath.Join(ws, "hello.txt")); got != "hello\nworld\n" {
		t.Errorf("link target changed: %q", got)
	}
	for i := range 40 {
		writeFiles(t, ws, map[string]string{fmt.Sprintf("probe%d.txt", i): "x"})
	}
	n := 0
	next := func() check {
		n++
		return check{tool: "filesystem.delete", args: fmt.Sprintf(`{"path":"probe%d.txt"}`, n), want: []string{"Deleted"}}
	}
	cases := []check{
		{name: "directory refused", tool: "filesystem.delete", args: `{"path":"src"}`, code: plugin.CodeInvalidRequest, want: []string{"directory"}},
		{name: "missing", tool: "filesystem.delete", args: `{"path":"nope.txt"}`, code: plugin.CodeFileNotFound},
		{name: "the mount", tool: "filesystem.delete", args: `{"path":"."}`, code: plugin.CodeInvalidRequest},
	}
	cases = append(cases, hostile("filesystem.delete", nil)...)
	for _, c := range cases {
		if c.name == "symlink out" {
			continue // deleting the link itself is allowed; its target stays
		}
		runChecks(t, h, next(), []check{c})
	}
	if got := readFile(t, filepath.Join(outside, "secret.txt")); got != "needle: top secret\n" {
		t.Fatalf("a file outside the mount changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(ws, "src")); err != nil {
		t.Fatalf("directory gone: %v", err)
	}
}

// TestFilesystemSearchBigDirectory lists a directory whose entries do not
// fit one WASI readdir buffer.
func TestFilesystemSearchBigDirectory(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("n", 150)
	for i := range 3000 {
		writeFiles(t, dir, map[string]string{fmt.Sprintf("big/%s%04d.txt", long, i): "x\n"})
	}
	h := newHost(t, fsSpec("filesystem.search", dir, nil))
	if got := mustText(t, h, "filesystem.search", `{"pattern":"zebra"}`); got != "[no matches; 3000 files searched]" {
		t.Fatalf("got %q", got)
	}
	if got := mustText(t, h, "filesystem.search", `{"name":"*2999.txt"}`); !strings.HasSuffix(got, "2999.txt\n[1 files]") {
		t.Fatalf("got %q", got)
	}
}

// TestFilesystemSearchInBatches: the host reads a search's files while the
// walk goes on (toolhost_fs_submit), and the results are those, in the
// order, of a walk that reads each file when it meets it. Files over what
// the host reads in one batch are read by the guest; a FIFO does not hold
// the search up; binary files are told by a NUL in their first 8 KiB only.
func TestFilesystemSearchInBatches(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a.txt":         "needle a\n",
		"m/x.txt":       "needle m/x\n",
		"m/z/deep.txt":  "one\nneedle deep\n",
		"n.txt":         "needle n\n",
		"z/y.txt":       "no\nno\nneedle z/y\n",
		"large.txt":     strings.Repeat("filler line\n", 150<<10) + "the needle at the end\n",
		"nul-late.txt":  "needle before\n" + strings.Repeat("x", 9<<10) + "\x00 binary only after 8 KiB\n",
		"nul-early.txt": "needle before a NUL\n\x00",
	}
	for i := range 300 {
		files[fmt.Sprintf("many/f%03d.txt", i)] = fmt.Sprintf("line\nneedle %d\n", i)
	}
	writeFiles(t, dir, files)
	if err := syscall.Mkfifo(filepath.Join(dir, "m", "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHost(t, fsSpec("filesystem.search", dir, nil))
	got := mustText(t, h, "filesystem.search", `{"pattern":"needle","max_results":1000}`)
	var want strings.Builder
	want.WriteString("a.txt:1:1: needle a\n")
	fmt.Fprintf(&want, "large.txt:%d:5: the needle at the end\n", 150<<10+1)
	want.WriteString("m/x.txt:1:1: needle m/x\n")
	want.WriteString("m/z/deep.txt:2:1: needle deep\n")
	for i := range 300 {
		fmt.Fprintf(&want, "many/f%03d.txt:2:1: needle %d\n", i, i)
	}
	want.WriteString("n.txt:1:1: needle n\n")
	want.WriteString("nul-late.txt:1:1: needle before\n")
	want.WriteString("z/y.txt:3:1: needle z/y\n")
	want.WriteString("[307 matching lines; 307 files searched; 1 binary files skipped]")
	if got != want.String() {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want.String())
	}
	got = mustText(t, h, "filesystem.search", `{"pattern":"needle","path":"many","max_results":3}`)
	if want := "many/f000.txt:2:1: needle 0\nmany/f001.txt:2:1: needle 1\nmany/f002.txt:2:1: needle 2\n[stopped after 3 matching lines (max_results); narrow the search to see the rest; 3 files searched]"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestFilesystemSearchCaseInsensitive: a case-insensitive search matches
// as Go's (?i) does, KELVIN SIGN and LONG S included, and one over 16 MiB
// of text finishes within its fuel, as does a regular expression with a
// literal every match holds (the host drops the files that cannot match
// before the guest's expression sees them).
func TestFilesystemSearchCaseInsensitive(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a.txt": "The KELVIN scale\n",
		"b.txt": "in \u212aelvin\n",
		"c.txt": "kelvi n\n",
		"d.txt": "pas\u017f and PASS\n",
	}
	line := strings.Repeat("lorem ipsum dolor sit amet ", 3) + "\n"
	for i := range 2000 {
		files[fmt.Sprintf("bulk/f%04d.txt", i)] = strings.Repeat(line, 8<<10/len(line))
	}
	writeFiles(t, dir, files)
	h := newHost(t, fsSpec("filesystem.search", dir, nil))
	got := mustText(t, h, "filesystem.search", `{"pattern":"kelvin","case_sensitive":false}`)
	if want := "a.txt:1:5: The KELVIN scale\nb.txt:1:4: in \u212aelvin\n[2 matching lines; 2004 files searched]"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	got = mustText(t, h, "filesystem.search", `{"pattern":"pass","case_sensitive":false}`)
	if want := "d.txt:1:1: pas\u017f and PASS\n[1 matching lines; 2004 files searched]"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	// A regular expression: the host drops the files without "kel",
	// which every match holds.
	got = mustText(t, h, "filesystem.search", `{"pattern":"\\bkel\\w+","regex":true}`)
	if want := "c.txt:1:1: kelvi n\n[1 matching lines; 2004 files searched]"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestListLargeDirectory: a directory whose entries fill the guest's
// readdir buffer many times over (it starts small and grows) is listed
// whole, sorted, each entry once.
func TestListLargeDirectory(t *testing.T) {
	ws := t.TempDir()
	const n = 2500
	pad := strings.Repeat("n", 60)
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("big/%s%04d", pad, i)] = ""
	}
	writeFiles(t, ws, files)
	spec := fsSpec("filesystem.list", ws, map[string]string{"max_entries": "5000"})
	spec.Limits.Preview = 1 << 20 // the whole listing, not a preview
	h := newHost(t, spec)
	lines := strings.Split(mustText(t, h, "filesystem.list", `{"path":"big"}`), "\n")
	if len(lines) != n {
		t.Fatalf("%d lines; want %d", len(lines), n)
	}
	for i, l := range lines {
		if want := fmt.Sprintf("file big/%s%04d", pad, i); l != want {
			t.Fatalf("line %d: %q; want %q", i, l, want)
		}
	}
}

// TestFilesystemSchemasFlat: the input schemas the module declares for its
// read-only tools are flat (plugin/flatschema.go), so the pipeline accepts
// their usual arguments without decoding them: validation allocates
// nothing. Wrong arguments still get the full validator's message.
func TestFilesystemSchemasFlat(t *testing.T) {
	ws := t.TempDir()
	h := newHost(t, fsSpec("filesystem.read", ws, nil), fsSpec("filesystem.list", ws, nil))
	for _, c := range []struct{ tool, args, bad, problem string }{
		{"filesystem.read", `{"path":"file4k.txt","offset":1,"limit":100,"encoding":"utf-8"}`, `{"path":""}`, "path"},
		{"filesystem.list", `{"path":"dir","depth":2,"glob":"*.go","details":true}`, `{"depth":0}`, "depth"},
	} {
		info, ok := h.Tool(c.tool)
		if !ok {
			t.Fatalf("%s not loaded", c.tool)
		}
		s, err := plugin.CompileSchema(info.Descriptor.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		args := []byte(c.args)
		if err := s.ValidateJSON(args); err != nil {
			t.Fatalf("%s %s: %v", c.tool, c.args, err)
		}
		if n := testing.AllocsPerRun(100, func() { s.ValidateJSON(args) }); n != 0 {
			t.Errorf("%s: validating %s allocates %v times: the schema is not flat", c.tool, c.args, n)
		}
		if err := s.ValidateJSON([]byte(c.bad)); err == nil || !strings.Contains(err.Error(), c.problem) {
			t.Errorf("%s %s: %v, want a problem with %s", c.tool, c.bad, err, c.problem)
		}
	}
}
