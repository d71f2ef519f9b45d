package extism

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// TestListingReadDir: the getdents listing gives the names and types
// os.ReadDir gives, in batches or whole, again after a rewind, over a
// directory larger than one read, and Info matches os.Lstat.
func TestListingReadDir(t *testing.T) {
	dir := t.TempDir()
	want := map[string]fs.FileMode{}
	for i := range 600 { // ~600 records of ~32 bytes: several 8 KiB reads
		name := fmt.Sprintf("file-with-a-longish-name-%04d.txt", i)
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o640); err != nil {
			t.Fatal(err)
		}
		want[name] = 0
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	want["sub"] = fs.ModeDir
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	want["link"] = fs.ModeSymlink
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	want["fifo"] = fs.ModeNamedPipe

	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	f, err := root.Open(".")
	if err != nil {
		t.Fatal(err)
	}
	l := &listingFile{f: f}
	defer l.Close()

	check := func(t *testing.T, entries []fs.DirEntry) {
		t.Helper()
		got := map[string]fs.FileMode{}
		for _, e := range entries {
			if _, dup := got[e.Name()]; dup {
				t.Errorf("%s listed twice", e.Name())
			}
			got[e.Name()] = e.Type()
			if e.IsDir() != e.Type().IsDir() {
				t.Errorf("%s: IsDir %v, type %v", e.Name(), e.IsDir(), e.Type())
			}
		}
		if len(got) != len(want) {
			t.Errorf("%d entries, want %d", len(got), len(want))
		}
		for name, typ := range want {
			if g, ok := got[name]; !ok || g != typ {
				t.Errorf("%s: type %v (listed %v), want %v", name, g, ok, typ)
			}
		}
	}

	all, err := l.ReadDir(-1)
	if err != nil {
		t.Fatal(err)
	}
	check(t, all)
	if more, err := l.ReadDir(-1); err != nil || len(more) != 0 {
		t.Fatalf("after the end: %d entries, %v; want none and no error", len(more), err)
	}
	if more, err := l.ReadDir(5); err != io.EOF || len(more) != 0 {
		t.Fatalf("ReadDir(5) after the end: %d entries, %v; want io.EOF", len(more), err)
	}

	if _, err := l.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	var batched []fs.DirEntry
	for {
		b, err := l.ReadDir(7)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 || len(b) > 7 {
			t.Fatalf("ReadDir(7) gave %d entries", len(b))
		}
		batched = append(batched, b...)
	}
	check(t, batched)

	for _, e := range all {
		if !slices.Contains([]string{"sub", "link", "fifo", "file-with-a-longish-name-0042.txt"}, e.Name()) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		ref, err := os.Lstat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if info.Name() != ref.Name() || info.Mode() != ref.Mode() || info.Size() != ref.Size() || !info.ModTime().Equal(ref.ModTime()) {
			t.Errorf("%s: Info %v %v %d %v, Lstat %v %v %d %v", e.Name(),
				info.Name(), info.Mode(), info.Size(), info.ModTime(), ref.Name(), ref.Mode(), ref.Size(), ref.ModTime())
		}
	}
}

// TestListingUnknownType: an entry whose type getdents does not report is
// examined, without following a symbolic link; one removed in between is
// left out, and Info on an entry without a directory is an error.
func TestListingUnknownType(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("nowhere", filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	l := &listingFile{f: f}
	defer l.Close()
	e := &dirent{name: "dangling", typ: direntMode(syscall.DT_UNKNOWN)}
	if err := e.lstat(l); err != nil {
		t.Fatal(err)
	}
	if e.Type() != fs.ModeSymlink {
		t.Errorf("type %v, want a symlink", e.Type())
	}
	gone := &dirent{name: "gone", typ: 0}
	if err := gone.lstat(l); err != syscall.ENOENT {
		t.Errorf("lstat of a missing entry: %v, want ENOENT", err)
	}
	if _, err := (&dirent{name: "x"}).Info(); err == nil {
		t.Error("Info without a directory: no error")
	}
}
