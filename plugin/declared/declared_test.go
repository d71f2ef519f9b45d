package declared_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/plugin/declared"
)

func TestParseText(t *testing.T) {
	args := map[string]string{"a": "A", "b_2": "B", "x-y": "XY"}
	for _, tc := range []struct {
		in, want     string
		placeholders string
	}{
		{"plain", "plain", ""},
		{"{{a}} and {{ b_2 }}", "A and B", "a,b_2"},
		{"{{a}}{{a}}{{x-y}}", "AAXY", "a,x-y"},
		{"{{missing}}", "", "missing"},
		{`{"json": {{a}}}`, `{"json": A}`, "a"},
		{"{{ not one }} {{1a}} {{}} {{a", "{{ not one }} {{1a}} {{}} {{a", ""},
		{"{{{a}}}", "{A}", "a"},
		{"", "", ""},
	} {
		txt := declared.ParseText(tc.in)
		if got := txt.Expand(args); got != tc.want {
			t.Errorf("ParseText(%q).Expand = %q, want %q", tc.in, got, tc.want)
		}
		if got := strings.Join(txt.Placeholders(), ","); got != tc.placeholders {
			t.Errorf("ParseText(%q).Placeholders = %q, want %q", tc.in, got, tc.placeholders)
		}
	}
	// A value is data: its own {{...}} is never expanded.
	if got := declared.ParseText("{{a}}").Expand(map[string]string{"a": "{{b}}", "b": "no"}); got != "{{b}}" {
		t.Errorf("a value was expanded again: %q", got)
	}
	if got := declared.Literal("{{a}}").Expand(args); got != "{{a}}" {
		t.Errorf("Literal expanded: %q", got)
	}
}

func TestURITemplate(t *testing.T) {
	for _, bad := range []string{"", "no-scheme/{id}", "{id}://x", "x://{+id}", "x://{id", "x://id}", "x://{a}{b}", "x://{a}/{a}", "x://{}", "x://a b/{id}", "x://{a,b}", "x://a%zz/{id}", "x://a%2"} {
		if _, err := declared.ParseURITemplate(bad); err == nil {
			t.Errorf("ParseURITemplate(%q) accepted", bad)
		}
	}
	u, err := declared.ParseURITemplate("test://template/{id}/data")
	if err != nil {
		t.Fatal(err)
	}
	if u.String() != "test://template/{id}/data" || strings.Join(u.Variables(), ",") != "id" {
		t.Errorf("%q %v", u, u.Variables())
	}
	for uri, want := range map[string]string{
		"test://template/123/data":     "123",
		"test://template/a%2Fb/data":   "a/b",
		"test://template/a.b~c-d/data": "a.b~c-d",
		"test://template//data":        "",
		"test://template/a/b/data":     "",
		"test://template/123/data/x":   "",
		"test://template/%zz/data":     "",
		"test://template/a b/data":     "",
		"other://template/1/data":      "",
	} {
		vars, ok := u.Match(uri)
		if ok != (want != "") || vars["id"] != want {
			t.Errorf("Match(%q) = %v %v, want %q", uri, vars, ok, want)
		}
	}
	dot, _ := declared.ParseURITemplate("x://{a}.{b}")
	if vars, ok := dot.Match("x://1.2.3"); !ok || vars["a"] != "1.2" || vars["b"] != "3" {
		t.Errorf("ambiguous split: %v %v", vars, ok)
	}
	if got := u.Expand(map[string]string{"id": "a/b c"}); got != "test://template/a%2Fb%20c/data" {
		t.Errorf("Expand = %q", got)
	}
	var zero declared.URITemplate
	if _, ok := zero.Match("x://"); ok {
		t.Error("the zero template matched")
	}
}

func TestValidName(t *testing.T) {
	for s, want := range map[string]bool{"a": true, "_x-1": true, "arg1": true, "": false, "1a": false, "-a": false, "a b": false, "a}}{{b": false, "é": false} {
		if declared.ValidName(s) != want {
			t.Errorf("ValidName(%q) = %v", s, !want)
		}
	}
}

// ReadFile reads only inside its root and only up to its cap.
func TestReadFile(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(outside, []byte("secret"), 0o600)
	os.WriteFile(filepath.Join(root, "ok.txt"), []byte("12345"), 0o600)
	os.Symlink(outside, filepath.Join(root, "link"))
	if b, err := declared.ReadFile(root, filepath.Join(root, "ok.txt"), 5); err != nil || string(b) != "12345" {
		t.Errorf("ok.txt: %q %v", b, err)
	}
	if _, err := declared.ReadFile(root, filepath.Join(root, "ok.txt"), 4); !errors.Is(err, declared.ErrTooLarge) {
		t.Errorf("over the cap: %v", err)
	}
	if _, err := declared.ReadFile(root, outside, 100); !errors.Is(err, declared.ErrOutside) {
		t.Errorf("outside: %v", err)
	}
	if b, err := declared.ReadFile(root, filepath.Join(root, "link"), 100); err == nil {
		t.Errorf("a symlink out was followed: %q", b)
	}
}

// FileType refuses what ReadFile refuses and says what MIMEType says of
// the whole file, having read at most its first 512 bytes.
func TestFileType(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret.txt")
	os.WriteFile(outside, []byte("secret"), 0o600)
	os.Symlink(outside, filepath.Join(root, "link.txt"))
	for name, data := range map[string][]byte{
		"notes.txt":    []byte("hello"),
		"page.unknown": []byte("<!DOCTYPE html><p>" + strings.Repeat("x", 600)),
		"late.unknown": []byte(strings.Repeat("a", 600) + "\x00"), // text in the first 512 bytes
		"bin.unknown":  {0, 1, 2, 0xff},
		"empty":        nil,
	} {
		p := filepath.Join(root, name)
		os.WriteFile(p, data, 0o600)
		got, err := declared.FileType(root, p, 1000)
		if want := declared.MIMEType(p, data); err != nil || got != want {
			t.Errorf("FileType(%s) = %q %v, want %q", name, got, err, want)
		}
	}
	if _, err := declared.FileType(root, filepath.Join(root, "notes.txt"), 4); !errors.Is(err, declared.ErrTooLarge) {
		t.Errorf("over the cap: %v", err)
	}
	if _, err := declared.FileType(root, outside, 100); !errors.Is(err, declared.ErrOutside) {
		t.Errorf("outside: %v", err)
	}
	if typ, err := declared.FileType(root, filepath.Join(root, "link.txt"), 100); err == nil {
		t.Errorf("a symlink out was followed: %q", typ)
	}
	if _, err := declared.FileType(root, root, 100); err == nil {
		t.Error("a directory has a type")
	}
}

func TestTextOrBlob(t *testing.T) {
	if text, blob := declared.TextOrBlob("application/json", []byte(`{}`)); text != "{}" || blob != nil {
		t.Error("JSON is text")
	}
	if _, blob := declared.TextOrBlob("text/plain", []byte{0xff, 0xfe}); blob == nil {
		t.Error("invalid UTF-8 is a blob")
	}
	if _, blob := declared.TextOrBlob("image/png", []byte("PNG")); blob == nil {
		t.Error("a PNG is a blob")
	}
}

// Whatever text and values, expansion is one pass: the result is the
// text's literal parts with the values between them, and a value is never
// read as a placeholder.
func FuzzText(f *testing.F) {
	f.Add("Hello {{name}}!", "{{name}}")
	f.Add("{{a}}{{ b }}{{", "}}{{a}}")
	f.Add("{{{{x}}}}", "x")
	f.Fuzz(func(t *testing.T, text, value string) {
		txt := declared.ParseText(text)
		args := map[string]string{}
		for _, p := range txt.Placeholders() {
			args[p] = value
		}
		got := txt.Expand(args)
		if n := txt.Len(args); n != len(got) {
			t.Fatalf("%q with %q: Len %d, expanded to %d bytes", text, value, n, len(got))
		}
		if n := txt.LenWith(args, func(s string) int { return len(s) }); n != len(got) {
			t.Errorf("LenWith(len) = %d, Expand is %d bytes", n, len(got))
		}
		if n, want := txt.LenWith(args, func(s string) int { return 2 * len(s) }), 2*len(got); n != want {
			t.Errorf("LenWith(2*len) = %d, want %d", n, want)
		}
		// Expanding with the placeholders as their own values gives the
		// text back; a value containing {{...}} shows up literally.
		self := map[string]string{}
		for _, p := range txt.Placeholders() {
			self[p] = "{{" + p + "}}"
		}
		if back := txt.Expand(self); !strings.Contains(text, "{{") && back != text {
			t.Fatalf("%q: expands to %q with its own placeholders", text, back)
		}
		if len(txt.Placeholders()) == 0 && got != text {
			t.Fatalf("%q without placeholders expanded to %q", text, got)
		}
	})
}

// A URI a client sends either does not match or matches with values that
// expand back to a URI matching with the same values.
func FuzzURITemplateMatch(f *testing.F) {
	f.Add("x://{a}/{b}.json", "x://1/2.json")
	f.Add("x://{a}.{b}", "x://1.2.3")
	f.Add("test://template/{id}/data", "test://template/%2F/data")
	f.Fuzz(func(t *testing.T, tmpl, uri string) {
		u, err := declared.ParseURITemplate(tmpl)
		if err != nil {
			return
		}
		vars, ok := u.Match(uri)
		if !ok {
			return
		}
		again, ok := u.Match(u.Expand(vars))
		if !ok {
			t.Fatalf("%q: %q matched with %v, but its re-expansion %q does not", tmpl, uri, vars, u.Expand(vars))
		}
		for k, v := range vars {
			if again[k] != v {
				t.Fatalf("%q: %q gives %s=%q, its re-expansion %q", tmpl, uri, k, v, again[k])
			}
		}
	})
}
