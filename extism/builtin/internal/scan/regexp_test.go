package scan

import (
	"regexp"
	"strings"
	"testing"
)

func TestRequiredLiteral(t *testing.T) {
	for _, c := range []struct {
		expr, lit string
		fold      bool
	}{
		{"(?m)foo", "foo", false},
		{"(?m)\\w+Error", "Error", false},
		{"(?i)(?m)needle", "needle", true},
		{"(?m)foo.*barbaz", "barbaz", false},
		{"(?m)(abc)+x", "abc", false},
		{"(?m)a{2,}", "a", false}, // simplified to aa+: two literals of one a
		{"(?m)foo|bar", "", false},
		{"(?m)(foo)?bar", "bar", false},
		{"(?m)x*", "", false},
		{"(?m)[a-z]+", "", false},
		{"(?m)^func \\w+", "func ", false},
		{"(?m)(", "", false},
	} {
		lit, fold := RequiredLiteral(c.expr)
		if fold {
			lit = strings.ToLower(lit) // the parser keeps one case of its choosing
		}
		if lit != c.lit || fold != c.fold {
			t.Errorf("RequiredLiteral(%q) = %q, %v; want %q, %v", c.expr, lit, fold, c.lit, c.fold)
		}
	}
}

// FuzzRequiredLiteral: whatever an expression matches holds its required
// literal (in either case, for a folded one: Unicode folding can also make
// KELVIN SIGN a k and LONG S an s).
func FuzzRequiredLiteral(f *testing.F) {
	f.Add("(?i)ab+c", "xABBBCx")
	f.Add("foo(bar)+", "foobarbar")
	f.Add("a{2,3}b", "aab")
	f.Fuzz(func(t *testing.T, expr, s string) {
		re, err := regexp.Compile(expr)
		if err != nil {
			return
		}
		lit, fold := RequiredLiteral(expr)
		m := re.FindString(s)
		if m == "" && !re.MatchString(s) {
			return
		}
		if lit == "" {
			return
		}
		if !fold && !strings.Contains(m, lit) {
			t.Fatalf("%q matches %q without %q", expr, m, lit)
		}
		if fold && !strings.Contains(strings.ToLower(m), strings.ToLower(lit)) && !strings.ContainsAny(m, "\u212a\u017f") {
			t.Fatalf("%q matches %q without %q in either case", expr, m, lit)
		}
	})
}
