//go:build !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm)

package scan

import "bytes"

// IndexByte is bytes.IndexByte (big-endian hosts: the guests this package
// is for are wasm, always little-endian).
func IndexByte(b []byte, c byte) int { return bytes.IndexByte(b, c) }

// IndexEither returns the index of the first a or b in s, or -1.
func IndexEither(s []byte, a, b byte) int {
	for i, c := range s {
		if c == a || c == b {
			return i
		}
	}
	return -1
}
