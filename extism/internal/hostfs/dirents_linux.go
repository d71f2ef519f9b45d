package hostfs

import (
	"encoding/binary"
	"io"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// direntState holds what one getdents call returned and the guest has not
// taken yet.
type direntState struct {
	buf  []byte
	pos  int // next record in buf
	end  int // bytes of records in buf
	done bool
	// pooled is buf's memory when it came from direntBufs; it goes back
	// when the file is closed.
	pooled *direntBuf

	// The first entries, read ahead and sorted by name when they are the
	// whole directory (head), served before the rest; from is the next
	// to serve, and read says the read-ahead was made.
	head []fs.DirEntry
	from int
	read bool
}

func (d *direntState) reset() { *d = direntState{buf: d.buf, pooled: d.pooled} }

// release gives the buffer back when the file is closed.
func (d *direntState) release() {
	if d.pooled != nil {
		direntBufs.Put(d.pooled)
	}
	*d = direntState{}
}

// direntBuf is the buffer getdents fills: a listing is one directory
// opened and read per call, and a buffer of its own for each was a fresh
// 8 KiB to clear and collect every time.
type direntBuf [8 << 10]byte

var direntBufs = sync.Pool{New: func() any { return new(direntBuf) }}

// sortedMax is the largest directory whose listing comes sorted by name.
// WASI leaves the order open; guests that want it sorted (the built-in
// file tools all do) then find it so, and their sort, slow in wasm, has
// nothing to do. A larger directory comes in the kernel's order, without
// holding all of it in memory.
const sortedMax = 1 << 14

// The layout of struct linux_dirent64: d_ino u64, d_off s64, d_reclen
// u16, d_type u8, then the NUL-terminated name.
const (
	direntReclen = int(unsafe.Offsetof(syscall.Dirent{}.Reclen))
	direntType   = int(unsafe.Offsetof(syscall.Dirent{}.Type))
	direntName   = int(unsafe.Offsetof(syscall.Dirent{}.Name))
)

// ReadDir returns up to n entries (all when n <= 0) with the names and
// types getdents gives, as fs.ReadDirFile does, sorted by name when the
// directory has at most sortedMax entries. Only an entry whose type the
// filesystem does not report (DT_UNKNOWN) is examined with fstatat,
// relative to this directory and without following a symbolic link: the
// name is one element the directory itself returned, so it cannot lead
// outside it.
func (l *hostFile) ReadDir(n int) ([]fs.DirEntry, error) {
	d := &l.ds
	if !d.read {
		d.read = true
		head, err := l.readDirents(sortedMax + 1)
		if err != nil && err != io.EOF {
			return nil, err
		}
		if len(head) <= sortedMax && d.done && d.pos >= d.end {
			slices.SortFunc(head, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		}
		d.head, d.from = head, 0
	}
	if d.from < len(d.head) {
		k := len(d.head) - d.from
		if n > 0 {
			k = min(k, n)
		}
		out := d.head[d.from : d.from+k : d.from+k]
		d.from += k
		if d.from == len(d.head) {
			d.head, d.from = nil, 0
		}
		if n <= 0 || len(out) < n {
			// Fill the batch up from the kernel: wazero takes a short
			// batch for the end of the directory.
			rest, err := l.readDirents(n - len(out))
			if err == nil {
				out = append(out, rest...)
			}
			// An error (io.EOF at the end) comes again with the next call.
		}
		return out, nil
	}
	return l.readDirents(n)
}

// readDirents is ReadDir in the kernel's order.
func (l *hostFile) readDirents(n int) ([]fs.DirEntry, error) {
	d := &l.ds
	var out []fs.DirEntry
	for n <= 0 || len(out) < n {
		if d.pos >= d.end {
			if d.done {
				break
			}
			if err := l.fill(); err != nil {
				if len(out) > 0 {
					return out, nil // the error comes again with the next call
				}
				return nil, err
			}
			continue
		}
		rec := d.buf[d.pos:d.end]
		if len(rec) < direntName {
			return l.failed(out, d.end, &fs.PathError{Op: "readdirent", Path: l.path(), Err: syscall.EIO})
		}
		reclen := int(binary.NativeEndian.Uint16(rec[direntReclen:]))
		if reclen < direntName || reclen > len(rec) {
			return l.failed(out, d.end, &fs.PathError{Op: "readdirent", Path: l.path(), Err: syscall.EIO})
		}
		d.pos += reclen
		name := rec[direntName:reclen]
		for i, c := range name {
			if c == 0 {
				name = name[:i]
				break
			}
		}
		if len(name) == 0 || string(name) == "." || string(name) == ".." {
			continue
		}
		e := &dirent{name: string(name), typ: direntMode(rec[direntType]), dir: l}
		if rec[direntType] == syscall.DT_UNKNOWN {
			if err := e.lstat(l); err != nil {
				if err == syscall.ENOENT {
					continue // removed since the listing
				}
				// Listed, of a type not known: failing here would end
				// the listing (wazero takes a short batch for its end).
				e.typ = fs.ModeIrregular
			}
		}
		out = append(out, e)
	}
	if n > 0 && len(out) == 0 {
		return nil, io.EOF
	}
	return out, nil
}

// failed ends a ReadDir that met err. Entries already taken are returned
// without it (wazero drops the entries that come with an error) and the
// failing record is met again by the next call, which returns err and
// moves past it to next, so a caller that goes on loses nothing else.
func (l *hostFile) failed(out []fs.DirEntry, next int, err error) ([]fs.DirEntry, error) {
	if len(out) > 0 {
		return out, nil
	}
	l.ds.pos = next
	return nil, err
}

// fill reads the next batch of records.
func (l *hostFile) fill() error {
	d := &l.ds
	if d.buf == nil {
		d.pooled = direntBufs.Get().(*direntBuf)
		d.buf = d.pooled[:]
	}
	var got int
	if err := l.control(func(fd int) (err error) {
		got, err = unix.ReadDirent(fd, d.buf)
		return err
	}); err != nil {
		return &fs.PathError{Op: "readdirent", Path: l.path(), Err: err}
	}
	d.pos, d.end, d.done = 0, got, got == 0
	return nil
}

// control runs fn with the file's descriptor.
func (l *hostFile) control(fn func(fd int) error) error {
	if l.f == nil {
		return fn(l.fd)
	}
	rc, err := l.f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

func (l *hostFile) path() string {
	if l.f == nil {
		return l.name
	}
	return l.f.Name()
}

// sysStat is st as a *syscall.Stat_t, the type os.File.Stat's Sys gives
// and wazero reads a file's inode, device and times from. Both mirror the
// kernel's struct stat for the architecture; the sizes are checked below.
func sysStat(st *unix.Stat_t) *syscall.Stat_t {
	return (*syscall.Stat_t)(unsafe.Pointer(st))
}

// Compile-time check that the two stat structures have the same size.
var (
	_ [unsafe.Sizeof(unix.Stat_t{}) - unsafe.Sizeof(syscall.Stat_t{})]byte
	_ [unsafe.Sizeof(syscall.Stat_t{}) - unsafe.Sizeof(unix.Stat_t{})]byte
)

// direntMode is the fs.FileMode type bits of a getdents d_type.
func direntMode(t uint8) fs.FileMode {
	switch t {
	case syscall.DT_DIR:
		return fs.ModeDir
	case syscall.DT_LNK:
		return fs.ModeSymlink
	case syscall.DT_FIFO:
		return fs.ModeNamedPipe
	case syscall.DT_SOCK:
		return fs.ModeSocket
	case syscall.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.DT_BLK:
		return fs.ModeDevice
	}
	return 0 // DT_REG, and DT_UNKNOWN until lstat says
}

// dirent is one entry of a hostFile: its name and type; Info examines
// it only when asked.
type dirent struct {
	name string
	typ  fs.FileMode
	dir  *hostFile
	st   *syscall.Stat_t // what wazero reads inode, device and times from
}

func (e *dirent) Name() string      { return e.name }
func (e *dirent) IsDir() bool       { return e.typ.IsDir() }
func (e *dirent) Type() fs.FileMode { return e.typ }

func (e *dirent) Info() (fs.FileInfo, error) {
	if e.st == nil {
		if e.dir == nil {
			return nil, &fs.PathError{Op: "lstat", Path: e.name, Err: syscall.EBADF}
		}
		if err := e.lstat(e.dir); err != nil {
			return nil, &fs.PathError{Op: "lstat", Path: e.name, Err: err}
		}
	}
	return direntInfo{e}, nil
}

// lstat examines the entry relative to its directory, without following a
// final symbolic link.
func (e *dirent) lstat(l *hostFile) error {
	e.dir = l
	var st unix.Stat_t
	if err := l.control(func(fd int) error {
		return unix.Fstatat(fd, e.name, &st, unix.AT_SYMLINK_NOFOLLOW)
	}); err != nil {
		return err
	}
	e.st = sysStat(&st)
	e.typ = statMode(st.Mode) & fs.ModeType
	return nil
}

// statMode converts st_mode to an fs.FileMode.
func statMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & syscall.S_IFMT {
	case syscall.S_IFDIR:
		mode |= fs.ModeDir
	case syscall.S_IFLNK:
		mode |= fs.ModeSymlink
	case syscall.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		mode |= fs.ModeSocket
	case syscall.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		mode |= fs.ModeDevice
	}
	if m&syscall.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&syscall.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&syscall.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

type direntInfo struct{ e *dirent }

func (i direntInfo) Name() string       { return i.e.name }
func (i direntInfo) Size() int64        { return i.e.st.Size }
func (i direntInfo) Mode() fs.FileMode  { return statMode(i.e.st.Mode) }
func (i direntInfo) ModTime() time.Time { return time.Unix(i.e.st.Mtim.Unix()) }
func (i direntInfo) IsDir() bool        { return i.Mode().IsDir() }
func (i direntInfo) Sys() any           { return i.e.st }
