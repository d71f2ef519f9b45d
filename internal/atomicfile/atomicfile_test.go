package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFile: the content and mode are the new ones, nothing is left
// beside the file, and a failed write leaves the old file whole.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f.json")
	if err := os.WriteFile(name, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(name, []byte("new"), Options{Perm: 0o600, Sync: true}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(name); string(b) != "new" {
		t.Errorf("content %q, want new", b)
	}
	if fi, _ := os.Stat(name); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	boom := errors.New("boom")
	err := Write(name, Options{Perm: 0o644}, func(w io.Writer) error {
		_, _ = w.Write([]byte("part"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if b, _ := os.ReadFile(name); string(b) != "new" {
		t.Errorf("after a failed write the content is %q, want new", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left in the directory: %v", ents)
	}
	if err := WriteFile(filepath.Join(dir, "missing", "f"), nil, Options{Perm: 0o600}); err == nil {
		t.Error("a write into a missing directory succeeded")
	}
}
