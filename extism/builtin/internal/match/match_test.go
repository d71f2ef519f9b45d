package match

import (
	"path"
	"strings"
	"testing"
)

func TestGlob(t *testing.T) {
	tests := []struct {
		pat, path string
		want      bool
	}{
		{"*.go", "main.go", true},
		{"*.go", "a/b/main.go", true},
		{"*.go", "main.goo", false},
		{"*.{go,md}", "docs/x.md", true},
		{"*.{go,md}", "docs/x.txt", false},
		{"docs/*.md", "docs/x.md", true},
		{"docs/*.md", "docs/a/x.md", false},
		{"docs/**/*.md", "docs/x.md", true},
		{"docs/**/*.md", "docs/a/b/x.md", true},
		{"**/test", "a/test", true},
		{"**", "a/b", true},
		{"?.txt", "a.txt", true},
		{"[ab].txt", "c.txt", false},
		{"/docs/*.md", "docs/x.md", true},
	}
	for _, tt := range tests {
		g, err := Compile(tt.pat)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tt.pat, err)
		}
		if got := g.Match(tt.path); got != tt.want {
			t.Errorf("%q.Match(%q) = %v, want %v", tt.pat, tt.path, got, tt.want)
		}
	}
	for _, bad := range []string{"", "[", "{a,b", "a}", "{a,{b}}", "{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}{o,p}{q,r}"} {
		if _, err := Compile(bad); err == nil {
			t.Errorf("Compile(%q) succeeded", bad)
		}
	}
}

func TestIgnore(t *testing.T) {
	var ig Ignore
	ig.Add("", "# comment\n*.log\n/build/\nnode_modules\n!keep.log\nsecret/*.txt\n\n")
	ig.Add("sub", "*.tmp\n!important.log\n")
	tests := []struct {
		path string
		dir  bool
		want bool
	}{
		{"a.log", false, true},
		{"x/a.log", false, true},
		{"keep.log", false, false},
		{"build", true, true},
		{"build", false, false},
		{"x/build", true, false},
		{"node_modules", true, true},
		{"x/node_modules", true, true},
		{"secret/a.txt", false, true},
		{"secret/b/a.txt", false, false},
		{"sub/a.tmp", false, true},
		{"a.tmp", false, false},
		{"sub/important.log", false, false},
		{"main.go", false, false},
	}
	for _, tt := range tests {
		if got := ig.Ignored(tt.path, tt.dir); got != tt.want {
			t.Errorf("Ignored(%q, %v) = %v, want %v", tt.path, tt.dir, got, tt.want)
		}
	}
	n := ig.Len()
	ig.Truncate(1)
	if ig.Ignored("sub/a.tmp", false) || n != 2 {
		t.Errorf("Truncate did not drop the sub rules")
	}
}

// FuzzGlob feeds arbitrary patterns and paths: Compile either refuses a
// pattern or returns a glob whose Match never panics, and a literal
// pattern always matches itself.
func FuzzGlob(f *testing.F) {
	f.Add("src/**/*.{go,md}", "src/a/b.go")
	f.Add("[a-", "x")
	f.Add("**", "")
	f.Fuzz(func(t *testing.T, pattern, p string) {
		g, err := Compile(pattern)
		if err != nil {
			return
		}
		g.Match(p)
		if !strings.ContainsAny(pattern, `*?[]{}\`) && !strings.HasPrefix(pattern, "/") && !strings.HasPrefix(pattern, "./") && !strings.Contains(pattern, "//") && !g.Match(pattern) {
			t.Fatalf("literal %q does not match itself", pattern)
		}
	})
}

// FuzzElem: a compiled pattern element matches what path.Match matches.
func FuzzElem(f *testing.F) {
	for _, c := range [][2]string{{"*.go", "main.go"}, {"*", ""}, {"a*", "abc"}, {"*b*", "abc"}, {"*\\*", "*"}, {"Makefile", "Makefile"}, {"*.", "."}, {"[a-z]*", "q"}} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, pat, name string) {
		if strings.Contains(pat, "/") || strings.Contains(name, "/") || pat == "**" {
			return
		}
		want, err := path.Match(pat, name)
		if err != nil {
			return
		}
		e := compileElem(pat)
		if got := e.match(name); got != want {
			t.Fatalf("%q (kind %d) on %q: %v, path.Match %v", pat, e.kind, name, got, want)
		}
	})
}

// FuzzIgnore feeds arbitrary .gitignore content and paths.
func FuzzIgnore(f *testing.F) {
	f.Add("*.log\n!keep.log\n/build/\n", "a/b.log", true)
	f.Fuzz(func(t *testing.T, content, p string, dir bool) {
		var ig Ignore
		ig.Add("", content)
		ig.Add("sub", content)
		ig.Ignored(p, dir)
	})
}
