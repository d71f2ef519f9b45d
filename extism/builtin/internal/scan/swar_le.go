//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm

package scan

import (
	"math/bits"
	"unsafe"
)

// Eight bytes at a time, loaded little-endian: the byte at the lowest
// address is the lowest of the word.

const (
	lo = 0x0101010101010101
	hi = 0x8080808080808080
)

// IndexByte is bytes.IndexByte.
func IndexByte(b []byte, c byte) int {
	n := len(b)
	i := 0
	if n >= 8 {
		p := unsafe.Pointer(unsafe.SliceData(b))
		pat := uint64(c) * lo
		// 32 bytes per iteration while nothing is found: a loop
		// iteration costs a guest more than the arithmetic.
		for ; i+32 <= n; i += 32 {
			w0 := *(*uint64)(unsafe.Add(p, i)) ^ pat
			w1 := *(*uint64)(unsafe.Add(p, i+8)) ^ pat
			w2 := *(*uint64)(unsafe.Add(p, i+16)) ^ pat
			w3 := *(*uint64)(unsafe.Add(p, i+24)) ^ pat
			if ((w0-lo)&^w0|(w1-lo)&^w1|(w2-lo)&^w2|(w3-lo)&^w3)&hi != 0 {
				break
			}
		}
		for ; i+8 <= n; i += 8 {
			// Little-endian load (wasm and the hosts toolhost runs on).
			x := *(*uint64)(unsafe.Add(p, i)) ^ pat
			// The lowest flagged byte is always a zero byte of x: only
			// the bytes above a zero can be flagged falsely (borrow).
			if t := (x - lo) &^ x & hi; t != 0 {
				return i + bits.TrailingZeros64(t)/8
			}
		}
	}
	for ; i < n; i++ {
		if b[i] == c {
			return i
		}
	}
	return -1
}

// IndexEither returns the index of the first a or b in s, or -1.
func IndexEither(s []byte, a, b byte) int {
	n := len(s)
	i := 0
	if n >= 8 {
		p := unsafe.Pointer(unsafe.SliceData(s))
		pa, pb := uint64(a)*lo, uint64(b)*lo
		for ; i+32 <= n; i += 32 {
			w0 := *(*uint64)(unsafe.Add(p, i))
			w1 := *(*uint64)(unsafe.Add(p, i+8))
			w2 := *(*uint64)(unsafe.Add(p, i+16))
			w3 := *(*uint64)(unsafe.Add(p, i+24))
			x0, y0, x1, y1 := w0^pa, w0^pb, w1^pa, w1^pb
			x2, y2, x3, y3 := w2^pa, w2^pb, w3^pa, w3^pb
			if ((x0-lo)&^x0|(y0-lo)&^y0|(x1-lo)&^x1|(y1-lo)&^y1|
				(x2-lo)&^x2|(y2-lo)&^y2|(x3-lo)&^x3|(y3-lo)&^y3)&hi != 0 {
				break
			}
		}
		for ; i+8 <= n; i += 8 {
			w := *(*uint64)(unsafe.Add(p, i))
			x, y := w^pa, w^pb
			// Each term's lowest flag is exact (IndexByte), so the
			// lowest of both is.
			if t := ((x-lo)&^x | (y-lo)&^y) & hi; t != 0 {
				return i + bits.TrailingZeros64(t)/8
			}
		}
	}
	for ; i < n; i++ {
		if s[i] == a || s[i] == b {
			return i
		}
	}
	return -1
}
