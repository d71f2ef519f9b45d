//go:build linux

package declared_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolhost/toolhost/plugin/declared"
)

// TestStampSeesSameSizeRewrite: a rewrite that keeps the size and puts the
// modification time back (as `cp -p` or `touch -r` do), and a file of the
// same size and time renamed over the resource, change its stamp; a file
// left alone keeps it.
func TestStampSeesSameSizeRewrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.txt")
	if err := os.WriteFile(path, []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	r := &declared.Resource{URI: "docs://r", Path: path, Root: dir}
	stamp := func() string {
		t.Helper()
		s, err := r.Stamp()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	first := stamp()
	if again := stamp(); again != first {
		t.Fatalf("an unchanged file's stamp moved: %q, then %q", first, again)
	}
	if err := os.WriteFile(path, []byte("v2"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	second := stamp()
	if second == first {
		t.Error("a same-size rewrite with the modification time put back kept the stamp")
	}
	other := filepath.Join(dir, "other.txt")
	if err := os.WriteFile(other, []byte("v3"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(other, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	if stamp() == second {
		t.Error("a file of the same size and time renamed over the resource kept the stamp")
	}
}
