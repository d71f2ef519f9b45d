package plugin

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"
)

// minEncodedLen is the shortest secret whose encoded forms are redacted:
// the base64 of a shorter one is a few characters that turn up in any
// long base64 text by chance. (The raw value is always redacted.)
const minEncodedLen = 6

// encodedForms returns v as a tool, a server or a log may write it: raw;
// JSON-escaped as Go (with and without HTML escaping), Python
// (ensure_ascii, lower-case hex), JavaScript engines with upper-case hex
// and PHP (escaped slashes) write it; percent-encoded as a query, a path,
// Python's quote and an encoder that escapes every byte (either hex case);
// base64 in the standard and URL alphabets at each of the three byte
// alignments it can have inside a longer encoded text (only the characters
// that depend on v alone, so padding and neighbours do not matter); and
// hex in either case. Duplicates are dropped.
func encodedForms(v string) []string {
	forms := []string{v}
	add := func(f string) {
		if f == "" {
			return
		}
		for _, g := range forms {
			if g == f {
				return
			}
		}
		forms = append(forms, f)
	}
	for _, html := range []bool{true, false} {
		add(jsonEscape(v, html))
	}
	if len(v) < minEncodedLen {
		return forms
	}
	ascii := jsonASCII(v, "%04x", false)
	add(ascii)
	add(jsonASCII(v, "%04X", false))
	add(jsonASCII(v, "%04x", true))
	add(url.QueryEscape(v))
	add(url.PathEscape(v))
	add(strings.ReplaceAll(url.QueryEscape(v), "%2F", "/"))
	add(strings.ReplaceAll(url.PathEscape(v), "+", "%2B"))
	add(percentAll(v, "%%%02X"))
	add(percentAll(v, "%%%02x"))
	for _, core := range base64Cores([]byte(v)) {
		add(core)
		add(strings.NewReplacer("+", "-", "/", "_").Replace(core))
	}
	add(hex.EncodeToString([]byte(v)))
	add(strings.ToUpper(hex.EncodeToString([]byte(v))))
	return forms
}

// jsonASCII escapes v for a JSON string with every non-ASCII character as
// \uXXXX (surrogate pairs beyond the BMP) in the given hex format, the
// JSON specials as short escapes, and, with slashes, "/" as "\/".
func jsonASCII(v, hexFormat string, slashes bool) string {
	var b strings.Builder
	for _, r := range v {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '/' && slashes:
			b.WriteString(`\/`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == utf8.RuneError:
			fmt.Fprintf(&b, `\u`+hexFormat, r)
		case r < 0x80:
			b.WriteRune(r)
		case r < 0x10000:
			fmt.Fprintf(&b, `\u`+hexFormat, r)
		default:
			r -= 0x10000
			fmt.Fprintf(&b, `\u`+hexFormat+`\u`+hexFormat, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
		}
	}
	return b.String()
}

// percentAll escapes every byte of v as %XX in the given format.
func percentAll(v, format string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		fmt.Fprintf(&b, format, v[i])
	}
	return b.String()
}

// base64Cores returns, for each offset of v within a 3-byte group (0, 1,
// 2), the standard base64 characters that encode bits of v only: what
// appears in the base64 of any text containing v at that alignment.
func base64Cores(v []byte) []string {
	var out []string
	for r := 0; r < 3; r++ {
		buf := make([]byte, r+len(v)+2)
		copy(buf[r:], v)
		enc := base64.StdEncoding.EncodeToString(buf)
		start := (8*r + 5) / 6          // first character with no bit before v
		end := (8*r + 8*len(v)) / 6     // past the last with no bit after v
		if end-start >= minEncodedLen { // shorter cores match by chance
			out = append(out, enc[start:end])
		}
	}
	return out
}
