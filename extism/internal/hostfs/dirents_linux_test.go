package hostfs

import (
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
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
	l := &hostFile{f: f}
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
		if st, ok := info.Sys().(*syscall.Stat_t); !ok || st.Ino != ref.Sys().(*syscall.Stat_t).Ino {
			t.Errorf("%s: Info().Sys() = %#v, want its *syscall.Stat_t", e.Name(), info.Sys())
		}
		if info.Name() != ref.Name() || info.Mode() != ref.Mode() || info.Size() != ref.Size() || !info.ModTime().Equal(ref.ModTime()) {
			t.Errorf("%s: Info %v %v %d %v, Lstat %v %v %d %v", e.Name(),
				info.Name(), info.Mode(), info.Size(), info.ModTime(), ref.Name(), ref.Mode(), ref.Size(), ref.ModTime())
		}
	}
}

// TestOpenPlain: a file opened as a bare descriptor reads, seeks and
// stats as an os.File would; a final symbolic link, a directory outside
// the mount and a missing file are left to os.Root (nil), and through
// FS.OpenFile a link inside the mount is followed and one out of it
// refused.
func TestOpenPlain(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	content := []byte("line one\nline two\n")
	if err := os.WriteFile(filepath.Join(dir, "sub", "f.txt"), content, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("f.txt", filepath.Join(dir, "sub", "in")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "sub", "out")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := &FS{root: root, readOnly: true}
	defer func() { r.Close(); root.Close() }()

	h := r.openPlain("sub/f.txt", false)
	if h == nil || h.f != nil {
		t.Fatalf("openPlain(sub/f.txt) = %+v, want a bare descriptor", h)
	}
	buf := make([]byte, 64)
	n, err := h.Read(buf)
	if err != nil || string(buf[:n]) != string(content) {
		t.Fatalf("Read: %q, %v", buf[:n], err)
	}
	if n, err := h.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("Read at the end: %d, %v; want io.EOF", n, err)
	}
	if n, err := h.ReadAt(buf[:3], 5); n != 3 || err != nil || string(buf[:3]) != "one" {
		t.Fatalf("ReadAt: %q, %v", buf[:n], err)
	}
	if n, err := h.ReadAt(buf, 10); err != io.EOF || string(buf[:n]) != "ine two\n" {
		t.Fatalf("ReadAt past the end: %q, %v; want the rest and io.EOF", buf[:n], err)
	}
	if off, err := h.Seek(5, io.SeekStart); off != 5 || err != nil {
		t.Fatalf("Seek: %d, %v", off, err)
	}
	if n, _ := h.Read(buf[:3]); string(buf[:n]) != "one" {
		t.Fatalf("Read after Seek: %q", buf[:n])
	}
	fi, err := h.Stat()
	if err != nil || fi.Name() != "f.txt" || fi.Size() != int64(len(content)) || fi.Mode() != 0o640 || fi.IsDir() {
		t.Fatalf("Stat: %v %v %v %v, %v", fi.Name(), fi.Size(), fi.Mode(), fi.IsDir(), err)
	}
	ref, err := os.Stat(filepath.Join(dir, "sub", "f.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// wazero takes inode, device and times from a *syscall.Stat_t.
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Ino != ref.Sys().(*syscall.Stat_t).Ino || st.Dev != ref.Sys().(*syscall.Stat_t).Dev || st.Ino == 0 {
		t.Errorf("Stat().Sys() = %#v, want the file's *syscall.Stat_t", fi.Sys())
	}
	if _, err := h.Write([]byte("x")); err == nil {
		t.Error("Write to a descriptor opened for reading: no error")
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err == nil {
		t.Error("second Close: no error")
	}

	for _, p := range []string{"sub/in", "sub/out", "sub/missing", "../" + filepath.Base(outside) + "/secret"} {
		if h := r.openPlain(p, false); h != nil {
			h.Close()
			t.Errorf("openPlain(%s) opened it; want it left to os.Root", p)
		}
	}
	if f, e := r.OpenFile("sub/in", experimentalsys.O_RDONLY, 0); e != 0 {
		t.Errorf("a link inside the mount: %v", e)
	} else {
		n, e := f.Read(buf)
		if e != 0 || string(buf[:n]) != string(content) {
			t.Errorf("read through a link inside the mount: %q, %v", buf[:n], e)
		}
		f.Close()
	}
	if err := os.Symlink(outside, filepath.Join(dir, "outdir")); err != nil {
		t.Fatal(err)
	}
	if h := r.openPlain("outdir/secret", false); h != nil {
		h.Close()
		t.Error("openPlain followed a directory link out of the mount")
	}
	if f, e := r.OpenFile("outdir/secret", experimentalsys.O_RDONLY, 0); e == 0 {
		f.Close()
		t.Error("a file under a directory link out of the mount was opened")
	}
	if f, e := r.OpenFile("sub/out", experimentalsys.O_RDONLY, 0); e == 0 {
		f.Close()
		t.Error("a link out of the mount was opened")
	}
	// A directory lists through its descriptor, opened with O_DIRECTORY
	// or without; so does the mount itself.
	for _, c := range []struct {
		p   string
		dir bool
		n   int
	}{{"sub", false, 3}, {"sub", true, 3}, {".", true, 2}} { // . holds sub and outdir
		if d := r.openPlain(c.p, c.dir); d == nil {
			t.Errorf("openPlain(%s, %v) = nil", c.p, c.dir)
		} else {
			entries, err := d.ReadDir(-1)
			d.Close()
			if err != nil || len(entries) != c.n {
				t.Errorf("listing %s: %d entries, %v; want %d", c.p, len(entries), err, c.n)
			}
		}
	}
	// A file or a link to a directory opened as a directory is left to
	// os.Root, which refuses the one and follows the other.
	if err := os.Symlink("sub", filepath.Join(dir, "sublink")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"sub/f.txt", "sublink"} {
		if h := r.openPlain(p, true); h != nil {
			h.Close()
			t.Errorf("openPlain(%s, true) opened it; want it left to os.Root", p)
		}
	}
	if f, e := r.OpenFile("sub/f.txt", experimentalsys.O_RDONLY|experimentalsys.O_DIRECTORY, 0); e != experimentalsys.ENOTDIR {
		if e == 0 {
			f.Close()
		}
		t.Errorf("a file opened as a directory: errno %v, want ENOTDIR", e)
	}
	if f, e := r.OpenFile("sublink", experimentalsys.O_RDONLY|experimentalsys.O_DIRECTORY, 0); e != 0 {
		t.Errorf("a link to a directory opened as one: errno %v", e)
	} else {
		f.Close()
	}
}

// TestMountDir: a mount's top directory is a directory before anything is
// opened, opens on first use, refuses to change times on a read-only
// mount, and lists again after being closed.
func TestMountDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	r := &FS{root: root, readOnly: true}
	defer r.Close()
	f, e := r.OpenFile(".", experimentalsys.O_RDONLY, 0)
	if e != 0 {
		t.Fatal(e)
	}
	d, ok := f.(*mountDir)
	if !ok {
		t.Fatalf("OpenFile(.) = %T, want *mountDir", f)
	}
	if isDir, e := d.IsDir(); !isDir || e != 0 || d.opened {
		t.Fatalf("IsDir = %v, %v (opened %v); want true without opening", isDir, e, d.opened)
	}
	if e := d.Utimens(0, 0); e != experimentalsys.EROFS {
		t.Errorf("Utimens on a read-only mount: %v, want EROFS", e)
	}
	list := func() {
		t.Helper()
		ents, e := d.Readdir(-1)
		if e != 0 {
			t.Fatal(e)
		}
		var names []string
		for _, de := range ents {
			if de.Name != "." && de.Name != ".." {
				names = append(names, de.Name)
			}
		}
		if !slices.Equal(names, []string{"a"}) {
			t.Errorf("listing: %v, want [a]", names)
		}
	}
	list()
	if st, e := d.Stat(); e != 0 || !st.Mode.IsDir() || st.Ino == 0 {
		t.Errorf("Stat: %+v, %v", st, e)
	}
	if e := d.Close(); e != 0 {
		t.Fatal(e)
	}
	if e := d.Close(); e != 0 {
		t.Errorf("second Close: %v", e)
	}
	list() // reopened
	if e := d.Close(); e != 0 {
		t.Fatal(e)
	}
}

// TestListingUnknownType: records whose type getdents does not report are
// examined by ReadDir itself, without following a symbolic link; one
// removed since is left out, one that cannot be examined is listed of
// unknown type (failing would end the listing); Info on an entry without
// a directory is an error.
func TestListingUnknownType(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("nowhere", filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	l := &hostFile{f: f}
	defer l.Close()
	// What a filesystem without d_type would return.
	var buf []byte
	long := strings.Repeat("n", 300) // lstat fails: ENAMETOOLONG
	for _, name := range []string{"d", "gone", long, "f", "dangling"} {
		rec := make([]byte, (direntName+len(name)+1+7)&^7)
		binary.NativeEndian.PutUint16(rec[direntReclen:], uint16(len(rec)))
		rec[direntType] = syscall.DT_UNKNOWN
		copy(rec[direntName:], name)
		buf = append(buf, rec...)
	}
	l.ds = direntState{buf: buf, end: len(buf), done: true}
	ents, err := l.ReadDir(-1)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 4 || ents[0].Name() != "d" || !ents[0].IsDir() || ents[1].Name() != "dangling" || ents[1].Type() != fs.ModeSymlink ||
		ents[2].Name() != "f" || ents[2].Type() != 0 || ents[3].Name() != long || ents[3].Type() != fs.ModeIrregular {
		t.Errorf("entries: %v", ents)
	}
	if _, err := (&dirent{name: "x"}).Info(); err == nil {
		t.Error("Info without a directory: no error")
	}
}

// TestListingSorted: a directory of up to sortedMax entries is listed
// sorted by name, whatever the batches it is read in, and again after a
// rewind; a larger one is listed whole, in the kernel's order.
func TestListingSorted(t *testing.T) {
	small := t.TempDir()
	var want []string
	for i := range 300 {
		n := fmt.Sprintf("%x-%d", (i*7919)%1000, i)
		want = append(want, n)
		if err := os.WriteFile(filepath.Join(small, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(want)
	// names lists as wazero does: a batch shorter than asked for is the
	// end.
	names := func(l *hostFile, batch int) []string {
		t.Helper()
		var out []string
		for {
			ents, err := l.ReadDir(batch)
			for _, e := range ents {
				out = append(out, e.Name())
			}
			if err == io.EOF || batch <= 0 || len(ents) < batch {
				return out
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	f, err := os.Open(small)
	if err != nil {
		t.Fatal(err)
	}
	l := &hostFile{f: f}
	defer l.Close()
	for _, batch := range []int{7, -1, 1, 1000} {
		if _, err := l.Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		if got := names(l, batch); !slices.Equal(got, want) {
			t.Fatalf("batches of %d: %d names, sorted %v", batch, len(got), slices.IsSorted(got))
		}
	}
	// A larger one, as getdents would return it (names in descending
	// order), comes in that order.
	var buf []byte
	for i := sortedMax + 10; i > 0; i-- {
		name := fmt.Sprintf("%06d", i)
		rec := make([]byte, (direntName+len(name)+1+7)&^7)
		binary.NativeEndian.PutUint16(rec[direntReclen:], uint16(len(rec)))
		rec[direntType] = syscall.DT_REG
		copy(rec[direntName:], name)
		buf = append(buf, rec...)
	}
	g, err := os.Open(small)
	if err != nil {
		t.Fatal(err)
	}
	lg := &hostFile{f: g}
	defer lg.Close()
	lg.ds = direntState{buf: buf, end: len(buf), done: true}
	got := names(lg, 341) // the read-ahead ends inside a batch
	if len(got) != sortedMax+10 || got[0] != fmt.Sprintf("%06d", sortedMax+10) || !slices.IsSortedFunc(got, func(a, b string) int { return -strings.Compare(a, b) }) {
		t.Fatalf("large directory: %d names, first %q; want %d in getdents order", len(got), got[0], sortedMax+10)
	}
}

// TestPlainDirDropped: the directory openPlain holds open by name is
// forgotten when a rename, removal or new link may make the name lead
// elsewhere.
func TestPlainDirDropped(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a", "b"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, d, "f"), []byte(d), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	r := &FS{root: root}
	defer r.Close()
	read := func(p string) string {
		t.Helper()
		f, e := r.OpenFile(p, experimentalsys.O_RDONLY, 0)
		if e != 0 {
			t.Fatalf("open %s: %v", p, e)
		}
		defer f.Close()
		b := make([]byte, 8)
		n, _ := f.Read(b)
		return string(b[:n])
	}
	for _, step := range []struct {
		name string
		do   func() experimentalsys.Errno
	}{
		{"rename", func() experimentalsys.Errno { return r.Rename("a", "c") }},
		{"symlink", func() experimentalsys.Errno { return r.Symlink("b", "a") }},
		{"unlink", func() experimentalsys.Errno { return r.Unlink("a") }},
	} {
		if r.plainDir == nil && step.name != "unlink" {
			read("b/f")
		}
		if step.name == "unlink" {
			read("a/f") // through the link a -> b
		}
		if r.plainDir == nil {
			t.Fatalf("%s: no directory held before it", step.name)
		}
		if e := step.do(); e != 0 {
			t.Fatalf("%s: %v", step.name, e)
		}
		if r.plainDir != nil {
			t.Errorf("%s: the held directory %q was kept", step.name, r.plainName)
		}
	}
	if got := read("c/f"); got != "a" {
		t.Errorf("c/f after the rename: %q", got)
	}
}
