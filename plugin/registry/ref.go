package registry

import (
	"fmt"
	"regexp"
	"strings"

	"golang.org/x/mod/semver"
)

var (
	idPattern      = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,38}/[a-z0-9][a-z0-9._-]{0,99}$`)
	versionPattern = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)
)

// Ref names a tool and the versions acceptable for it: "acme/ocr@1.2.0",
// "acme/ocr@^1.2", "acme/ocr" (the newest release).
type Ref struct {
	ID         string
	Constraint Constraint
}

// String is the reference as written.
func (r Ref) String() string {
	if r.Constraint.text == "" {
		return r.ID
	}
	return r.ID + "@" + r.Constraint.text
}

// ParseRef reads id[@constraint].
func ParseRef(s string) (Ref, error) {
	id, c, _ := strings.Cut(s, "@")
	if !idPattern.MatchString(id) {
		return Ref{}, fmt.Errorf("tool reference %q: the id must be publisher/name in lower case (for example \"acme/ocr\")", s)
	}
	con, err := ParseConstraint(c)
	if err != nil {
		return Ref{}, fmt.Errorf("tool reference %q: %w", s, err)
	}
	return Ref{ID: id, Constraint: con}, nil
}

// Constraint is a set of acceptable versions: an exact version ("1.2.0",
// the only way to pick a pre-release), "^1.2" (>= 1.2.0, < 2.0.0; for 0.x,
// < 0.(x+1).0), "~1.2.3" (>= 1.2.3, < 1.3.0), comparisons (">=1.2.0 <1.5.0",
// space- or comma-separated, all must hold), or empty / "*" / "latest"
// for any release.
type Constraint struct {
	text  string
	exact string        // set for an exact version
	terms []versionTerm // all must hold
}

type versionTerm struct {
	op string // ">=", ">", "<=", "<", "="
	v  string // canonical semver with a leading v
}

// String is the constraint as written.
func (c Constraint) String() string { return c.text }

// ParseConstraint reads a version constraint.
func ParseConstraint(s string) (Constraint, error) {
	s = strings.TrimSpace(s)
	c := Constraint{text: s}
	switch s {
	case "", "*", "latest":
		return c, nil
	}
	if versionPattern.MatchString(s) {
		c.exact = "v" + s
		return c, nil
	}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' }) {
		switch {
		case f[0] == '^' || f[0] == '~':
			lo, err := partial(f[1:])
			if err != nil {
				return Constraint{}, err
			}
			c.terms = append(c.terms, versionTerm{">=", lo}, versionTerm{"<", upper(f[0], f[1:], lo)})
		default:
			op := strings.TrimRight(f[:min(2, len(f))], "0123456789.")
			if op == "" {
				op = "="
			}
			switch op {
			case ">=", "<=", ">", "<", "=":
			default:
				return Constraint{}, fmt.Errorf("version constraint %q: %q is not ^X, ~X, >=X, >X, <=X, <X or an exact version", s, f)
			}
			written := strings.TrimPrefix(f, op)
			v, err := partial(written)
			if err != nil {
				return Constraint{}, err
			}
			if op == "=" && strings.Count(written, ".") < 2 {
				// "1.2" is 1.2.x, "1" is 1.x.x, as npm reads them.
				c.terms = append(c.terms, versionTerm{">=", v}, versionTerm{"<", upper('~', written, v)})
				continue
			}
			c.terms = append(c.terms, versionTerm{op, v})
		}
	}
	if len(c.terms) == 0 {
		return Constraint{}, fmt.Errorf("version constraint %q is empty", s)
	}
	return c, nil
}

// partial reads "1", "1.2" or "1.2.3" (no pre-release) as a canonical
// version with missing parts zero.
func partial(s string) (string, error) {
	parts := strings.Split(s, ".")
	if len(parts) > 3 || s == "" {
		return "", fmt.Errorf("version %q: want MAJOR[.MINOR[.PATCH]]", s)
	}
	for len(parts) < 3 {
		parts = append(parts, "0")
	}
	v := strings.Join(parts, ".")
	if !versionPattern.MatchString(v) || strings.ContainsAny(v, "-+") {
		return "", fmt.Errorf("version %q: want MAJOR[.MINOR[.PATCH]] in digits", s)
	}
	return "v" + v, nil
}

// upper is the exclusive upper bound of ^X or ~X.
func upper(op byte, written, lo string) string {
	major, minor, patch := semverParts(lo)
	n := strings.Count(written, ".") + 1 // parts written
	switch {
	case op == '~' && n >= 2:
		return fmt.Sprintf("v%d.%d.0", major, minor+1)
	case op == '~':
		return fmt.Sprintf("v%d.0.0", major+1)
	case major > 0 || n == 1:
		return fmt.Sprintf("v%d.0.0", major+1)
	case minor > 0 || n == 2:
		return fmt.Sprintf("v0.%d.0", minor+1)
	default:
		return fmt.Sprintf("v0.0.%d", patch+1)
	}
}

func semverParts(v string) (major, minor, patch int) {
	fmt.Sscanf(strings.TrimPrefix(semver.Canonical(v), "v"), "%d.%d.%d", &major, &minor, &patch)
	return
}

// Allows reports whether version (without a leading v) meets the
// constraint. Pre-releases meet only an exact constraint naming them.
func (c Constraint) Allows(version string) bool {
	if !versionPattern.MatchString(version) {
		return false
	}
	v := "v" + version
	if c.exact != "" {
		return semver.Compare(v, c.exact) == 0
	}
	if semver.Prerelease(v) != "" {
		return false
	}
	for _, t := range c.terms {
		cmp := semver.Compare(v, t.v)
		ok := false
		switch t.op {
		case ">=":
			ok = cmp >= 0
		case ">":
			ok = cmp > 0
		case "<=":
			ok = cmp <= 0
		case "<":
			ok = cmp < 0
		case "=":
			ok = cmp == 0
		}
		if !ok {
			return false
		}
	}
	return true
}

// Best returns the newest of versions the constraint allows, or false.
func (c Constraint) Best(versions []string) (string, bool) {
	best := ""
	for _, v := range versions {
		if c.Allows(v) && (best == "" || semver.Compare("v"+v, "v"+best) > 0) {
			best = v
		}
	}
	return best, best != ""
}

// compareVersions orders two semantic versions (without the "v").
func compareVersions(a, b string) int { return semver.Compare("v"+a, "v"+b) }
