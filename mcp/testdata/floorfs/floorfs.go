// Package floorfs is the file access the baseline servers of
// BenchmarkFilesystem (sdkfloor, jsonrpcfloor) share, so that they do the
// same work per call and differ only in how they speak MCP: plain,
// unsandboxed Go reads through an os.Root, and a listing in the reference
// server's format.
package floorfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Read returns the text of the file p.
func Read(root *os.Root, p string) (string, error) {
	b, err := root.ReadFile(p)
	return string(b), err
}

// List returns the entries of the directory p, one "[FILE] p/name" or
// "[DIR] p/name" line each.
func List(root *os.Root, p string) (string, error) {
	f, err := root.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, e := range entries {
		kind := "[FILE]"
		if e.IsDir() {
			kind = "[DIR]"
		}
		fmt.Fprintf(&b, "%s %s\n", kind, filepath.Join(p, e.Name()))
	}
	return b.String(), nil
}
