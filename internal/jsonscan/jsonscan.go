// Package jsonscan reads the members of a JSON document in place, without
// decoding it: what the host's fast paths need to look at a message or a
// tool's arguments and leave everything unusual to a full decoder.
//
// Its functions assume the document is valid JSON (json.Valid judges
// that first); on a document that is not, they report failure or an
// index, never panic.
package jsonscan

// Space returns the index of the first byte at or after i that is not JSON
// white space.
func Space(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// End returns the index after the JSON value starting at b[i], or -1 if
// none starts there. It only finds the value's end: json.Valid judges the
// value.
func End(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return -1
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end := End(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && !isDelim(b[j]) {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// ASCIIString reads the string starting at b[i]: its contents, which must
// be printable ASCII without escapes (else ok is false), and the index
// after its closing quote. Such a string decodes to exactly its bytes.
func ASCIIString(b []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// Members calls fn with the name and the raw value of each member of the
// object b, in order, while fn returns true. It reports whether b is an
// object whose members were all visited: false if b is not an object, if a
// member's name is not printable ASCII without escapes (see ASCIIString),
// or if fn returned false.
func Members(b []byte, fn func(name, value []byte) bool) bool {
	i := Space(b, 0)
	if i == len(b) || b[i] != '{' {
		return false
	}
	i = Space(b, i+1)
	if i < len(b) && b[i] == '}' {
		return true
	}
	for {
		name, next, ok := ASCIIString(b, i)
		if !ok {
			return false
		}
		i = Space(b, next)
		if i == len(b) || b[i] != ':' {
			return false
		}
		i = Space(b, i+1)
		end := End(b, i)
		if end < 0 || !fn(name, b[i:end]) {
			return false
		}
		i = Space(b, end)
		if i == len(b) {
			return false
		}
		if b[i] == '}' {
			return true
		}
		if b[i] != ',' {
			return false
		}
		i = Space(b, i+1)
	}
}
