//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm

package guest

import (
	"math/bits"
	"unsafe"
)

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plainRun returns how many bytes of s from i on appendString copies as
// they are (printable ASCII other than " \ < > &), reading eight at a time
// while eight remain. A Go guest compiled to wasm spends most of encoding
// a large result in this scan; a word at a time it is several times faster
// than byte by byte.
func plainRun(s string, i int) int {
	p := unsafe.Pointer(unsafe.StringData(s))
	start := i
	for ; i+8 <= len(s); i += 8 {
		w := *(*uint64)(unsafe.Add(p, i)) // little-endian: s[i] is the low byte
		// A byte-wise subtraction borrows into the next byte only from a
		// byte below what is subtracted. So in special, the lowest byte
		// with its high bit set is the first that is below 0x20 or equal to
		// one of the five, among the ASCII bytes below the first that is
		// not ASCII (high bit of w); bytes above it do not matter.
		special := (w - 0x20*ones) | (w ^ '"'*ones - ones) | (w ^ '\\'*ones - ones) |
			(w ^ '<'*ones - ones) | (w ^ '>'*ones - ones) | (w ^ '&'*ones - ones)
		if m := (special | w) & highs; m != 0 {
			return i - start + bits.TrailingZeros64(m)/8
		}
	}
	return i - start
}
