//go:build !unix

package main

import "io"

// serveInput returns what `host serve --stdio` reads its messages from:
// stdin as it is (see stdin_unix.go).
func serveInput(in io.Reader) (io.ReadCloser, func()) {
	return io.NopCloser(in), func() {}
}
