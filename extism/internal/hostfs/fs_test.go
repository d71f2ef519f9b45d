package hostfs

import (
	"os"
	"path/filepath"
	"testing"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// TestRootFSSubdir checks the directory handle FS keeps for the last
// directory looked up: the same answers as os.Root alone, in-mount
// symlinks followed, links out refused, and no stale handle after the
// guest renames or removes the directory.
func TestRootFSSubdir(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	for p, body := range map[string]string{"a/f.txt": "12345", "a/g.txt": "1"} {
		if err := os.MkdirAll(filepath.Join(ws, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(ws, "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"b/in": "../a/f.txt", "b/out": filepath.Join(outside, "secret"), "b/up": "../../" + filepath.Base(outside) + "/secret"} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	r := &FS{root: root}
	defer r.Close()

	if st, e := r.Lstat("/a/f.txt"); e != 0 || st.Size != 5 {
		t.Fatalf("Lstat a/f.txt = %d, %v", st.Size, e)
	}
	if st, e := r.Lstat("/a/g.txt"); e != 0 || st.Size != 1 {
		t.Fatalf("Lstat a/g.txt (cached directory) = %d, %v", st.Size, e)
	}
	if _, e := r.Lstat("/a/nope"); e != experimentalsys.ENOENT {
		t.Fatalf("Lstat a/nope = %v, want ENOENT", e)
	}
	if st, e := r.Stat("/b/in"); e != 0 || st.Size != 5 {
		t.Fatalf("Stat b/in (a link elsewhere in the mount) = %d, %v", st.Size, e)
	}
	f, e := r.OpenFile("/b/in", experimentalsys.O_RDONLY, 0)
	if e != 0 {
		t.Fatalf("open b/in: %v", e)
	}
	f.Close()
	for _, p := range []string{"/b/out", "/b/up", "/a/../b/out", "/b/../../" + filepath.Base(outside) + "/secret"} {
		if _, e := r.Stat(p); e == 0 {
			t.Errorf("Stat %s succeeded: a link out of the mount was followed", p)
		}
		if f, e := r.OpenFile(p, experimentalsys.O_RDONLY, 0); e == 0 {
			f.Close()
			t.Errorf("open %s succeeded: a link out of the mount was followed", p)
		}
	}

	// A writable mount: renaming or removing the cached directory drops it.
	w := &FS{root: root}
	defer w.Close()
	if _, e := w.Lstat("/a/f.txt"); e != 0 {
		t.Fatal(e)
	}
	if e := w.Rename("/a", "/c"); e != 0 {
		t.Fatal(e)
	}
	if e := w.Mkdir("/a", 0o755); e != 0 {
		t.Fatal(e)
	}
	if _, e := w.Lstat("/a/f.txt"); e != experimentalsys.ENOENT {
		t.Fatalf("after rename and mkdir, Lstat a/f.txt = %v, want ENOENT (a stale directory handle)", e)
	}
	if st, e := w.Lstat("/c/f.txt"); e != 0 || st.Size != 5 {
		t.Fatalf("Lstat c/f.txt = %d, %v", st.Size, e)
	}
	if e := w.Rmdir("/a"); e != 0 {
		t.Fatal(e)
	}
	if e := w.Mkdir("/a", 0o755); e != 0 {
		t.Fatal(e)
	}
	if _, e := w.Lstat("/c/g.txt"); e != 0 {
		t.Fatal(e)
	}
	if e := w.Rename("/c/g.txt", "/a/g.txt"); e != 0 {
		t.Fatal(e)
	}
	if st, e := w.Lstat("/a/g.txt"); e != 0 || st.Size != 1 {
		t.Fatalf("Lstat a/g.txt after moving it there = %d, %v", st.Size, e)
	}
}
