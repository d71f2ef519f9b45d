package hostfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
)

// FS is a wazero filesystem backed by an *os.Root (mount it with
// sysfs.FSConfig.WithSysFSMount). Every path a guest names is resolved by
// os.Root, which refuses "..", absolute paths and symlinks that lead out
// of the directory; this, not wazero's own directory mount, is the
// security boundary. Read-only mounts refuse every write. Bytes read are
// counted by the FS's Meter (the call's file_bytes_read limit).
//
// An FS is used by one instance, from its guest's goroutine.
type FS struct {
	experimentalsys.UnimplementedFS
	root     *os.Root
	ownsRoot bool   // Close closes root
	guest    string // where the guest sees it
	readOnly bool
	meter    Meter // counts bytes read; may be nil

	// The directory of the last name looked up, opened through root: a
	// guest that lists a directory and then examines or reads its entries
	// (filesystem.list, search) costs one openat per entry instead of
	// os.Root's walk from the mount down for every name. See sub.
	subName string
	sub     *os.Root

	// The directory the last file was opened from by openPlain
	// (plainopen_linux.go), held open as a descriptor to open its
	// entries relative to; dropped with sub.
	plainName string
	plainDir  *os.File
}

// subdir returns the directory holding p (a path within the mount, as
// rootPath returns it) opened as an *os.Root of its own, and p's last
// element; ok is false when p has no plain last element or lies in the
// mount's top directory. The directory
// itself is resolved by r.root, so it cannot lie outside the mount; the
// name is one element, not "." or "..", looked up without following a
// final symlink. Every operation through it that fails is retried
// through r.root (a symlink whose target is elsewhere in the mount, say),
// so it changes speed, never the outcome. It is dropped when the guest
// renames or removes a directory; a directory that another process moves
// during the call is followed, as os.Root follows its own directory.
func (r *FS) subdir(p string) (*os.Root, string, bool) {
	dir, name := ".", p
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		dir, name = p[:i], p[i+1:]
	}
	if name == "" || name == "." || name == ".." || dir == "" {
		return nil, "", false
	}
	if r.sub != nil && r.subName == dir {
		return r.sub, name, true
	}
	if dir == "." {
		return nil, "", false // the mount's own root does it in one step
	}
	if r.sub != nil {
		r.sub.Close()
		r.sub, r.subName = nil, ""
	}
	sub, err := r.root.OpenRoot(dir)
	if err != nil {
		return nil, "", false
	}
	r.sub, r.subName = sub, dir
	return sub, name, true
}

// dropSub forgets the directories held open by name (sub and openPlain's):
// after a rename, a removal or a new symbolic link, a name may lead
// elsewhere.
func (r *FS) dropSub() {
	if r.sub != nil {
		r.sub.Close()
		r.sub, r.subName = nil, ""
	}
	r.dropPlainDir()
}

// Meter counts the bytes a guest reads from its mounts.
type Meter interface {
	// FileRead counts n bytes read; false means the limit is hit, and the
	// read fails.
	FileRead(n int64) bool
}

// Mount returns the filesystem of the directory root, seen by the guest at
// guest (an absolute, clean path); it refuses every write if readOnly. The
// FS owns root: Close closes it. meter may be nil.
func Mount(root *os.Root, guest string, readOnly bool, meter Meter) *FS {
	return &FS{root: root, ownsRoot: true, guest: guest, readOnly: readOnly, meter: meter}
}

// Guest is where the guest sees the filesystem.
func (r *FS) Guest() string { return r.guest }

// Close releases what the filesystem holds open, its root included if it
// owns it.
func (r *FS) Close() {
	r.dropSub()
	if r.ownsRoot {
		r.root.Close()
	}
}

// readFlags are the flags of a read-only open. Opened non-blocking, os.File
// skips putting the descriptor into non-blocking mode and back (four fcntl
// calls per open; a search over thousands of files spends much of its time
// there). Reads of regular files and directories are unaffected; a FIFO
// without a writer reads as empty instead of blocking the call.
func readFlags() int {
	if runtime.GOOS == "windows" {
		return os.O_RDONLY
	}
	return os.O_RDONLY | syscall.O_NONBLOCK
}

func rootPath(p string) string {
	p = strings.TrimPrefix(p, "/")
	if p == "" {
		return "."
	}
	return p
}

// errno maps an error from os.Root to a WASI errno. An attempt to leave the
// root is reported as EPERM.
func errno(err error) experimentalsys.Errno {
	if err == nil {
		return 0
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return experimentalsys.ENOENT
	case errors.Is(err, fs.ErrExist):
		return experimentalsys.EEXIST
	case errors.Is(err, fs.ErrPermission):
		return experimentalsys.EACCES
	}
	if strings.Contains(err.Error(), "escapes") {
		return experimentalsys.EPERM
	}
	if e := experimentalsys.UnwrapOSError(err); e != 0 {
		return e
	}
	return experimentalsys.EIO
}

// String is the host directory's name.
func (r *FS) String() string { return r.root.Name() }

// OpenFile implements experimentalsys.FS.
func (r *FS) OpenFile(path string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	var of int
	switch flag & (experimentalsys.O_RDONLY | experimentalsys.O_WRONLY | experimentalsys.O_RDWR) {
	case experimentalsys.O_WRONLY:
		of = os.O_WRONLY
	case experimentalsys.O_RDWR:
		of = os.O_RDWR
	default:
		of = os.O_RDONLY
	}
	writes := of != os.O_RDONLY || flag&(experimentalsys.O_CREAT|experimentalsys.O_TRUNC|experimentalsys.O_APPEND) != 0
	if writes && r.readOnly {
		return nil, experimentalsys.EROFS
	}
	if flag&experimentalsys.O_APPEND != 0 {
		of |= os.O_APPEND
	}
	if !writes {
		of = readFlags()
	}
	if flag&experimentalsys.O_CREAT != 0 {
		of |= os.O_CREATE
	}
	if flag&experimentalsys.O_EXCL != 0 {
		of |= os.O_EXCL
	}
	if flag&experimentalsys.O_TRUNC != 0 {
		of |= os.O_TRUNC
	}
	p := rootPath(path)
	if p == "." && flag == experimentalsys.O_RDONLY {
		// The mount itself, as wazero opens it for a preopen the first
		// time the guest asks about it (fd_prestat_get, which a guest
		// calls for every mount to learn its name): a directory, opened
		// when first used.
		return newMountDir(r), 0
	}
	if !writes {
		// Never a symbolic link: openPlain does not follow one.
		if h := r.openPlain(p, flag&experimentalsys.O_DIRECTORY != 0); h != nil {
			return newRootFile(r, p, h, false)
		}
	}
	if flag&experimentalsys.O_NOFOLLOW != 0 {
		if st, e := r.Lstat(p); e == 0 && st.Mode&fs.ModeSymlink != 0 {
			return nil, experimentalsys.ELOOP
		}
	}
	var f *os.File
	var err error
	if sub, name, ok := r.subdir(p); ok && !writes {
		f, err = sub.OpenFile(name, of, perm)
	}
	if f == nil {
		if f, err = r.root.OpenFile(p, of, perm); err != nil {
			return nil, errno(err)
		}
	}
	if flag&experimentalsys.O_DIRECTORY != 0 {
		fi, err := f.Stat()
		if err != nil || !fi.IsDir() {
			f.Close()
			return nil, experimentalsys.ENOTDIR
		}
	}
	return newRootFile(r, p, &hostFile{f: f}, of&os.O_APPEND != 0)
}

// Lstat implements experimentalsys.FS.
func (r *FS) Lstat(path string) (sys.Stat_t, experimentalsys.Errno) {
	return r.stat(path, (*os.Root).Lstat)
}

// Stat implements experimentalsys.FS.
func (r *FS) Stat(path string) (sys.Stat_t, experimentalsys.Errno) {
	return r.stat(path, (*os.Root).Stat)
}

// stat runs stat (os.Root's Stat or Lstat) in the open subdirectory of
// path when there is one, else from the mount's root.
func (r *FS) stat(path string, stat func(*os.Root, string) (fs.FileInfo, error)) (sys.Stat_t, experimentalsys.Errno) {
	p := rootPath(path)
	if sub, name, ok := r.subdir(p); ok {
		if fi, err := stat(sub, name); err == nil {
			return sys.NewStat_t(fi), 0
		}
	}
	fi, err := stat(r.root, p)
	if err != nil {
		return sys.Stat_t{}, errno(err)
	}
	return sys.NewStat_t(fi), 0
}

// Mkdir implements experimentalsys.FS.
func (r *FS) Mkdir(path string, perm fs.FileMode) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	return errno(r.root.Mkdir(rootPath(path), perm))
}

// Chmod implements experimentalsys.FS.
func (r *FS) Chmod(path string, perm fs.FileMode) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	return errno(r.root.Chmod(rootPath(path), perm))
}

// Rename implements experimentalsys.FS.
func (r *FS) Rename(from, to string) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	r.dropSub()
	return errno(r.root.Rename(rootPath(from), rootPath(to)))
}

// Rmdir implements experimentalsys.FS.
func (r *FS) Rmdir(path string) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	p := rootPath(path)
	fi, err := r.root.Lstat(p)
	if err != nil {
		return errno(err)
	}
	if !fi.IsDir() {
		return experimentalsys.ENOTDIR
	}
	r.dropSub()
	return errno(r.root.Remove(p))
}

// Unlink implements experimentalsys.FS.
func (r *FS) Unlink(path string) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	p := rootPath(path)
	fi, err := r.root.Lstat(p)
	if err != nil {
		return errno(err)
	}
	if fi.IsDir() {
		return experimentalsys.EISDIR
	}
	r.dropSub() // the name may have been a symbolic link to a directory
	return errno(r.root.Remove(p))
}

// Link implements experimentalsys.FS.
func (r *FS) Link(oldPath, newPath string) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	return errno(r.root.Link(rootPath(oldPath), rootPath(newPath)))
}

// Symlink implements experimentalsys.FS. A link may point anywhere; os.Root
// refuses to follow it out of the mount.
func (r *FS) Symlink(oldPath, linkName string) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	r.dropSub()
	return errno(r.root.Symlink(oldPath, rootPath(linkName)))
}

// Readlink implements experimentalsys.FS.
func (r *FS) Readlink(path string) (string, experimentalsys.Errno) {
	s, err := r.root.Readlink(rootPath(path))
	if err != nil {
		return "", errno(err)
	}
	return s, 0
}

// Utimens implements experimentalsys.FS.
func (r *FS) Utimens(path string, atim, mtim int64) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	return errno(r.root.Chtimes(rootPath(path), time.Unix(0, atim), time.Unix(0, mtim)))
}

// rootFile is an open file of a FS. Seeking, directory listing and
// stat come from wazero's own adapter for fs.File (wrapped around our
// *os.File); reads are counted and writes refused on read-only mounts here.
type rootFile struct {
	experimentalsys.File
	f        *hostFile
	readOnly bool
	append   bool
	meter    Meter
}

// oneFS hands out an already opened file the first time it is asked, and
// reopens through the root afterwards (wazero reopens a directory to
// rewind it).
type oneFS struct {
	root  *os.Root
	first *hostFile
}

func (o *oneFS) Open(name string) (fs.File, error) {
	if f := o.first; f != nil {
		o.first = nil
		return f, nil
	}
	f, err := o.root.Open(name)
	if err != nil {
		return nil, err
	}
	return &hostFile{f: f}, nil
}

// hostFile is a file of a mount as the guest opened it: an *os.File
// without its Readdir method, so that wazero's adapter lists a directory
// through ReadDir: names and types from the
// directory itself (getdents). Given Readdir, it stats every entry for
// its inode number, one system call per entry that a guest listing a
// directory or walking a tree does not need. Entries then come with inode
// number 0, which WASI allows ("not available"); a guest that needs the
// number stats the entry. On Linux ReadDir reads the directory itself
// (dirents_linux.go): os.File.ReadDir stats every entry of a directory
// opened through an os.Root, even when getdents gave its type.
//
// A file openPlain opened read-only is a bare descriptor instead (f nil,
// fd set; plainopen_linux.go): no os.File, which costs a failed epoll
// registration, a finalizer and locking on every open, read and close.
type hostFile struct {
	f    *os.File
	fd   int
	name string
	ds   direntState
}

func (l *hostFile) Stat() (fs.FileInfo, error) {
	if l.f == nil {
		return l.plainStat()
	}
	return l.f.Stat()
}

func (l *hostFile) Read(b []byte) (int, error) {
	if l.f == nil {
		return l.plainRead(b)
	}
	return l.f.Read(b)
}

func (l *hostFile) ReadAt(b []byte, off int64) (int, error) {
	if l.f == nil {
		return l.plainReadAt(b, off)
	}
	return l.f.ReadAt(b, off)
}

func (l *hostFile) Close() error {
	l.ds.release()
	if l.f == nil {
		return l.plainClose()
	}
	return l.f.Close()
}

// Seek moves the file offset; rewinding a directory also drops the
// entries read ahead of the guest.
func (l *hostFile) Seek(off int64, whence int) (int64, error) {
	var n int64
	var err error
	if l.f == nil {
		n, err = l.plainSeek(off, whence)
	} else {
		n, err = l.f.Seek(off, whence)
	}
	if err == nil {
		l.ds.reset()
	}
	return n, err
}

// A bare descriptor is open for reading only.
var errReadOnlyFile = syscall.EBADF

func (l *hostFile) Write(b []byte) (int, error) {
	if l.f == nil {
		return 0, errReadOnlyFile
	}
	return l.f.Write(b)
}

func (l *hostFile) WriteAt(b []byte, off int64) (int, error) {
	if l.f == nil {
		return 0, errReadOnlyFile
	}
	return l.f.WriteAt(b, off)
}

func (l *hostFile) Truncate(size int64) error {
	if l.f == nil {
		return errReadOnlyFile
	}
	return l.f.Truncate(size)
}

func (l *hostFile) Sync() error {
	if l.f == nil {
		return l.plainSync()
	}
	return l.f.Sync()
}

func newRootFile(r *FS, p string, f *hostFile, appendMode bool) (experimentalsys.File, experimentalsys.Errno) {
	inner, e := (&sysfs.AdaptFS{FS: &oneFS{root: r.root, first: f}}).OpenFile(p, experimentalsys.O_RDONLY, 0)
	if e != 0 {
		f.Close()
		return nil, e
	}
	return &rootFile{File: inner, f: f, readOnly: r.readOnly, append: appendMode, meter: r.meter}, 0
}

// IsAppend implements experimentalsys.File.
func (f *rootFile) IsAppend() bool { return f.append }

func (f *rootFile) count(n int) experimentalsys.Errno {
	if f.meter != nil && n > 0 && !f.meter.FileRead(int64(n)) {
		return experimentalsys.EIO
	}
	return 0
}

// Read implements experimentalsys.File.
func (f *rootFile) Read(buf []byte) (int, experimentalsys.Errno) {
	n, err := f.f.Read(buf)
	if e := f.count(n); e != 0 {
		return 0, e
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return n, errno(err)
	}
	return n, 0
}

// Pread implements experimentalsys.File.
func (f *rootFile) Pread(buf []byte, off int64) (int, experimentalsys.Errno) {
	n, err := f.f.ReadAt(buf, off)
	if e := f.count(n); e != 0 {
		return 0, e
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return n, errno(err)
	}
	return n, 0
}

// Write implements experimentalsys.File.
func (f *rootFile) Write(buf []byte) (int, experimentalsys.Errno) {
	if f.readOnly {
		return 0, experimentalsys.EBADF
	}
	n, err := f.f.Write(buf)
	return n, errno(err)
}

// Pwrite implements experimentalsys.File.
func (f *rootFile) Pwrite(buf []byte, off int64) (int, experimentalsys.Errno) {
	if f.readOnly {
		return 0, experimentalsys.EBADF
	}
	n, err := f.f.WriteAt(buf, off)
	return n, errno(err)
}

// Truncate implements experimentalsys.File.
func (f *rootFile) Truncate(size int64) experimentalsys.Errno {
	if f.readOnly {
		return experimentalsys.EBADF
	}
	return errno(f.f.Truncate(size))
}

// Sync implements experimentalsys.File.
func (f *rootFile) Sync() experimentalsys.Errno { return errno(f.f.Sync()) }

// Datasync implements experimentalsys.File.
func (f *rootFile) Datasync() experimentalsys.Errno { return errno(f.f.Sync()) }

// mountDir is a mount's top directory, opened on the host only when the
// guest uses it: wazero opens every preopen to answer fd_prestat_get, an
// openat and an fstat per mount and call that most calls never use. It is
// a directory because os.OpenRoot opened it as one. Until it is opened the
// embedded File is wazero's UnimplementedFile; Seek, the one method
// promoted from it rather than written here (a method named Seek must
// have io.Seeker's signature for go vet), is only asked of a directory to
// rewind a listing it has already read (fd_seek refuses directories).
type mountDir struct {
	experimentalsys.File
	fs     *FS
	opened bool
}

func newMountDir(r *FS) *mountDir {
	return &mountDir{File: experimentalsys.UnimplementedFile{}, fs: r}
}

func (d *mountDir) file() (experimentalsys.File, experimentalsys.Errno) {
	if !d.opened {
		f, err := d.fs.root.OpenFile(".", readFlags(), 0)
		if err != nil {
			return nil, errno(err)
		}
		inner, e := newRootFile(d.fs, ".", &hostFile{f: f}, false)
		if e != 0 {
			return nil, e
		}
		d.File, d.opened = inner, true
	}
	return d.File, 0
}

func (d *mountDir) IsDir() (bool, experimentalsys.Errno)     { return true, 0 }
func (d *mountDir) IsAppend() bool                           { return false }
func (d *mountDir) SetAppend(bool) experimentalsys.Errno     { return experimentalsys.EISDIR }
func (d *mountDir) Read([]byte) (int, experimentalsys.Errno) { return 0, experimentalsys.EISDIR }
func (d *mountDir) Pread([]byte, int64) (int, experimentalsys.Errno) {
	return 0, experimentalsys.EISDIR
}
func (d *mountDir) Write([]byte) (int, experimentalsys.Errno) { return 0, experimentalsys.EISDIR }
func (d *mountDir) Pwrite([]byte, int64) (int, experimentalsys.Errno) {
	return 0, experimentalsys.EISDIR
}
func (d *mountDir) Truncate(int64) experimentalsys.Errno { return experimentalsys.EISDIR }

func (d *mountDir) Dev() (uint64, experimentalsys.Errno) {
	f, e := d.file()
	if e != 0 {
		return 0, e
	}
	return f.Dev()
}

func (d *mountDir) Ino() (sys.Inode, experimentalsys.Errno) {
	f, e := d.file()
	if e != 0 {
		return 0, e
	}
	return f.Ino()
}

func (d *mountDir) Stat() (sys.Stat_t, experimentalsys.Errno) {
	f, e := d.file()
	if e != 0 {
		return sys.Stat_t{}, e
	}
	return f.Stat()
}

func (d *mountDir) Readdir(n int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	f, e := d.file()
	if e != 0 {
		return nil, e
	}
	return f.Readdir(n)
}

func (d *mountDir) Sync() experimentalsys.Errno {
	f, e := d.file()
	if e != 0 {
		return e
	}
	return f.Sync()
}

func (d *mountDir) Datasync() experimentalsys.Errno {
	f, e := d.file()
	if e != 0 {
		return e
	}
	return f.Datasync()
}

func (d *mountDir) Utimens(atim, mtim int64) experimentalsys.Errno {
	if d.fs.readOnly {
		return experimentalsys.EROFS
	}
	f, e := d.file()
	if e != 0 {
		return e
	}
	return f.Utimens(atim, mtim)
}

func (d *mountDir) Close() experimentalsys.Errno {
	if !d.opened {
		return 0
	}
	f := d.File
	d.File, d.opened = experimentalsys.UnimplementedFile{}, false
	return f.Close()
}
