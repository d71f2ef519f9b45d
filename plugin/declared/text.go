package declared

// Text with {{name}} placeholders, and RFC 6570 level-1 URI templates.
// Both are parsed once into parts so that expansion is a single pass: what
// a client sends is data, never more template.

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// part is a literal or, when arg is set, a placeholder.
type part struct {
	lit string
	arg string
}

// Text is text with {{name}} placeholders, parsed by ParseText.
type Text struct {
	parts []part
}

// Literal returns a Text that expands to s whatever it contains.
func Literal(s string) Text {
	if s == "" {
		return Text{}
	}
	return Text{parts: []part{{lit: s}}}
}

// ParseText parses s: {{name}}, with optional spaces inside the braces and
// name a letter or underscore followed by letters, digits, '_' or '-', is a
// placeholder; every other character, a "{{" that does not open one
// included, is literal.
//
// It is one pass over s, however many "{{" it holds: trying each "{{"
// against the first "}}" after it afresh took time quadratic in the
// text's length (1 MiB of "{": 7.6 s; of "{" then spaces then "}}":
// 2m48s; now 60 us and 1.1 ms). parseTextSlow, in the tests, is that
// first version, which FuzzParseTextSlow holds ParseText to.
func ParseText(s string) Text {
	var t Text
	lit := 0  // start of the pending literal
	end := -1 // the first "}}" after the "{{" being tried
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], "{{")
		if j < 0 {
			break
		}
		j += i
		if end < j+2 {
			k := strings.Index(s[j+2:], "}}")
			if k < 0 {
				break // nothing from here on is closed
			}
			end = j + 2 + k
		}
		// Of the "{{" before end, all but the last have a '{' between
		// them and end, which no name holds: only the last can open a
		// placeholder.
		j += strings.LastIndex(s[j:end], "{{")
		name := strings.TrimSpace(s[j+2 : end])
		if !ValidName(name) {
			i = j + 1
			continue
		}
		if j > lit {
			t.parts = append(t.parts, part{lit: s[lit:j]})
		}
		t.parts = append(t.parts, part{arg: name})
		lit, i = end+2, end+2
	}
	if lit < len(s) {
		t.parts = append(t.parts, part{lit: s[lit:]})
	}
	return t
}

// ValidName reports whether s can be a placeholder's name: a letter or
// '_', then letters, digits, '_' or '-'.
func ValidName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && (r == '-' || r >= '0' && r <= '9'):
		default:
			return false
		}
	}
	return true
}

// Placeholders returns the names of the text's placeholders, in order,
// each once.
func (t Text) Placeholders() []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range t.parts {
		if p.arg != "" && !seen[p.arg] {
			seen[p.arg] = true
			out = append(out, p.arg)
		}
	}
	return out
}

// Expand returns the text with each placeholder replaced by its value in
// args ("" when absent). Values are inserted as they are.
func (t Text) Expand(args map[string]string) string {
	if len(t.parts) == 1 && t.parts[0].arg == "" {
		return t.parts[0].lit
	}
	var b strings.Builder
	for _, p := range t.parts {
		if p.arg != "" {
			b.WriteString(args[p.arg])
		} else {
			b.WriteString(p.lit)
		}
	}
	return b.String()
}

// Len returns the length of Expand(args) without building it: a text that
// repeats a placeholder multiplies what a client sends, and a server
// checks the product before it spends the memory.
func (t Text) Len(args map[string]string) int {
	n := 0
	for _, p := range t.parts {
		if p.arg != "" {
			n += len(args[p.arg])
		} else {
			n += len(p.lit)
		}
	}
	return n
}

// LenWith returns the size of Expand(args) with each piece measured by
// size (say, its length once encoded in JSON): every literal, and every
// value once however often the text repeats it.
func (t Text) LenWith(args map[string]string, size func(string) int) int {
	var known map[string]int
	n := 0
	for _, p := range t.parts {
		if p.arg == "" {
			n += size(p.lit)
			continue
		}
		v, ok := known[p.arg]
		if !ok {
			if known == nil {
				known = map[string]int{}
			}
			v = size(args[p.arg])
			known[p.arg] = v
		}
		n += v
	}
	return n
}

// URITemplate is an RFC 6570 level-1 URI template: literal text and
// {var} expressions, nothing else (no operators, no explode, no prefix).
type URITemplate struct {
	raw   string
	parts []part
	re    *regexp.Regexp // matches an expansion, a group per variable
}

// ParseURITemplate parses a level-1 URI template with an absolute URI's
// scheme (letters first, then letters, digits, '+', '-', '.', ending with
// ':'). Variable names are letters, digits and '_', each used once, and two
// expressions never touch (matching would be ambiguous).
func ParseURITemplate(s string) (URITemplate, error) {
	if !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl) {
		return URITemplate{}, fmt.Errorf("%q is not valid UTF-8 text without control characters", s)
	}
	u := URITemplate{raw: s}
	seen := map[string]bool{}
	lit := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '}':
			return URITemplate{}, fmt.Errorf("unmatched '}' at offset %d", i)
		case '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return URITemplate{}, fmt.Errorf("'%%' at offset %d does not start a %%XX escape", i)
			}
		case '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return URITemplate{}, fmt.Errorf("unclosed '{' at offset %d", i)
			}
			name := s[i+1 : i+end]
			if name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != "" {
				return URITemplate{}, fmt.Errorf("{%s}: only simple {name} expressions are supported (RFC 6570 level 1; names of letters, digits and '_')", name)
			}
			if seen[name] {
				return URITemplate{}, fmt.Errorf("variable %q appears twice", name)
			}
			seen[name] = true
			if i > lit {
				u.parts = append(u.parts, part{lit: s[lit:i]})
			} else if len(u.parts) > 0 {
				return URITemplate{}, fmt.Errorf("{%s} follows another expression with nothing between them", name)
			}
			u.parts = append(u.parts, part{arg: name})
			i += end
			lit = i + 1
		}
	}
	if lit < len(s) {
		u.parts = append(u.parts, part{lit: s[lit:]})
	}
	if len(u.parts) == 0 || u.parts[0].arg != "" || !hasScheme(u.parts[0].lit) {
		return URITemplate{}, fmt.Errorf("%q does not start with a scheme (like test://)", s)
	}
	if strings.ContainsAny(s, " \t\r\n\"<>\\^`|") {
		return URITemplate{}, fmt.Errorf("%q contains a character not allowed in a URI", s)
	}
	var re strings.Builder
	re.WriteString("^")
	for _, p := range u.parts {
		if p.arg == "" {
			re.WriteString(regexp.QuoteMeta(p.lit))
		} else {
			re.WriteString(`((?:[A-Za-z0-9._~-]|%[0-9A-Fa-f]{2})+)`)
		}
	}
	re.WriteString("$")
	u.re = regexp.MustCompile(re.String())
	return u, nil
}

// hasScheme reports whether s starts with a URI scheme and ':'.
func hasScheme(s string) bool {
	i := strings.IndexByte(s, ':')
	if i < 1 {
		return false
	}
	for k, r := range s[:i] {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if !letter && (k == 0 || !(r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.')) {
			return false
		}
	}
	return true
}

// String returns the template as written.
func (u URITemplate) String() string { return u.raw }

// Variables returns the template's variable names in order.
func (u URITemplate) Variables() []string {
	var out []string
	for _, p := range u.parts {
		if p.arg != "" {
			out = append(out, p.arg)
		}
	}
	return out
}

// Match reports whether uri is an expansion of the template and returns
// each variable's value, percent-decoded. A level-1 expansion
// percent-encodes every character outside the unreserved set, so a value
// is a non-empty run of unreserved characters and %XX escapes; it never
// holds '/', '?' or '#' unescaped. When the split is ambiguous
// ("x://{a}.{b}" and "x://1.2.3") earlier variables take the longest value.
func (u URITemplate) Match(uri string) (map[string]string, bool) {
	if u.re == nil {
		return nil, false // the zero URITemplate matches nothing
	}
	m := u.re.FindStringSubmatch(uri)
	if m == nil {
		return nil, false
	}
	vars := make(map[string]string, len(m)-1)
	for i, name := range u.Variables() {
		v, err := url.PathUnescape(m[i+1])
		if err != nil {
			return nil, false
		}
		vars[name] = v
	}
	return vars, true
}

// Expand returns the URI for the given values, percent-encoding each as
// level 1 does.
func (u URITemplate) Expand(vars map[string]string) string {
	var b strings.Builder
	for _, p := range u.parts {
		if p.arg == "" {
			b.WriteString(p.lit)
			continue
		}
		for _, c := range []byte(vars[p.arg]) {
			if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
				b.WriteByte(c)
			} else {
				fmt.Fprintf(&b, "%%%02X", c)
			}
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
