//go:build wasip1

package mounts

import (
	"slices"
	"strings"
	"syscall"
	"unsafe"
)

//go:wasmimport wasi_snapshot_preview1 fd_prestat_get
func fdPrestatGet(fd int32, buf unsafe.Pointer) int32

//go:wasmimport wasi_snapshot_preview1 fd_prestat_dir_name
func fdPrestatDirName(fd int32, buf unsafe.Pointer, n int32) int32

//go:wasmimport wasi_snapshot_preview1 path_open
func pathOpen(dirFD int32, dirflags uint32, path unsafe.Pointer, pathLen uint32, oflags uint32, rightsBase, rightsInheriting uint64, fdflags uint32, fd unsafe.Pointer) int32

//go:wasmimport wasi_snapshot_preview1 fd_read
func fdRead(fd int32, iovs unsafe.Pointer, iovsLen uint32, nread unsafe.Pointer) int32

//go:wasmimport wasi_snapshot_preview1 fd_close
func fdClose(fd int32) int32

// Discover returns the directories the host preopened for this instance,
// in the host's order, without the per-call /tmp. The WASI preopens are the
// only truth about what the operator mounted: the guest reads them instead
// of trusting configuration.
func Discover() Set {
	var names []string
	var fds []int32
	for fd := int32(3); fd < 64; fd++ {
		var pre [2]uint32 // tag (u8, padded), name length
		if fdPrestatGet(fd, unsafe.Pointer(&pre[0])) != 0 {
			break
		}
		if pre[0]&0xff != 0 || pre[1] == 0 || pre[1] > MaxPathBytes {
			continue
		}
		buf := make([]byte, pre[1])
		if fdPrestatDirName(fd, unsafe.Pointer(&buf[0]), int32(len(buf))) != 0 {
			continue
		}
		if n := len(buf); buf[n-1] == 0 {
			buf = buf[:n-1]
		}
		names = append(names, string(buf))
		fds = append(fds, fd)
	}
	s := New(names...)
	s.fds = make([]int32, len(s.paths))
	for i, p := range s.paths {
		s.fds[i] = -1
		for j, n := range names {
			if cleanMount(n) == p {
				s.fds[i] = fds[j]
				break
			}
		}
	}
	return s
}

// WASI rights a plain read needs, and the flag that follows symbolic links
// (the host still refuses links that lead out of the mount).
const (
	rightFDRead         = 1 << 1
	lookupSymlinkFollow = 1
)

// ReadFile reads the regular file abs (a path Resolve returned) into buf,
// growing it as needed, and returns the bytes read. It talks to WASI
// directly: os.Open on wasip1 adds fdstat and non-blocking-mode calls to
// every open, which dominate a search over thousands of small files. A file
// larger than max is not read: ok is false and the error nil.
func (s Set) ReadFile(abs string, buf []byte, max int64) (data []byte, ok bool, err error) {
	dirFD, rel, err := s.at(abs)
	if err != nil {
		return nil, false, err
	}
	var fd int32
	if e := pathOpen(dirFD, lookupSymlinkFollow, unsafe.Pointer(unsafe.StringData(rel)), uint32(len(rel)), 0, rightFDRead, 0, 0, unsafe.Pointer(&fd)); e != 0 {
		return nil, false, syscall.Errno(e)
	}
	defer fdClose(fd)
	n := 0
	for {
		if n == len(buf) {
			if int64(n) > max {
				return nil, false, nil
			}
			buf = append(buf, make([]byte, len(buf)+4096)...)
		}
		iov := [2]uint32{uint32(uintptr(unsafe.Pointer(&buf[n]))), uint32(len(buf) - n)}
		var got uint32
		if e := fdRead(fd, unsafe.Pointer(&iov[0]), 1, unsafe.Pointer(&got)); e != 0 {
			return nil, false, syscall.Errno(e)
		}
		if got == 0 {
			break
		}
		n += int(got)
	}
	if int64(n) > max {
		return nil, false, nil
	}
	return buf[:n], true, nil
}

// at returns the preopened directory holding abs (a path Resolve
// returned) and abs relative to it.
func (s Set) at(abs string) (int32, string, error) {
	i := s.mountIndex(abs)
	if i < 0 || i >= len(s.fds) || s.fds[i] < 0 {
		return 0, "", syscall.ENOENT
	}
	m, dirFD := s.paths[i], s.fds[i]
	if abs == m {
		return dirFD, ".", nil
	}
	if m == "/" {
		return dirFD, abs[1:], nil
	}
	return dirFD, abs[len(m)+1:], nil
}

// Info is what the host tells of a file a batch examined (SubmitStat).
type Info struct {
	Kind  uint8 // WASI file type
	Size  int64
	Mtime int64 // nanoseconds since the Unix epoch
}

// IsDir reports whether the file is a directory.
func (i Info) IsDir() bool { return i.Kind == typeDirectory }

// IsRegular reports whether the file is a regular file.
func (i Info) IsRegular() bool { return i.Kind == typeRegular }

// IsSymlink reports whether the file is a symbolic link.
func (i Info) IsSymlink() bool { return i.Kind == typeSymlink }

//go:wasmimport wasi_snapshot_preview1 fd_readdir
func fdReaddir(fd int32, buf unsafe.Pointer, bufLen uint32, cookie uint64, used unsafe.Pointer) int32

// WASI file types.
const (
	typeDirectory = 3
	typeRegular   = 4
	typeSymlink   = 7
	rightReaddir  = 1 << 14
	oflagDir      = 1 << 1
)

// Entry is one directory entry as WASI reports it.
type Entry struct {
	Name string
	kind uint8
}

// IsDir reports whether the entry is a directory (links are not followed).
func (e Entry) IsDir() bool { return e.kind == typeDirectory }

// IsRegular reports whether the entry is a regular file.
func (e Entry) IsRegular() bool { return e.kind == typeRegular }

// IsSymlink reports whether the entry is a symbolic link.
func (e Entry) IsSymlink() bool { return e.kind == typeSymlink }

// ReadDir's buffer: its first size, and the size up to which it doubles
// while a directory fills it.
const (
	readDirMin = 4 << 10
	readDirMax = 64 << 10
)

// ReadDir lists the directory abs (a path Resolve returned) in one pass
// over WASI fd_readdir, with entry types and no stat calls, in the host's
// order (unsorted); buf is scratch space, returned for reuse.
func (s Set) ReadDir(abs string, buf []byte) ([]Entry, []byte, error) {
	dirFD, rel, err := s.at(abs)
	if err != nil {
		return nil, buf, err
	}
	var fd int32
	if e := pathOpen(dirFD, 0, unsafe.Pointer(unsafe.StringData(rel)), uint32(len(rel)), oflagDir, rightReaddir, 0, 0, unsafe.Pointer(&fd)); e != 0 {
		return nil, buf, syscall.Errno(e)
	}
	defer fdClose(fd)
	if len(buf) < readDirMin {
		// Small: a fresh instance pays for a large buffer (heap growth,
		// zeroing) in every listing; a large directory grows it below.
		buf = make([]byte, readDirMin)
	}
	var out []Entry
	var cookie uint64
	for {
		var used uint32
		if e := fdReaddir(fd, unsafe.Pointer(&buf[0]), uint32(len(buf)), cookie, unsafe.Pointer(&used)); e != 0 {
			return nil, buf, syscall.Errno(e)
		}
		b := buf[:used]
		complete := false
		for len(b) >= 24 {
			next := le64(b[0:])
			namlen := int(le32(b[16:]))
			kind := b[20]
			if len(b) < 24+namlen {
				break // cut off: read again from cookie
			}
			name := string(b[24 : 24+namlen])
			b = b[24+namlen:]
			cookie = next
			if name != "." && name != ".." {
				out = append(out, Entry{Name: name, kind: kind})
			}
			complete = len(b) == 0
		}
		if int(used) < len(buf) {
			return out, buf, nil
		}
		if len(buf) < readDirMax || !complete && len(b) == int(used) {
			// Full: a large directory, read in fewer calls with a larger
			// buffer; or not even one entry fit.
			buf = make([]byte, 2*len(buf))
		}
	}
}

// SortEntries sorts entries by name. The host lists small directories
// sorted already (a sort costs a guest a function call a comparison): a
// sorted listing is only checked.
func SortEntries(entries []Entry) {
	for i := 1; i < len(entries); i++ {
		if entries[i].Name < entries[i-1].Name {
			slices.SortFunc(entries, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
			return
		}
	}
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func le64(b []byte) uint64 { return uint64(le32(b)) | uint64(le32(b[4:]))<<32 }

//go:wasmimport extism:host/user toolhost_fs_submit
func fsSubmit(dir unsafe.Pointer, dirLen uint32, names unsafe.Pointer, namesLen uint32, max int64, filter unsafe.Pointer, filterLen uint32, flags uint32) int32

// toolhost_fs_submit's flags.
const (
	flagFold = 1 // the filter matches in either case
	flagStat = 2 // examine the files instead of reading them
)

//go:wasmimport extism:host/user toolhost_fs_take
func fsTake(out unsafe.Pointer, outCap uint32, wait uint32) int32

// Batch reads many files through the host at once (toolhost_fs_submit and
// toolhost_fs_take, docs/wasm.md): the host reads the files named while
// the guest goes on, and hands them over in the order they were named,
// many per call. A walk that reads every file it meets saves the four WASI
// calls per file this way, and the host reads on two goroutines. The zero
// Batch is ready to use.
type Batch struct {
	off     bool   // the host cannot batch: Submit reports ErrNoBatch
	names   []byte // scratch for Submit
	buf     []byte // what the last take wrote
	at      int    // next record in buf
	pending int    // files named and not yet returned by Next
	// runs says, in order, how many files each submit named and whether
	// it examined them (SubmitStat): the records do not.
	runs []run
}

type run struct {
	n    int
	stat bool
}

// ErrNoBatch is Submit's answer when the host does not read in batches
// (not on Linux, say): the caller reads file by file.
var ErrNoBatch = syscall.ENOSYS

// What a file read with a filter can come back as instead of its bytes.
var (
	ErrBinary  = syscall.EILSEQ // a NUL byte in its first 8 KiB
	ErrNoMatch = syscall.ENOMSG // the filter is not in it
)

// BatchMaxQueued is how many files may be named and not yet returned by
// Next; Submit refuses more.
const BatchMaxQueued = 1 << 14

// Pending returns how many files were named and not yet returned by Next.
func (b *Batch) Pending() int { return b.pending }

// Submit names files of the directory dir (a path Resolve returned, or
// one joined below it) to be read, each if it is a regular file of at most
// max bytes (the host reads at most 1 MiB per file; a larger file comes
// back as too large, with its size). names are single path elements. With
// a filter, a binary file (a NUL byte in its first 8 KiB) comes back as
// ErrBinary and one that does not hold filter as ErrNoMatch, without its
// bytes. With fold, filter (ASCII, lower case) is matched in either case;
// files it cannot rule out come back whole.
func (b *Batch) Submit(dir string, names []string, max int64, filter []byte, fold bool) error {
	var flags uint32
	if fold {
		flags |= flagFold
	}
	return b.submit(dir, names, max, filter, flags)
}

// SubmitStat names files of the directory dir to be examined, without
// following a symbolic link, instead of read: Next returns each with its
// Info, or an Err that says why not.
func (b *Batch) SubmitStat(dir string, names []string) error {
	return b.submit(dir, names, 1, nil, flagStat)
}

func (b *Batch) submit(dir string, names []string, max int64, filter []byte, flags uint32) error {
	if b.off {
		return ErrNoBatch
	}
	if len(names) == 0 {
		return nil
	}
	if b.pending+len(names) > BatchMaxQueued {
		return syscall.EAGAIN
	}
	b.names = b.names[:0]
	for i, n := range names {
		if i > 0 {
			b.names = append(b.names, 0)
		}
		b.names = append(b.names, n...)
	}
	var fp unsafe.Pointer
	if len(filter) > 0 {
		fp = unsafe.Pointer(&filter[0])
	}
	r := fsSubmit(unsafe.Pointer(unsafe.StringData(dir)), uint32(len(dir)), unsafe.Pointer(&b.names[0]), uint32(len(b.names)), max, fp, uint32(len(filter)), flags)
	if r < 0 {
		if syscall.Errno(-r) == syscall.ENOSYS {
			b.off = true
		}
		return syscall.Errno(-r)
	}
	b.pending += int(r)
	b.runs = append(b.runs, run{n: int(r), stat: flags&flagStat != 0})
	return nil
}

// statsOnly reports whether every file pending was named by SubmitStat.
func (b *Batch) statsOnly() bool {
	for _, r := range b.runs {
		if !r.stat {
			return false
		}
	}
	return true
}

// Read is one file a Batch read: Err is nil and Data its bytes (valid
// until the next call of Next), or Err says why not; with syscall.EFBIG,
// Size is the file's size. For a file SubmitStat named, Info is what
// Lstat would say.
type Read struct {
	Err  error
	Size int64
	Data []byte
	Info Info
}

// Next returns the next file named, in the order named. With wait false
// it returns false when that file is not read yet; with wait true it
// waits for it. It returns false when no file is pending.
func (b *Batch) Next(wait bool) (Read, bool) {
	if b.at >= len(b.buf) {
		if b.pending == 0 || !b.take(wait) {
			return Read{}, false
		}
	}
	h := b.buf[b.at:]
	status := syscall.Errno(le32(h))
	n := int(le32(h[4:]))
	size := int64(le64(h[8:]))
	b.at += 16
	b.pending--
	data := b.buf[b.at : b.at+n : b.at+n]
	b.at += n
	stat := false
	if len(b.runs) > 0 {
		stat = b.runs[0].stat
		if b.runs[0].n--; b.runs[0].n <= 0 {
			b.runs = b.runs[1:]
		}
	}
	if status != 0 {
		return Read{Err: status, Size: size}, true
	}
	if stat {
		if n < 9 {
			return Read{Err: syscall.EIO}, true
		}
		return Read{Size: size, Info: Info{Kind: data[8], Size: size, Mtime: int64(le64(data))}}, true
	}
	return Read{Size: size, Data: data}, true
}

// Sizes of the buffer take fills: files read need room (the host reads
// ahead while the guest works); a stat's record is 32 bytes, and a large
// buffer costs a fresh instance more to allocate (heap growth, zeroing)
// than the host takes to examine a small directory.
const (
	takeBufRead = 256 << 10
	statRecord  = 32
)

// take fills buf with the next records.
func (b *Batch) take(wait bool) bool {
	want := takeBufRead
	if b.statsOnly() {
		want = min(max(b.pending*statRecord, 1<<10), takeBufRead)
	}
	if cap(b.buf) < want {
		b.buf = make([]byte, want)
	}
	b.buf = b.buf[:cap(b.buf)]
	w := uint32(0)
	if wait {
		w = 1
	}
	for {
		n := fsTake(unsafe.Pointer(&b.buf[0]), uint32(len(b.buf)), w)
		switch {
		case n > 0:
			b.buf, b.at = b.buf[:n], 0
			return true
		case n == 0:
			b.buf, b.at = b.buf[:0], 0
			if wait {
				b.pending, b.runs = 0, nil // the host has nothing queued
			}
			return false
		case -n > int32(len(b.buf)):
			b.buf = make([]byte, -n)
		default:
			// An error the host should not give; what was named is lost.
			b.buf, b.at, b.pending, b.runs = b.buf[:0], 0, 0, nil
			return false
		}
	}
}
