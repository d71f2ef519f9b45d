// Package scan finds bytes and literals in file contents eight bytes at a
// time. Go's wasm port has no vector instructions, and its bytes.IndexByte
// compares one byte per loop iteration; a search through thousands of
// files spends most of its guest time there.
package scan

import "bytes"

// Finder finds one literal.
type Finder struct {
	needle []byte
	rare   int // the offset in needle of the byte searched for first
}

// NewFinder returns a Finder of needle (not empty).
func NewFinder(needle []byte) *Finder {
	f := &Finder{needle: bytes.Clone(needle)}
	for i, c := range needle {
		if rank(c) < rank(needle[f.rare]) {
			f.rare = i
		}
	}
	return f
}

// Index is bytes.Index(s, needle).
func (f *Finder) Index(s []byte) int {
	m := len(f.needle)
	if m > len(s) {
		return -1
	}
	c := f.needle[f.rare]
	// The needle starts at p when s[p+rare] == c; p is at most len(s)-m.
	from, to := f.rare, len(s)-m+f.rare+1
	for from < to {
		k := IndexByte(s[from:to], c)
		if k < 0 {
			return -1
		}
		p := from + k - f.rare
		if string(s[p:p+m]) == string(f.needle) {
			return p
		}
		from += k + 1
	}
	return -1
}

// IndexOrNUL returns the index of the first needle in s (or -1), unless
// s[:limit] holds a NUL byte, when it returns binary true: the test for a
// binary file and the search, in one pass over s[:limit] (the needle
// holds no NUL).
func (f *Finder) IndexOrNUL(s []byte, limit int) (at int, binary bool) {
	m := len(f.needle)
	c := f.needle[f.rare]
	lim := min(limit, len(s))
	at = -1
	for q := 0; q < lim; {
		k := IndexEither(s[q:lim], 0, c)
		if k < 0 {
			break
		}
		q += k
		if s[q] == 0 {
			return -1, true
		}
		if p := q - f.rare; p >= 0 && p+m <= len(s) && string(s[p:p+m]) == string(f.needle) {
			at = p
			if IndexByte(s[q+1:lim], 0) >= 0 {
				return -1, true
			}
			return at, false
		}
		q++
	}
	// No NUL in s[:lim], no match with its searched byte before lim.
	from := max(0, lim-f.rare)
	if i := f.Index(s[from:]); i >= 0 {
		return from + i, false
	}
	return -1, false
}

// rank orders bytes by how common they are in source code and prose, most
// common last: a literal is looked for by its least common byte.
func rank(c byte) int {
	switch {
	case c == ' ' || c == 'e' || c == 't':
		return 9
	case c == '\t' || c == '\n' || c == 'a' || c == 'o' || c == 'i' || c == 'n' || c == 's' || c == 'r':
		return 8
	case c == 'l' || c == 'd' || c == 'c' || c == 'u' || c == 'h' || c == '(' || c == ')' || c == '.' || c == ',':
		return 7
	case c >= 'a' && c <= 'z', c == '_', c == '"', c == '=', c == ';', c == '{', c == '}':
		return 5
	case c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return 4
	case c >= 0x80:
		return 2
	}
	return 3
}
