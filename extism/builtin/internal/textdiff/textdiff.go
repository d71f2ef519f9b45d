// Package textdiff computes line-based unified diffs (the format of
// `diff -u` and `git diff`) for the built-in write and edit tools.
//
// The diff is Myers' O(ND) algorithm after trimming the common prefix and
// suffix; when the two texts differ in more than maxEdits lines the changed
// middle is reported as one replacement, which is still a correct diff,
// only not a minimal one.
package textdiff

import (
	"fmt"
	"strings"
)

// maxEdits bounds the work (time and memory grow with its square).
const maxEdits = 2000

type kind byte

const (
	equal  kind = ' '
	del    kind = '-'
	insert kind = '+'
)

type op struct {
	kind kind
	line string
}

// Stats counts the lines a diff adds and removes.
type Stats struct {
	Added, Removed int
}

// Unified returns the unified diff turning old into new, with ctx lines
// of context, and its stats. Equal texts give "". oldName and newName go
// into the --- and +++ lines.
func Unified(oldName, newName, old, new string, ctx int) (string, Stats) {
	if old == new {
		return "", Stats{}
	}
	ops := diff(splitLines(old), splitLines(new))
	var st Stats
	for _, o := range ops {
		switch o.kind {
		case del:
			st.Removed++
		case insert:
			st.Added++
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n", oldName, newName)
	// Walk the ops, emitting a hunk around each run of changes.
	aLine, bLine := 0, 0 // lines consumed before ops[i]
	for i := 0; i < len(ops); {
		if ops[i].kind == equal {
			i, aLine, bLine = i+1, aLine+1, bLine+1
			continue
		}
		// Hunk start: up to ctx equal lines before i.
		start := i
		for start > 0 && i-start < ctx && ops[start-1].kind == equal {
			start--
		}
		a0, b0 := aLine-(i-start), bLine-(i-start)
		// Hunk end: extend while the next change is within 2*ctx lines.
		end := i
		for end < len(ops) {
			if ops[end].kind != equal {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == equal {
				run++
			}
			if run == len(ops) || run-end > 2*ctx {
				end = min(run, end+ctx)
				break
			}
			end = run
		}
		na, nb := 0, 0
		for _, o := range ops[start:end] {
			if o.kind != insert {
				na++
			}
			if o.kind != del {
				nb++
			}
		}
		fmt.Fprintf(&sb, "@@ -%s +%s @@\n", rangeOf(a0, na), rangeOf(b0, nb))
		for _, o := range ops[start:end] {
			sb.WriteByte(byte(o.kind))
			sb.WriteString(o.line)
			if !strings.HasSuffix(o.line, "\n") {
				sb.WriteString("\n\\ No newline at end of file\n")
			}
		}
		for _, o := range ops[i:end] {
			if o.kind != insert {
				aLine++
			}
			if o.kind != del {
				bLine++
			}
		}
		i = end
	}
	return sb.String(), st
}

func rangeOf(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// splitLines splits s after each newline; the last line may lack one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// diff returns the edit script turning a into b.
func diff(a, b []string) []op {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ops := make([]op, 0, len(a)+len(b))
	for _, l := range a[:pre] {
		ops = append(ops, op{equal, l})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if mid := myers(ma, mb); mid != nil {
		ops = append(ops, mid...)
	} else {
		for _, l := range ma {
			ops = append(ops, op{del, l})
		}
		for _, l := range mb {
			ops = append(ops, op{insert, l})
		}
	}
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, op{equal, l})
	}
	return ops
}

// myers returns a shortest edit script, or nil if it needs more than
// maxEdits edits.
func myers(a, b []string) []op {
	n, m := len(a), len(b)
	max := n + m
	if max == 0 {
		return []op{}
	}
	off := max + 1
	v := make([]int32, 2*max+3)
	var trace [][]int32 // trace[d][k+d] = furthest x on diagonal k after d edits
	for d := 0; d <= max; d++ {
		if d > maxEdits {
			return nil
		}
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = int(v[off+k+1])
			} else {
				x = int(v[off+k-1]) + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = int32(x)
		}
		snap := make([]int32, 2*d+1)
		copy(snap, v[off-d:off+d+1])
		trace = append(trace, snap)
		if int(v[off+n-m]) >= n && (n-m+d)%2 == 0 && n-m >= -d && n-m <= d {
			return backtrack(a, b, trace)
		}
	}
	return nil
}

func backtrack(a, b []string, trace [][]int32) []op {
	x, y := len(a), len(b)
	var rev []op
	for d := len(trace) - 1; d > 0; d-- {
		k := x - y
		prev := trace[d-1]
		at := func(k int) int { return int(prev[k+d-1]) }
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1 // came down: an insertion
		} else {
			pk = k - 1 // came right: a deletion
		}
		px := at(pk)
		py := px - pk
		mx, my := px, py
		if pk == k+1 {
			my++
		} else {
			mx++
		}
		for x > mx && y > my {
			x, y = x-1, y-1
			rev = append(rev, op{equal, a[x]})
		}
		if pk == k+1 {
			rev = append(rev, op{insert, b[py]})
		} else {
			rev = append(rev, op{del, a[px]})
		}
		x, y = px, py
	}
	for x > 0 && y > 0 {
		x, y = x-1, y-1
		rev = append(rev, op{equal, a[x]})
	}
	ops := make([]op, len(rev))
	for i, o := range rev {
		ops[len(rev)-1-i] = o
	}
	return ops
}
