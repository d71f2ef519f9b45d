package extism

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io/fs"
	"math/bits"
	"os"
	"path"
	"strings"
	"sync"
	"syscall"

	extism "github.com/extism/go-sdk"

	"github.com/toolhost/toolhost/extism/internal/fold"
)

// Reading many files through the host in one go (toolhost_fs_submit and
// toolhost_fs_take, docs/wasm.md). A guest that reads every file of a tree
// (filesystem.search) pays, through WASI, four host calls per file and
// the host's own per-file bookkeeping, one file after the other. Here the
// guest names the regular files of a directory in one call; two host
// goroutines open and read them while the guest goes on walking; the guest
// then takes the contents, in the order it named them, many files per call.
// A take that would wait reads (or examines) files itself, and small
// batches of stats are left to it entirely (take, batchInlineStats).
//
// The boundary is the one WASI has: the directory is opened through the
// mount's os.Root, so it lies inside the mount, and each name is one path
// element opened relative to it without following a symbolic link. A name
// that is a link, a directory or anything but a regular file is answered
// with an error, not read. Bytes taken count against file_bytes_read.

// Host function names, imported by guests from module "extism:host/user".
const (
	hostFSSubmit = "toolhost_fs_submit"
	hostFSTake   = "toolhost_fs_take"
)

// Bounds of one call's batch reading.
const (
	// batchWorkers is how many goroutines read one call's files.
	batchWorkers = 2
	// batchInlineStats is how many files may wait to be examined before
	// workers start on them; fewer are left to the guest's next take,
	// which examines them on its own thread.
	batchInlineStats = 256
	// batchMaxFile is the largest file read in a batch; a larger one is
	// answered EFBIG with its size, for the guest to read itself.
	batchMaxFile = 1 << 20
	// batchMaxQueued is how many files may be named and not yet taken.
	batchMaxQueued = 1 << 14
	// batchMaxDirs is how many directories one call's reading holds open
	// (those with files named and not yet read).
	batchMaxDirs = 64
	// batchMaxAhead is how many bytes may be read and not yet taken
	// (buffers held, and what a filter read and dropped); reading pauses
	// there until the guest takes.
	batchMaxAhead = 2 << 20
	// batchMaxNames bounds the names of one submit, in bytes.
	batchMaxNames = 1 << 20
	// batchMaxFilter bounds a submit's filter.
	batchMaxFilter = 4 << 10
	// binaryPrefix is how much of a file is looked at for a NUL byte,
	// the sign of a binary file (as git and grep tell).
	binaryPrefix = 8 << 10
	// recordHeader is the size of a record's header in the take buffer:
	// status (u32), the length of the data that follows (u32), size
	// (u64), all little-endian.
	recordHeader = 16
)

// WASI errno values (wasi_snapshot_preview1), as the batch calls return
// them.
const (
	wasiEACCES       = 2
	wasiEAGAIN       = 6
	wasiEBADF        = 8
	wasiEFAULT       = 21
	wasiEFBIG        = 22
	wasiEILSEQ       = 25
	wasiEINVAL       = 28
	wasiEIO          = 29
	wasiEISDIR       = 31
	wasiELOOP        = 32
	wasiEMFILE       = 33
	wasiENAMETOOLONG = 37
	wasiENFILE       = 41
	wasiENOENT       = 44
	wasiENOMEM       = 48
	wasiENOMSG       = 49
	wasiENOSYS       = 52
	wasiENOTDIR      = 54
	wasiENXIO        = 60
	wasiEPERM        = 63
)

// wasiErrno maps a host error to its WASI errno.
func wasiErrno(err error) uint32 {
	var en syscall.Errno
	if !errors.As(err, &en) {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return wasiENOENT
		case errors.Is(err, fs.ErrPermission):
			return wasiEACCES
		case strings.Contains(err.Error(), "escapes"):
			return wasiEPERM
		}
		return wasiEIO
	}
	switch en {
	case syscall.ENOENT:
		return wasiENOENT
	case syscall.ELOOP, syscall.EMLINK:
		return wasiELOOP // O_NOFOLLOW on a symbolic link
	case syscall.EACCES:
		return wasiEACCES
	case syscall.EPERM:
		return wasiEPERM
	case syscall.EISDIR:
		return wasiEISDIR
	case syscall.ENOTDIR:
		return wasiENOTDIR
	case syscall.EFBIG:
		return wasiEFBIG
	case syscall.EMFILE:
		return wasiEMFILE
	case syscall.ENFILE:
		return wasiENFILE
	case syscall.ENOMEM:
		return wasiENOMEM
	case syscall.ENAMETOOLONG:
		return wasiENAMETOOLONG
	case syscall.EAGAIN:
		return wasiEAGAIN
	case syscall.ENXIO:
		return wasiENXIO // a socket
	}
	return wasiEIO
}

// Buffers for files read, in size classes of powers of two from 4 KiB to
// 2 MiB (room for batchMaxFile and the byte more that tells the end),
// reused across calls.
var buffers [10]sync.Pool

// bufferClass returns the class of buffers of at least n bytes.
func bufferClass(n int) int { return max(0, bits.Len(uint(n-1))-12) }

// getBuffer returns an empty buffer of capacity at least n (at most
// batchMaxFile+1: a larger one is made).
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
	filter *batchFilter // if set, the file is only returned if it holds it
	stat   bool         // examine the file instead of reading it

	done   bool
	status uint32 // WASI errno; 0 when data holds the file
	size   int64
	data   []byte
	held   int64    // what it counts in ahead
	meta   [16]byte // a stat's record data
}

// batchReader is one call's batch reading. Its goroutines stop when the
// call ends (stop).
type batchReader struct {
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

func newBatchReader() *batchReader {
	b := &batchReader{ready: make(chan struct{}, 1), dirs: map[string]*batchDir{}}
	b.work.L = &b.mu
	return b
}

// stop ends the reading: running reads finish, nothing else is read, and
// every directory is closed. The guest's call is over.
func (b *batchReader) stop() {
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
func (b *batchReader) release(d *batchDir) {
	if d.refs--; d.refs == 0 {
		d.f.Close()
		delete(b.dirs, d.path)
	}
}

// submit queues names (files of the guest directory dir, which open
// opens) for reading; the workers start if they are not running. It
// returns a WASI errno.
func (b *batchReader) submit(dir string, open func() (*os.File, uint32), names []string, max int64, filter *batchFilter, stat bool) uint32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return wasiEBADF
	}
	if len(names) > batchMaxQueued {
		return wasiEINVAL // taking would not make room
	}
	if len(b.jobs)+len(names) > batchMaxQueued {
		return wasiEAGAIN
	}
	d := b.dirs[dir]
	if d == nil {
		if len(b.dirs) >= batchMaxDirs {
			return wasiEAGAIN
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
	if stat && len(b.jobs)-b.next <= batchInlineStats {
		return 0 // the guest's take examines them (take)
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
func (b *batchReader) read() {
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
func (b *batchReader) runNext(scratch *[]byte) {
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

// batchFilter is what a file must hold to be returned whole.
type batchFilter struct {
	needle []byte
	// fold: matched in either case by package fold's rule (needle is
	// ASCII, lower case), which the search guest follows too: the filter
	// drops only files that certainly do not match.
	fold bool
}

// holds reports whether data may hold the needle; scratch is a buffer
// of the caller's, for a lower-case copy.
func (f *batchFilter) holds(data []byte, scratch *[]byte) bool {
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
	if j.status == 0 || j.status == wasiEILSEQ || j.status == wasiENOMSG {
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
	case bytes.IndexByte(j.data[:min(len(j.data), binaryPrefix)], 0) >= 0:
		j.status = wasiEILSEQ
	case !j.filter.holds(j.data, scratch):
		j.status = wasiENOMSG
	default:
		return
	}
	putBuffer(j.data)
	j.data = nil
}

// take writes the files read, in the order named, as records into out,
// as many whole records as fit. It returns the bytes written; 0 when
// nothing is queued (or, with wait false, nothing is read yet); or
// -needed when the next record alone does not fit. With wait, it waits
// for the next file until the call is over (done), reading what is not
// started meanwhile; stats not started it makes in any case.
func (b *batchReader) take(out []byte, wait bool, done <-chan struct{}) (n int, taken int64) {
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
			need := recordHeader + len(j.data)
			if n+need > len(out) {
				if n == 0 {
					b.mu.Unlock()
					return -need, 0
				}
				break
			}
			rec := out[n : n+need]
			binary.LittleEndian.PutUint32(rec[0:], j.status)
			binary.LittleEndian.PutUint32(rec[4:], uint32(len(j.data)))
			binary.LittleEndian.PutUint64(rec[8:], uint64(j.size))
			copy(rec[recordHeader:], j.data)
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
			return n, taken
		}
		select {
		case <-b.ready:
		case <-done:
			panic(errCallOver)
		}
	}
}

// batchDirFor opens the guest directory dir (an absolute, clean guest
// path) through the os.Root of the mount holding it.
func (inst *instance) batchDirFor(dir string) (*os.File, uint32) {
	var m *rootFS
	rel := ""
	for _, r := range append(inst.mounts[:len(inst.mounts):len(inst.mounts)], inst.tmpFS) {
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
		return nil, wasiENOENT
	}
	f, err := m.root.Open(rel)
	if err != nil {
		return nil, wasiErrno(err)
	}
	fi, err := f.Stat()
	if err != nil || !fi.IsDir() {
		f.Close()
		if err != nil {
			return nil, wasiErrno(err)
		}
		return nil, wasiENOTDIR
	}
	return f, 0
}

// fsSubmit is toolhost_fs_submit(dir, dir_len, names, names_len, max,
// filter, filter_len, flags): read the files names (NUL-separated, each
// one element) of the directory dir (an absolute guest path) in the
// background, each at most max bytes (at most batchMaxFile). With a filter
// (filter_len > 0), a file with a NUL byte in its first 8 KiB comes back
// as EILSEQ, and one that does not hold the filter as ENOMSG, without
// their bytes; flags bit 0 (fsFold) matches the filter (ASCII, lower case)
// in either case; bit 1 (fsStat) examines the files instead of reading
// them. It returns the number of files queued, or -errno.
func fsSubmit(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
	inst := instanceFrom(ctx)
	ret := func(v int32) { stack[0] = uint64(uint32(v)) }
	if inst == nil || inst.req == nil || !batchSupported {
		ret(-wasiENOSYS)
		return
	}
	inst.stopIfOver()
	mem := inst.moduleMemory()
	if mem == nil {
		ret(-wasiENOSYS)
		return
	}
	dirB, ok1 := guestBytes(mem, stack[0], stack[1])
	namesB, ok2 := guestBytes(mem, stack[2], stack[3])
	filterB, ok3 := guestBytes(mem, stack[5], stack[6])
	if !ok1 || !ok2 || !ok3 {
		ret(-wasiEFAULT)
		return
	}
	max := int64(stack[4])
	dir := string(dirB)
	if max <= 0 || len(namesB) == 0 || len(namesB) > batchMaxNames || len(filterB) > batchMaxFilter || len(dir) > 4096 ||
		!strings.HasPrefix(dir, "/") || path.Clean(dir) != dir || strings.IndexByte(dir, 0) >= 0 {
		ret(-wasiEINVAL)
		return
	}
	max = min(max, batchMaxFile)
	names := strings.Split(string(namesB), "\x00")
	for _, n := range names {
		if n == "" || n == "." || n == ".." || len(n) > 255 || strings.IndexByte(n, '/') >= 0 {
			ret(-wasiEINVAL)
			return
		}
	}
	if inst.batch == nil {
		inst.batch = newBatchReader()
	}
	flags := uint32(stack[7])
	stat := flags&fsStat != 0
	var filter *batchFilter
	switch {
	case flags&^(fsFold|fsStat) != 0, stat && (len(filterB) > 0 || flags&fsFold != 0):
		ret(-wasiEINVAL)
		return
	case len(filterB) > 0:
		filter = &batchFilter{needle: bytes.Clone(filterB), fold: flags&fsFold != 0}
		if filter.fold && !isLowerASCII(filterB) {
			ret(-wasiEINVAL)
			return
		}
	}
	open := func() (*os.File, uint32) { return inst.batchDirFor(dir) }
	if e := inst.batch.submit(dir, open, names, max, filter, stat); e != 0 {
		ret(-int32(e))
		return
	}
	ret(int32(len(names)))
}

// fsTake is toolhost_fs_take(out, out_cap, wait): the files read so far,
// in the order named, as records of a 16-byte header (status: 0 or a WASI
// errno; the length of the data that follows; the file's size) and the
// data (a file's bytes, or with fsStat its time and type), one record
// after the other. It
// returns the bytes written, 0 when no file is queued (or, with wait 0,
// none is read yet), -needed when the next record does not fit in
// out_cap, or -errno.
func fsTake(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
	inst := instanceFrom(ctx)
	ret := func(v int32) { stack[0] = uint64(uint32(v)) }
	if inst == nil || inst.req == nil {
		ret(-wasiENOSYS)
		return
	}
	inst.stopIfOver()
	if inst.batch == nil {
		ret(0)
		return
	}
	mem := inst.moduleMemory()
	out, ok := guestBytes(mem, stack[0], stack[1])
	if mem == nil || !ok {
		ret(-wasiEFAULT)
		return
	}
	n, taken := inst.batch.take(out, uint32(stack[2]) != 0, inst.callDone)
	if taken > 0 && !inst.fileRead(taken) {
		panic(errCallOver)
	}
	ret(int32(n))
}

// toolhost_fs_submit's flags: fsFold matches the filter in either case;
// fsStat examines each file (without following a symbolic link) instead
// of reading it, each record's data then the file's modification time (ns
// since the epoch, i64) and WASI file type (u8), 16 bytes.
const (
	fsFold = 1
	fsStat = 2
)

// isLowerASCII reports whether b is ASCII without upper-case letters.
func isLowerASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 || 'A' <= c && c <= 'Z' {
			return false
		}
	}
	return true
}

// guestBytes is the guest memory [ptr, ptr+n), or false if it is out of
// bounds.
func guestBytes(mem []byte, ptr, n uint64) ([]byte, bool) {
	ptr, n = uint64(uint32(ptr)), uint64(uint32(n))
	if ptr+n > uint64(len(mem)) {
		return nil, false
	}
	return mem[ptr : ptr+n : ptr+n], true
}
