//go:build unix

package guestmem

import (
	"bytes"
	"testing"
)

func TestDataPlanClearExcept(t *testing.T) {
	p := &Plan{size: 64, ranges: []span{{4, 8}, {10, 20}, {40, 64}}}
	for _, c := range []struct{ lo, hi uint64 }{{0, 64}, {0, 30}, {5, 12}, {20, 40}, {50, 60}, {0, 0}} {
		b := bytes.Repeat([]byte{0xab}, 64)
		p.clearExcept(b, c.lo, c.hi)
		for i := range b {
			inRange := uint64(i) >= c.lo && uint64(i) < c.hi
			covered := false
			for _, r := range p.ranges {
				covered = covered || uint64(i) >= r.off && uint64(i) < r.end
			}
			if want := byte(0xab); inRange && !covered {
				want = 0
				if b[i] != want {
					t.Fatalf("[%d,%d): byte %d = %#x, want cleared", c.lo, c.hi, i, b[i])
				}
			} else if b[i] != 0xab {
				t.Fatalf("[%d,%d): byte %d cleared, outside the range or under a segment", c.lo, c.hi, i)
			}
		}
	}
}

// TestClearDirty: every non-zero byte is cleared, wherever it sits in a
// chunk and however the slice is cut, and nothing outside the slice is.
func TestClearDirty(t *testing.T) {
	const size = 5*len(zeroChunk) + 123
	for _, cut := range []struct{ lo, hi int }{{0, size}, {1, size - 1}, {4095, 8193}, {100, 200}, {7, 7}} {
		for _, at := range []int{cut.lo, cut.hi - 1, (cut.lo + cut.hi) / 2, cut.lo + len(zeroChunk), cut.hi - len(zeroChunk) - 1} {
			if at < cut.lo || at >= cut.hi {
				continue
			}
			b := make([]byte, size)
			b[at] = 0x5a
			if cut.lo > 0 {
				b[cut.lo-1] = 0xee
			}
			if cut.hi < size {
				b[cut.hi] = 0xee
			}
			clearDirty(b[cut.lo:cut.hi])
			if b[at] != 0 {
				t.Errorf("[%d,%d): byte %d not cleared", cut.lo, cut.hi, at)
			}
			if (cut.lo > 0 && b[cut.lo-1] != 0xee) || (cut.hi < size && b[cut.hi] != 0xee) {
				t.Errorf("[%d,%d): a byte outside the slice was cleared", cut.lo, cut.hi)
			}
		}
	}
	b := bytes.Repeat([]byte{0xab}, size)
	clearDirty(b)
	if !bytes.Equal(b, make([]byte, size)) {
		t.Error("a slice full of data was not cleared entirely")
	}
}
