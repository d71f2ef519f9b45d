package scan

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func TestIndexByte(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 80 {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.IntN(4)) // few values: many hits and near-misses
		}
		for c := range 5 {
			for off := range min(n, 9) {
				if got, want := IndexByte(b[off:], byte(c)), bytes.IndexByte(b[off:], byte(c)); got != want {
					t.Fatalf("IndexByte(%v, %d) = %d, want %d", b[off:], c, got, want)
				}
			}
		}
	}
	// Every byte value, next to its neighbours (borrow between lanes).
	for c := range 256 {
		b := []byte{byte(c - 1), byte(c + 1), 0x80, 0xff, 0x7f, 0, 1, byte(c + 1), byte(c), byte(c)}
		if got, want := IndexByte(b, byte(c)), bytes.IndexByte(b, byte(c)); got != want {
			t.Fatalf("IndexByte(%v, %d) = %d, want %d", b, c, got, want)
		}
	}
}

func TestFinder(t *testing.T) {
	cases := []struct{ s, needle string }{
		{"", "a"},
		{"a", "a"},
		{"ab", "b"},
		{"the zanzibar needle is here", "zanzibar needle"},
		{"zanzibar neede zanzibar needle", "zanzibar needle"},
		{"zanzibar needl", "zanzibar needle"},
		{"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx yz", "yz"},
		{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab", "aab"},
		{"état de l’art", "l’art"},
		{"QQQ qqq QQQ", "Q q"},
	}
	for _, c := range cases {
		if got, want := NewFinder([]byte(c.needle)).Index([]byte(c.s)), bytes.Index([]byte(c.s), []byte(c.needle)); got != want {
			t.Errorf("Index(%q, %q) = %d, want %d", c.s, c.needle, got, want)
		}
	}
}

func TestIndexOrNUL(t *testing.T) {
	cases := []struct {
		s, needle string
		limit     int
	}{
		{"the zanzibar needle", "needle", 8},
		{"the zanzibar needle\x00", "needle", 100},
		{"the zanzibar needle\x00", "needle", 19},
		{"\x00needle", "needle", 1},
		{"\x00needle", "needle", 0},
		{"needle\x00", "needle", 6},
		{"needle\x00", "needle", 7},
		{"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxneedle", "needle", 35},
		{"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxneedle", "needle", 33},
		{"nee", "needle", 100},
		{"", "a", 8192},
	}
	for _, c := range cases {
		at, bin := NewFinder([]byte(c.needle)).IndexOrNUL([]byte(c.s), c.limit)
		wantBin := bytes.IndexByte([]byte(c.s)[:min(c.limit, len(c.s))], 0) >= 0
		wantAt := -1
		if !wantBin {
			wantAt = bytes.Index([]byte(c.s), []byte(c.needle))
		}
		if at != wantAt || bin != wantBin {
			t.Errorf("IndexOrNUL(%q, %q, %d) = %d, %v; want %d, %v", c.s, c.needle, c.limit, at, bin, wantAt, wantBin)
		}
	}
}

func FuzzFinder(f *testing.F) {
	f.Add([]byte("the zanzibar needle is here"), []byte("needle"))
	f.Add([]byte("aaaaaaaaaaaaaaab"), []byte("ab"))
	f.Fuzz(func(t *testing.T, s, needle []byte) {
		if len(needle) == 0 {
			return
		}
		if got, want := NewFinder(needle).Index(s), bytes.Index(s, needle); got != want {
			t.Fatalf("Index(%q, %q) = %d, want %d", s, needle, got, want)
		}
		if got, want := IndexByte(s, needle[0]), bytes.IndexByte(s, needle[0]); got != want {
			t.Fatalf("IndexByte(%q, %d) = %d, want %d", s, needle[0], got, want)
		}
		if got, want := IndexEither(s, 0, needle[0]), bytes.IndexAny(s, string([]byte{0, needle[0]})); needle[0] < 0x80 && got != want {
			t.Fatalf("IndexEither(%q, 0, %d) = %d, want %d", s, needle[0], got, want)
		}
		if bytes.IndexByte(needle, 0) >= 0 {
			return
		}
		limit := len(s) / 2
		at, bin := NewFinder(needle).IndexOrNUL(s, limit)
		wantBin := bytes.IndexByte(s[:limit], 0) >= 0
		wantAt := -1
		if !wantBin {
			wantAt = bytes.Index(s, needle)
		}
		if at != wantAt || bin != wantBin {
			t.Fatalf("IndexOrNUL(%q, %q, %d) = %d, %v; want %d, %v", s, needle, limit, at, bin, wantAt, wantBin)
		}
	})
}
