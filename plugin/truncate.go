package plugin

import (
	"strconv"
	"unicode/utf8"
)

// Truncate shortens s to at most max bytes for a model: the first 80 % of
// the budget, a marker "[... truncated N bytes ...]", and the last 20 %.
// Cuts fall on UTF-8 boundaries, and when a newline is close to a cut the
// cut moves to it so that lines stay whole. It returns s unchanged and 0 when
// s fits; otherwise the shortened text and the number of bytes omitted.
func Truncate(s string, max int) (string, int) {
	if len(s) <= max || max <= 0 {
		return s, 0
	}
	// Reserve room for the marker; the marker's length depends on N, so
	// size it for the worst case.
	marker := len("\n[... truncated  bytes ...]\n") + len(strconv.Itoa(len(s)))
	budget := max - marker
	if budget < 0 {
		budget = 0
	}
	head := budget * 8 / 10
	tail := budget - head
	h := cutBack(s, head)
	t := cutForward(s, len(s)-tail)
	if t < h {
		t = h
	}
	omitted := t - h
	pre := "\n"
	if h == 0 || s[h-1] == '\n' {
		pre = ""
	}
	return s[:h] + pre + "[... truncated " + strconv.Itoa(omitted) + " bytes ...]\n" + s[t:], omitted
}

// cutBack returns an index ≤ i on a rune boundary, preferring to end just
// after a newline within the last 10 % of the head.
func cutBack(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	for j, n := i, 0; j > 0 && n < i/10; j, n = j-1, n+1 {
		if s[j-1] == '\n' {
			return j
		}
	}
	return i
}

// cutForward returns an index ≥ i on a rune boundary, preferring the start
// of a line within the first 10 % of the tail.
func cutForward(s string, i int) int {
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	limit := (len(s) - i) / 10
	for j, n := i, 0; j < len(s) && n < limit; j, n = j+1, n+1 {
		if s[j] == '\n' && j+1 <= len(s) {
			return j + 1
		}
	}
	return i
}
