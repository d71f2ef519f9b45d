package guest

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// The call path's JSON without reflection. encoding/json, compiled to
// wasm, spends a call's fresh instance ~100 µs decoding the call envelope
// and encoding the result (perf, a filesystem.read of a missing file:
// about a fifth of the guest's time). These handle the shapes the host
// sends and the results tools return; anything else goes to encoding/json,
// which the tests hold them to.

// decodeCall decodes call_tool's input, {"params":{"name":…,
// "arguments":…}}. ok is false when it is left to encoding/json: the input
// is not valid JSON (whose error encoding/json then words), a key differs
// from a field's name only in case (encoding/json would take it), a name
// has escapes, or there are answers.
func decodeCall(in []byte) (c Call, ok bool) {
	if !json.Valid(in) {
		return Call{}, false
	}
	s := scanner{b: in}
	ok = s.object(func(key []byte) bool {
		switch {
		case string(key) == "params":
			if s.peek() != '{' {
				return string(s.value()) == "null"
			}
			return s.object(func(key []byte) bool {
				switch {
				case string(key) == "name":
					v := s.value()
					if v[0] != '"' {
						return string(v) == "null"
					}
					name, plain := plainString(v)
					c.Name = name
					return plain
				case string(key) == "arguments":
					c.Arguments = json.RawMessage(s.value())
					return true
				case string(key) == "answers":
					return string(s.value()) == "null"
				case foldsTo(key, "name", "arguments", "answers"):
					return false
				}
				s.value()
				return true
			})
		case foldsTo(key, "params"):
			return false
		}
		s.value()
		return true
	})
	return c, ok
}

// foldsTo reports whether key is one of names in another case.
func foldsTo(key []byte, names ...string) bool {
	for _, n := range names {
		if len(key) == len(n) && string(key) != n && equalFoldASCII(string(key), n) {
			return true
		}
	}
	return false
}

func equalFoldASCII(a, b string) bool {
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// plainString returns the content of the JSON string v, and false if it
// has escapes or bytes that are not UTF-8 (encoding/json decodes them to
// U+FFFD), or is not a string.
func plainString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	body := v[1 : len(v)-1]
	for _, c := range body {
		if c == '\\' {
			return "", false
		}
	}
	if !utf8.Valid(body) {
		return "", false
	}
	return string(body), true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// scanner walks JSON already known to be valid.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *scanner) peek() byte {
	s.ws()
	return s.b[s.i]
}

// object calls member with each key of the object at s (positioned on its
// value, which member consumes); false if s is not at an object or
// member says so.
func (s *scanner) object(member func(key []byte) bool) bool {
	if s.peek() != '{' {
		return false
	}
	s.i++
	for {
		if s.peek() == '}' {
			s.i++
			return true
		}
		key := s.value()
		if key[0] != '"' {
			return false
		}
		s.peek() // ':'
		s.i++
		raw, plain := plainString(key)
		// A key with escapes or beyond ASCII may fold to a field's
		// name as encoding/json matches them (LONG S to an s).
		if !plain || !isASCII(raw) || !member([]byte(raw)) {
			return false
		}
		if s.peek() == ',' {
			s.i++
		}
	}
}

// value returns the next value's bytes and moves past it.
func (s *scanner) value() []byte {
	s.ws()
	start := s.i
	depth := 0
	for {
		switch c := s.b[s.i]; c {
		case '"':
			s.i++
			for s.b[s.i] != '"' {
				if s.b[s.i] == '\\' {
					s.i++
				}
				s.i++
			}
			s.i++
		case '{', '[':
			depth++
			s.i++
		case '}', ']':
			depth--
			s.i++
		case ',', ':', ' ', '\t', '\n', '\r':
			s.i++
		default: // a number or a literal
			for s.i < len(s.b) && !isDelim(s.b[s.i]) {
				s.i++
			}
		}
		if depth == 0 {
			return s.b[start:s.i]
		}
	}
}

func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ':', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// appendResult appends the fast path's result (wireResult: content items,
// each with its text reference if refs has one) as encoding/json would
// encode it; false leaves it to encoding/json (a question, or structured
// content that is not valid JSON, whose error encoding/json words).
func appendResult(b []byte, res *Result, refs []*[2]int) ([]byte, bool) {
	if res.NeedsInput != nil || len(res.StructuredContent) > 0 && !json.Valid(res.StructuredContent) {
		return b, false
	}
	b = append(b, `{"content":`...)
	if res.Content == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range res.Content {
			if i > 0 {
				b = append(b, ',')
			}
			var ref *[2]int
			if i < len(refs) {
				ref = refs[i]
			}
			b = appendContent(b, &res.Content[i], ref)
		}
		b = append(b, ']')
	}
	if len(res.StructuredContent) > 0 {
		b = append(b, `,"structuredContent":`...)
		b = appendCompact(b, res.StructuredContent)
	}
	if res.IsError {
		b = append(b, `,"isError":true`...)
	}
	if res.Code != "" {
		b = append(b, `,"code":`...)
		b = appendString(b, res.Code)
	}
	return append(b, '}'), true
}

func appendContent(b []byte, c *Content, ref *[2]int) []byte {
	b = append(b, `{"type":`...)
	b = appendString(b, c.Type)
	field := func(name, v string) {
		if v != "" {
			b = append(b, ',', '"')
			b = append(b, name...)
			b = append(b, '"', ':')
			b = appendString(b, v)
		}
	}
	if ref == nil {
		field("text", c.Text)
	}
	if len(c.Data) > 0 {
		b = append(b, `,"data":"`...)
		b = base64.StdEncoding.AppendEncode(b, c.Data)
		b = append(b, '"')
	}
	field("mimeType", c.MIMEType)
	field("uri", c.URI)
	field("name", c.Name)
	if r := c.Resource; r != nil {
		b = append(b, `,"resource":{"uri":`...)
		b = appendString(b, r.URI)
		if r.MIMEType != "" {
			b = append(b, `,"mimeType":`...)
			b = appendString(b, r.MIMEType)
		}
		b = append(b, `,"text":`...)
		b = appendString(b, r.Text)
		b = append(b, '}')
	}
	if ref != nil {
		b = append(b, `,"textRef":[`...)
		b = strconv.AppendInt(b, int64(ref[0]), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(ref[1]), 10)
		b = append(b, ']')
	}
	return append(b, '}')
}

// appendCompact appends valid JSON without its insignificant space.
func appendCompact(b, v []byte) []byte {
	inString := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case inString:
			b = append(b, c)
			if c == '\\' {
				i++
				b = append(b, v[i])
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
			b = append(b, c)
		case c != ' ' && c != '\t' && c != '\n' && c != '\r':
			b = append(b, c)
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, as encoding/json would decode
// it back: invalid UTF-8 becomes U+FFFD; control characters, quotes and
// backslashes are escaped, and so are <, >, & and U+2028/U+2029 as
// encoding/json does.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if i += plainRun(s, i); i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
