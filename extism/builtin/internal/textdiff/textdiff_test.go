package textdiff

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestUnified(t *testing.T) {
	tests := []struct {
		name, old, new, want string
	}{
		{"equal", "a\n", "a\n", ""},
		{"new file", "", "a\nb\n", "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+a\n+b\n"},
		{"delete all", "a\n", "", "--- a\n+++ b\n@@ -1 +0,0 @@\n-a\n"},
		{"change middle", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nfive\n6\n7\n8\n9\n",
			"--- a\n+++ b\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"},
		{"no newline", "a\nb", "a\nc", "--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "x\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\ny\n",
			"--- a\n+++ b\n@@ -1,4 +1,4 @@\n-1\n+x\n 2\n 3\n 4\n@@ -9,4 +9,4 @@\n 9\n 10\n 11\n-12\n+y\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := Unified("a", "b", tt.old, tt.new, 3)
			if got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// apply rebuilds both sides from an edit script.
func apply(ops []op) (string, string) {
	var a, b strings.Builder
	for _, o := range ops {
		if o.kind != insert {
			a.WriteString(o.line)
		}
		if o.kind != del {
			b.WriteString(o.line)
		}
	}
	return a.String(), b.String()
}

func lcs(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

func TestDiffMinimalAndCorrect(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	gen := func() []string {
		n := r.IntN(30)
		out := make([]string, n)
		for i := range out {
			out[i] = string(rune('a'+r.IntN(4))) + "\n"
		}
		return out
	}
	for i := 0; i < 500; i++ {
		a, b := gen(), gen()
		ops := diff(a, b)
		ga, gb := apply(ops)
		if ga != strings.Join(a, "") || gb != strings.Join(b, "") {
			t.Fatalf("script does not rebuild the inputs: %q %q", a, b)
		}
		edits := 0
		for _, o := range ops {
			if o.kind != equal {
				edits++
			}
		}
		if want := len(a) + len(b) - 2*lcs(a, b); edits != want {
			t.Fatalf("%d edits, minimal is %d (%q → %q)", edits, want, a, b)
		}
	}
}

func TestDiffFallback(t *testing.T) {
	var a, b []string
	for i := 0; i < 3000; i++ {
		a = append(a, "a"+string(rune(i))+"\n")
		b = append(b, "b"+string(rune(i))+"\n")
	}
	ga, gb := apply(diff(a, b))
	if ga != strings.Join(a, "") || gb != strings.Join(b, "") {
		t.Fatal("fallback script does not rebuild the inputs")
	}
}

// FuzzDiff checks that the edit script of any two texts rebuilds both.
func FuzzDiff(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nc\nd")
	f.Add("", "x")
	f.Fuzz(func(t *testing.T, a, b string) {
		ga, gb := apply(diff(splitLines(a), splitLines(b)))
		if ga != a || gb != b {
			t.Fatalf("script does not rebuild %q → %q", a, b)
		}
		Unified("a", "b", a, b, 3)
	})
}
