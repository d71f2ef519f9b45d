// Package match matches slash-separated paths against glob patterns and
// .gitignore rules, for the built-in file tools.
//
// Glob syntax: "*" matches any run of characters within one path element,
// "?" one character, "[a-z]" a class (as path.Match), "**" as a whole
// element any number of elements (zero included), and "{a,b}" either
// alternative. A pattern without "/" is matched against the last element
// (the file name) at any depth; a pattern with "/" against the whole
// relative path.
package match

import (
	"fmt"
	"path"
	"strings"
)

// maxAlternatives bounds brace expansion.
const maxAlternatives = 256

// Glob is a compiled glob pattern.
type Glob struct {
	alts     [][]elem // each alternative, split into elements
	baseOnly bool
}

// elem is one compiled pattern element. The common shapes ("*.go",
// "Makefile", "test_*", "*_test*") are string comparisons; the rest goes
// to path.Match, which a search calls for every file it walks.
type elem struct {
	pat  string
	kind elemKind
	lit  string // the pattern without its stars, for the simple kinds
}

type elemKind uint8

const (
	general    elemKind = iota // path.Match
	doubleStar                 // "**": any number of elements
	exact                      // no wildcard
	prefix                     // "lit*"
	suffix                     // "*lit"
	contains                   // "*lit*"
)

func compileElem(el string) elem {
	e := elem{pat: el}
	if el == "**" {
		e.kind = doubleStar
		return e
	}
	inner := strings.TrimSuffix(strings.TrimPrefix(el, "*"), "*")
	if strings.ContainsAny(inner, "*?[\\") {
		return e
	}
	lead, trail := strings.HasPrefix(el, "*"), len(el) > 1 && strings.HasSuffix(el, "*")
	e.lit = inner
	switch {
	case lead && trail:
		e.kind = contains
	case lead:
		e.kind = suffix
	case trail:
		e.kind = prefix
	default:
		e.kind = exact
	}
	return e
}

// match matches one path element (not for doubleStar).
func (e *elem) match(name string) bool {
	switch e.kind {
	case exact:
		return name == e.lit
	case prefix:
		return strings.HasPrefix(name, e.lit)
	case suffix:
		return strings.HasSuffix(name, e.lit)
	case contains:
		return strings.Contains(name, e.lit)
	}
	ok, _ := path.Match(e.pat, name)
	return ok
}

// Compile checks and compiles a glob pattern.
func Compile(pattern string) (*Glob, error) {
	if pattern == "" {
		return nil, fmt.Errorf("empty glob pattern")
	}
	alts, err := expandBraces(pattern)
	if err != nil {
		return nil, err
	}
	g := &Glob{baseOnly: !strings.Contains(pattern, "/")}
	for _, a := range alts {
		a = strings.TrimPrefix(a, "./")
		a = strings.TrimPrefix(a, "/")
		var els []elem
		for _, el := range strings.Split(a, "/") {
			if el != "**" {
				if _, err := path.Match(el, ""); err != nil {
					return nil, fmt.Errorf("glob %q: bad pattern element %q", pattern, el)
				}
			}
			els = append(els, compileElem(el))
		}
		g.alts = append(g.alts, els)
	}
	return g, nil
}

// BaseOnly reports whether the pattern is matched against the last path
// element alone (it has no "/").
func (g *Glob) BaseOnly() bool { return g.baseOnly }

// Match reports whether the slash-separated relative path p matches.
func (g *Glob) Match(p string) bool {
	if g.baseOnly {
		p = path.Base(p)
		simple := true
		for i := range g.alts {
			a := g.alts[i]
			if len(a) != 1 || a[0].kind == doubleStar {
				simple = false
			} else if a[0].match(p) {
				return true
			}
		}
		if simple {
			return false
		}
	}
	els := strings.Split(p, "/")
	for _, a := range g.alts {
		if matchElems(a, els) {
			return true
		}
	}
	return false
}

// matchElems matches pattern elements against path elements, "**"
// standing for any number of elements.
func matchElems(pat []elem, els []string) bool {
	for len(pat) > 0 {
		if pat[0].kind == doubleStar {
			rest := pat[1:]
			for i := 0; i <= len(els); i++ {
				if matchElems(rest, els[i:]) {
					return true
				}
			}
			return false
		}
		if len(els) == 0 {
			return false
		}
		if !pat[0].match(els[0]) {
			return false
		}
		pat, els = pat[1:], els[1:]
	}
	return len(els) == 0
}

// expandBraces expands {a,b} alternatives (not nested).
func expandBraces(p string) ([]string, error) {
	i := strings.IndexByte(p, '{')
	if i < 0 {
		if strings.IndexByte(p, '}') >= 0 {
			return nil, fmt.Errorf("glob %q: unmatched }", p)
		}
		return []string{p}, nil
	}
	j := strings.IndexByte(p[i:], '}')
	if j < 0 {
		return nil, fmt.Errorf("glob %q: unmatched {", p)
	}
	j += i
	if strings.IndexByte(p[i+1:j], '{') >= 0 {
		return nil, fmt.Errorf("glob %q: nested braces are not supported", p)
	}
	rest, err := expandBraces(p[j+1:])
	if err != nil {
		return nil, err
	}
	var out []string
	for _, alt := range strings.Split(p[i+1:j], ",") {
		for _, r := range rest {
			out = append(out, p[:i]+alt+r)
			if len(out) > maxAlternatives {
				return nil, fmt.Errorf("glob %q expands to more than %d alternatives", p, maxAlternatives)
			}
		}
	}
	return out, nil
}
