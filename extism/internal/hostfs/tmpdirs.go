package hostfs

import (
	"io"
	"os"
	"sync"
	"time"
)

// TmpDirs recycles the per-call /tmp directories. Creating a directory and
// removing it again cost ~250 µs of a fresh-instance call here (mkdir is
// the slowest system call a call makes), yet most calls never write to
// /tmp. A directory goes back to the pool only as it was handed out: empty,
// mode 0700 and its modification time unchanged, which rules out anything
// a guest did there (a file created and deleted again changes the time).
// Anything else is removed, as before. A recycled directory therefore
// carries nothing from one call to the next.
type TmpDirs struct {
	// Base is the directory the temp dirs are made in ("" for the
	// system's).
	Base string

	mu     sync.Mutex
	free   []*TmpDir
	closed bool
}

// TmpDir is one per-call directory, opened as a root.
type TmpDir struct {
	path  string
	root  *os.Root
	mtime time.Time
}

// maxFreeTmpDirs bounds the directories kept for reuse: more than the
// instances a host usually has in pools and in calls at once.
const maxFreeTmpDirs = 64

// Get returns an empty directory of its own for one instance.
func (p *TmpDirs) Get() (*TmpDir, error) {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		d := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return d, nil
	}
	p.mu.Unlock()
	path, err := os.MkdirTemp(p.Base, "toolhost-call-")
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(path)
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	d := &TmpDir{path: path, root: root}
	if fi, err := root.Stat("."); err == nil {
		d.mtime = fi.ModTime()
	}
	return d, nil
}

// Put takes a directory back after its instance closed: kept if untouched,
// removed otherwise. The error is from removing it.
func (p *TmpDirs) Put(d *TmpDir) error {
	if d.pristine() {
		p.mu.Lock()
		if !p.closed && len(p.free) < maxFreeTmpDirs {
			p.free = append(p.free, d)
			p.mu.Unlock()
			return nil
		}
		p.mu.Unlock()
	}
	return d.remove()
}

// pristine reports whether the directory is as get handed it out.
func (d *TmpDir) pristine() bool {
	if d.mtime.IsZero() {
		return false
	}
	f, err := d.root.Open(".")
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 || !fi.ModTime().Equal(d.mtime) {
		return false
	}
	_, err = f.Readdirnames(1)
	return err == io.EOF
}

// Path is the directory on the host.
func (d *TmpDir) Path() string { return d.path }

// Mount returns the filesystem of the directory, seen by the guest at
// guest. The directory's root stays the TmpDir's (the FS does not close
// it). meter may be nil.
func (d *TmpDir) Mount(guest string, meter Meter) *FS {
	return &FS{root: d.root, guest: guest, meter: meter}
}

func (d *TmpDir) remove() error {
	d.root.Close()
	return os.RemoveAll(d.path)
}

// Close removes the kept directories; later put calls keep nothing.
func (p *TmpDirs) Close() {
	p.mu.Lock()
	free := p.free
	p.free, p.closed = nil, true
	p.mu.Unlock()
	for _, d := range free {
		d.remove()
	}
}
