package hostfs

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"os"
	"strings"
	"sync"

	"github.com/toolhost/toolhost/extism/internal/fold"
	"github.com/toolhost/toolhost/extism/internal/wasi"
)

// Reading many files through the host in one go (toolhost_fs_submit and
// toolhost_fs_take, docs/wasm.md). A guest that reads every file of a tree
// (filesystem.search) pays, through WASI, four host calls per file and
// the host's own per-file bookkeeping, one file after the other. Here the
// guest names the regular files of a directory in one call; two host
// goroutines open and read them while the guest goes on walking; the guest
// then takes the contents, in the order it named them, many files per call.
// A take that would wait reads (or examines) files itself, and small
// batches of stats are left to it entirely (Take, InlineStats).
//
// The boundary is the one WASI has: the directory is opened through the
// mount's os.Root, so it lies inside the mount, and each name is one path
// element opened relative to it without following a symbolic link. A name
// that is a link, a directory or anything but a regular file is answered
// with an error, not read. Bytes taken count against file_bytes_read.

// Bounds of one call's batch reading.
const (
	// batchWorkers is how many goroutines read one call's files.
	batchWorkers = 2
	// InlineStats is how many files may wait to be examined before
	// workers start on them; fewer are left to the guest's next take,
	// which examines them on its own thread.
	InlineStats = 256
	// MaxFile is the largest file read in a batch; a larger one is
	// answered EFBIG with its size, for the guest to read itself.
	MaxFile = 1 << 20
	// batchMaxQueued is how many files may be named and not yet taken.
	batchMaxQueued = 1 << 14
	// MaxDirs is how many directories one call's reading holds open
	// (those with files named and not yet read).
	MaxDirs = 64
	// batchMaxAhead is how many bytes may be read and not yet taken
	// (buffers held, and what a filter read and dropped); reading pauses
	// there until the guest takes.
	batchMaxAhead = 2 << 20
	// MaxNames bounds the names of one submit, in bytes.
	MaxNames = 1 << 20
	// MaxFilter bounds a submit's filter.
	MaxFilter = 4 << 10
	// BinaryPrefix is how much of a file is looked at for a NUL byte,
	// the sign of a binary file (as git and grep tell).
	BinaryPrefix = 8 << 10
	// RecordHeader is the size of a record's header in the take buffer:
	// status (u32), the length of the data that follows (u32), size
	// (u64), all little-endian.
	RecordHeader = 16
)

// Buffers for files read, in size classes of powers of two from 4 KiB to
// 2 MiB (room for MaxFile and the byte more that tells the end),
// reused across calls.
var buffers [10]sync.Pool

// bufferClass returns the class of buffers of at least n bytes.
func bufferClass(n int) int { return max(0, bits.Len(uint(n-1))-12) }

// getBuffer returns an empty buffer of capacity at least n (at most
// MaxFile+1: a larger one is made).
func getBuffer(n int) []byte {
	c := bufferClass(n)
	if c >= len(buffers) {
		return make([]byte, 0, n)
	}
	if p, _ := buffers[c].Get().(*[]byte); p != nil {
		return (*p)[:0]
	}
	return make([]byte, 0, 4<<10<<c)
}

// putBuffer gives back a buffer getBuffer made.
func putBuffer(b []byte) {
	c := bufferClass(cap(b))
	if cap(b) == 0 || c >= len(buffers) || cap(b) != 4<<10<<c {
		return
	}
	b = b[:0]
	buffers[c].Put(&b)
}

// batchDir is a directory of which files are named, open while some are
// not yet read.
type batchDir struct {
	path string // as the guest named it
	f    *os.File
	fd   int // f's descriptor, valid while f is open
	refs int // files not yet read
}

// batchJob is one file named by a submit.
type batchJob struct {
	dir    *batchDir
	name   string
	max    int64
	filter *Filter // if set, the file is only returned if it holds it
	stat   bool    // examine the file instead of reading it

	done   bool
	status uint32 // WASI errno; 0 when data holds the file
	size   int64
	data   []byte
	held   int64    // what it counts in ahead
	meta   [16]byte // a stat's record data
}

// BatchReader is one call's batch reading. Its goroutines stop when the
// call ends (stop).
type BatchReader struct {
	mu      sync.Mutex
	work    sync.Cond // workers wait here for room (ahead) and stop
	ready   chan struct{}
	jobs    []*batchJob // named and not yet taken, in order
	next    int         // index in jobs of the next to read
	running int
	ahead   int64 // bytes read and not yet taken
	dirs    map[string]*batchDir
	stopped bool
	wg      sync.WaitGroup
}

// NewBatchReader returns a reader with nothing named yet.
func NewBatchReader() *BatchReader {
	b := &BatchReader{ready: make(chan struct{}, 1), dirs: map[string]*batchDir{}}
	b.work.L = &b.mu
	return b
}

// Stop ends the reading: running reads finish, nothing else is read, and
// every directory is closed. The guest's call is over.
func (b *BatchReader) Stop() {
	b.mu.Lock()
	b.stopped = true
	b.work.Broadcast()
	b.mu.Unlock()
	b.wg.Wait()
	for i, j := range b.jobs {
		if i >= b.next {
			b.release(j.dir)
		}
		putBuffer(j.data)
	}
	b.jobs, b.next = nil, 0
}

// release drops a reference to d, closing it after the last.
func (b *BatchReader) release(d *batchDir) {
	if d.refs--; d.refs == 0 {
		d.f.Close()
		delete(b.dirs, d.path)
	}
}

// Submit queues names (files of the guest directory dir, which open
// opens) for reading; the workers start if they are not running. It
// returns a WASI errno.
func (b *BatchReader) Submit(dir string, open func() (*os.File, uint32), names []string, max int64, filter *Filter, stat bool) uint32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return wasi.EBADF
	}
	if len(names) > batchMaxQueued {
		return wasi.EINVAL // taking would not make room
	}
	if len(b.jobs)+len(names) > batchMaxQueued {
		return wasi.EAGAIN
	}
	d := b.dirs[dir]
	if d == nil {
		if len(b.dirs) >= MaxDirs {
			return wasi.EAGAIN
		}
		f, e := open()
		if e != 0 {
			return e
		}
		d = &batchDir{path: dir, f: f, fd: -1}
		if rc, err := f.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) { d.fd = int(fd) })
		}
		b.dirs[dir] = d
	}
	d.refs += len(names)
	jobs := make([]batchJob, len(names))
	for i, n := range names {
		jobs[i] = batchJob{dir: d, name: n, max: max, filter: filter, stat: stat}
		b.jobs = append(b.jobs, &jobs[i])
	}
	if stat && len(b.jobs)-b.next <= InlineStats {
		return 0 // the guest's take examines them (Take)
	}
	for b.running < batchWorkers && b.running < len(b.jobs)-b.next {
		b.running++
		b.wg.Add(1)
		go b.read()
	}
	return 0
}

// read is a worker: it reads the next file named until none is left, the
// reader is stopped, or (waiting) too much is read ahead.
func (b *BatchReader) read() {
	defer b.wg.Done()
	var scratch []byte // the filter's
	b.mu.Lock()
	defer b.mu.Unlock()
	for !b.stopped && b.next < len(b.jobs) {
		if b.ahead >= batchMaxAhead {
			b.work.Wait()
			continue
		}
		b.runNext(&scratch)
	}
	b.running--
}

// runNext reads (or examines) the next file not yet started. It is called
// with b.mu held, which it releases while it works.
func (b *BatchReader) runNext(scratch *[]byte) {
	j := b.jobs[b.next]
	b.next++
	b.mu.Unlock()
	if j.stat {
		j.status, j.size = statBatchFile(j.dir.fd, j.name, &j.meta)
		if j.status == 0 {
			j.data = j.meta[:]
		}
	} else {
		j.status, j.size, j.data = readBatchFile(j.dir.fd, j.name, j.max)
		j.applyFilter(scratch)
	}
	j.held = int64(cap(j.data))
	if j.data == nil {
		j.held = j.bytesRead() // a filter's answer: read all the same
	}
	b.mu.Lock()
	b.release(j.dir)
	j.done = true
	b.ahead += j.held
	if j == b.jobs[0] {
		// The file a waiting take needs next (it takes the files after
		// it that are read too): one wake-up, not one a file.
		select {
		case b.ready <- struct{}{}:
		default:
		}
	}
}

// NewFilter returns the filter of files that hold needle, matched in
// either case (ASCII; needle must then be lower case) if fold is set. It
// returns nil and false for a fold needle that is not lower-case ASCII.
func NewFilter(needle []byte, fold bool) (*Filter, bool) {
	if fold && !isLowerASCII(needle) {
		return nil, false
	}
	return &Filter{needle: bytes.Clone(needle), fold: fold}, true
}

// isLowerASCII reports whether b is ASCII without upper-case letters.
func isLowerASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 || 'A' <= c && c <= 'Z' {
			return false
		}
	}
	return true
}

// OpenDir opens the guest directory dir (an absolute, clean guest path)
// through the os.Root of the mount among mounts that holds it (the
// longest guest path that is dir or a parent of it). It returns a WASI
// errno when it cannot.
func OpenDir(mounts []*FS, dir string) (*os.File, uint32) {
	var m *FS
	rel := ""
	for _, r := range mounts {
		if r == nil {
			continue
		}
		g := r.guest
		var ok bool
		var p string
		switch {
		case dir == g:
			ok, p = true, "."
		case g == "/":
			ok, p = true, dir[1:]
		case strings.HasPrefix(dir, g) && dir[len(g)] == '/':
			ok, p = true, dir[len(g)+1:]
		}
		if ok && (m == nil || len(g) > len(m.guest)) {
			m, rel = r, p
		}
	}
	if m == nil {
		return nil, wasi.ENOENT
	}
	f, err := m.root.Open(rel)
	if err != nil {
		return nil, wasi.Errno(err)
	}
	fi, err := f.Stat()
	if err != nil || !fi.IsDir() {
		f.Close()
		if err != nil {
			return nil, wasi.Errno(err)
		}
		return nil, wasi.ENOTDIR
	}
	return f, 0
}

// Filter is what a file must hold to be returned whole.
type Filter struct {
	needle []byte
	// fold: matched in either case by package fold's rule (needle is
	// ASCII, lower case), which the search guest follows too: the filter
	// drops only files that certainly do not match.
	fold bool
}

// holds reports whether data may hold the needle; scratch is a buffer
// of the caller's, for a lower-case copy.
func (f *Filter) holds(data []byte, scratch *[]byte) bool {
	if !f.fold {
		return bytes.Contains(data, f.needle)
	}
	if fold.BeyondASCII(data, f.needle) {
		return true
	}
	*scratch = fold.Lower(*scratch, data)
	return bytes.Contains(*scratch, f.needle)
}

// bytesRead is what reading the file counts against file_bytes_read: all
// of it when it was read whole (returned, or answered for by a filter).
func (j *batchJob) bytesRead() int64 {
	if j.stat {
		return 0
	}
	if j.status == 0 || j.status == wasi.EILSEQ || j.status == wasi.ENOMSG {
		return j.size
	}
	return 0
}

// applyFilter keeps a file read only if it is not binary and holds the
// filter (when there is one): the guest learns the outcome, not the bytes.
func (j *batchJob) applyFilter(scratch *[]byte) {
	if j.filter == nil || j.status != 0 {
		return
	}
	switch {
	case bytes.IndexByte(j.data[:min(len(j.data), BinaryPrefix)], 0) >= 0:
		j.status = wasi.EILSEQ
	case !j.filter.holds(j.data, scratch):
		j.status = wasi.ENOMSG
	default:
		return
	}
	putBuffer(j.data)
	j.data = nil
}

// Take writes the files read, in the order named, as records into out,
// as many whole records as fit. It returns the bytes written; 0 when
// nothing is queued (or, with wait false, nothing is read yet); or
// -needed when the next record alone does not fit. With wait, it waits
// for the next file until the call is over (done; over is then true),
// reading what is not
// started meanwhile; stats not started it makes in any case.
func (b *BatchReader) Take(out []byte, wait bool, done <-chan struct{}) (n int, taken int64, over bool) {
	var scratch []byte
	for {
		b.mu.Lock()
		// The taker works rather than wait: handing a file to a worker
		// and back costs two thread wake-ups, tens of microseconds
		// here, more than a stat or a small read. It examines every
		// file not started (a stat is cheap and holds no memory; small
		// batches of them have no workers), and, when it would wait,
		// reads until the file it needs is done (a worker may be on it).
		for !b.stopped && b.next < len(b.jobs) && b.ahead < batchMaxAhead &&
			(b.jobs[b.next].stat || wait && !b.jobs[0].done) {
			b.runNext(&scratch)
		}
		i := 0
		for ; i < len(b.jobs) && b.jobs[i].done; i++ {
			j := b.jobs[i]
			need := RecordHeader + len(j.data)
			if n+need > len(out) {
				if n == 0 {
					b.mu.Unlock()
					return -need, 0, false
				}
				break
			}
			rec := out[n : n+need]
			binary.LittleEndian.PutUint32(rec[0:], j.status)
			binary.LittleEndian.PutUint32(rec[4:], uint32(len(j.data)))
			binary.LittleEndian.PutUint64(rec[8:], uint64(j.size))
			copy(rec[RecordHeader:], j.data)
			n += need
			taken += j.bytesRead()
			b.ahead -= j.held
			putBuffer(j.data)
			j.data = nil
			b.jobs[i] = nil
		}
		if i > 0 {
			b.jobs = b.jobs[i:]
			b.next -= i
			if len(b.jobs) == 0 {
				b.jobs = b.jobs[:0:0]
			}
			b.work.Broadcast()
		}
		pending := len(b.jobs) > 0
		b.mu.Unlock()
		if n > 0 || !pending || !wait {
			return n, taken, false
		}
		select {
		case <-b.ready:
		case <-done:
			return 0, taken, true
		}
	}
}
