package hostfs

import (
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// openPlain opens p (a path within the mount, as rootPath returns it) for
// reading as a bare descriptor, or returns nil to leave it to os.Root:
// when p's last element is a symbolic link (os.Root follows it, or
// refuses it if it leads out), when p must be a directory (dir) and is
// not, or when anything else goes wrong, whose error os.Root then
// reports. The directory holding p is opened through r.root, so it lies
// inside the mount; the last element is one name, neither "." nor "..",
// opened relative to it without following a symbolic link (O_NOFOLLOW).
// That is os.Root's own last step, without the os.File around the
// descriptor. The mount itself (p ".") is opened as "." relative to
// itself.
func (r *FS) openPlain(p string, dir bool) *hostFile {
	parent, name := ".", p
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		parent, name = p[:i], p[i+1:]
	}
	if name == "" || (name == "." && p != ".") || name == ".." || parent == "" {
		return nil
	}
	flags := unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY
	if dir {
		flags |= unix.O_DIRECTORY
	}
	if r.plainDir == nil || r.plainName != parent {
		r.dropPlainDir()
		d, err := r.root.Open(parent)
		if err != nil {
			return nil
		}
		r.plainDir, r.plainName = d, parent
	}
	var fd int
	rc, err := r.plainDir.SyscallConn()
	if err != nil {
		return nil
	}
	var oerr error
	if err := rc.Control(func(dfd uintptr) {
		oerr = ignoringEINTR(func() (err error) {
			fd, err = unix.Openat(int(dfd), name, flags, 0)
			return err
		})
	}); err != nil || oerr != nil {
		return nil
	}
	return &hostFile{fd: fd, name: p}
}

func (r *FS) dropPlainDir() {
	if r.plainDir != nil {
		r.plainDir.Close()
		r.plainDir, r.plainName = nil, ""
	}
}

func (l *hostFile) plainStat() (fs.FileInfo, error) {
	var st syscall.Stat_t
	if err := ignoringEINTR(func() error { return syscall.Fstat(l.fd, &st) }); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: l.name, Err: err}
	}
	return direntInfo{&dirent{name: path.Base(l.name), st: &st}}, nil
}

func (l *hostFile) plainRead(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	err := ignoringEINTR(func() (err error) {
		n, err = unix.Read(l.fd, b)
		return err
	})
	if err != nil {
		return 0, &fs.PathError{Op: "read", Path: l.name, Err: err}
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// plainReadAt reads len(b) bytes at off, or up to the end of the file.
func (l *hostFile) plainReadAt(b []byte, off int64) (int, error) {
	total := 0
	for total < len(b) {
		var n int
		err := ignoringEINTR(func() (err error) {
			n, err = unix.Pread(l.fd, b[total:], off+int64(total))
			return err
		})
		if err != nil {
			return total, &fs.PathError{Op: "read", Path: l.name, Err: err}
		}
		if n == 0 {
			return total, io.EOF
		}
		total += n
	}
	return total, nil
}

func (l *hostFile) plainSeek(off int64, whence int) (int64, error) {
	n, err := unix.Seek(l.fd, off, whence)
	if err != nil {
		return 0, &fs.PathError{Op: "seek", Path: l.name, Err: err}
	}
	return n, nil
}

func (l *hostFile) plainSync() error {
	if err := ignoringEINTR(func() error { return unix.Fsync(l.fd) }); err != nil {
		return &fs.PathError{Op: "sync", Path: l.name, Err: err}
	}
	return nil
}

func (l *hostFile) plainClose() error {
	if l.fd < 0 {
		return &fs.PathError{Op: "close", Path: l.name, Err: os.ErrClosed}
	}
	fd := l.fd
	l.fd = -1
	// Linux releases the descriptor even when close reports EINTR.
	if err := unix.Close(fd); err != nil && err != syscall.EINTR {
		return &fs.PathError{Op: "close", Path: l.name, Err: err}
	}
	return nil
}

func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); err != unix.EINTR {
			return err
		}
	}
}
