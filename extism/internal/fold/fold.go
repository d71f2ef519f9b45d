// Package fold holds the rule by which toolhost matches a case-insensitive
// ASCII text, shared by the host's batch-read filter (extism) and the
// built-in search guest, so that the filter never drops a file the guest
// would find a match in.
//
// ASCII letters match in either case. Unicode simple case folding, which
// Go's (?i) uses, also makes KELVIN SIGN a k and LONG S an s: a file holding
// either may match a text with that letter, and is not ruled out by an
// ASCII comparison.
package fold

import "bytes"

var (
	kelvin = []byte("\u212a")
	longS  = []byte("\u017f")
)

// BeyondASCII reports whether data may match the lower-case ASCII needle
// through a letter outside ASCII (KELVIN SIGN for k, LONG S for s), so
// that comparing ASCII letters alone does not settle it.
func BeyondASCII(data, needle []byte) bool {
	return bytes.ContainsAny(needle, "ks") && (bytes.Contains(data, kelvin) || bytes.Contains(data, longS))
}

// Lower appends data to dst[:0] with its ASCII letters in lower case:
// the same length, so offsets carry over.
func Lower(dst, data []byte) []byte {
	low := append(dst[:0], data...)
	for i, c := range low {
		if 'A' <= c && c <= 'Z' {
			low[i] = c + ('a' - 'A')
		}
	}
	return low
}
