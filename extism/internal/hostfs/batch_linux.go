package hostfs

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/extism/internal/wasi"
)

// BatchSupported: files are read in batches (batch.go).
const BatchSupported = true

// readBatchFile reads the regular file name of the directory dirFD, at
// most limit bytes, into a buffer of getBuffer's. It opens name without
// following a symbolic link, and non-blocking, so that a FIFO put in a
// file's place cannot hold the read up; whatever is not a regular file is
// refused unread. It returns a WASI errno (0 when data holds the file),
// and the file's size.
func readBatchFile(dirFD int, name string, limit int64) (status uint32, size int64, data []byte) {
	if dirFD < 0 {
		return wasi.EBADF, 0, nil
	}
	var fd int
	if err := ignoringEINTR(func() (err error) {
		fd, err = unix.Openat(dirFD, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
		return err
	}); err != nil {
		return wasi.Errno(err), 0, nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
		return wasi.Errno(err), 0, nil
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		return wasi.EISDIR, 0, nil
	default:
		return wasi.EINVAL, 0, nil
	}
	if st.Size > limit {
		return wasi.EFBIG, st.Size, nil
	}
	// One byte more than the size, so that a file read whole is known to
	// be at its end after one read; a file that grew is read on.
	want := int(st.Size) + 1
	buf := getBuffer(want)
	buf = buf[:cap(buf)]
	n := 0
	for {
		if n == len(buf) {
			if int64(n) > limit {
				putBuffer(buf)
				return wasi.EFBIG, int64(n), nil
			}
			old := buf
			buf = append(getBuffer(2*n), old...)
			buf = buf[:cap(buf)]
			putBuffer(old)
		}
		var got int
		if err := ignoringEINTR(func() (err error) {
			got, err = unix.Read(fd, buf[n:])
			return err
		}); err != nil {
			putBuffer(buf)
			return wasi.Errno(err), 0, nil
		}
		if got == 0 {
			break
		}
		n += got
		if n < want && int64(n) == st.Size {
			// As large as it was, and the read stopped short of the
			// byte more: the end (a regular file reads whole).
			break
		}
	}
	if int64(n) > limit {
		putBuffer(buf)
		return wasi.EFBIG, int64(n), nil
	}
	if n == 0 {
		putBuffer(buf)
		return 0, 0, nil
	}
	return 0, int64(n), buf[:n]
}

// statBatchFile examines the file name of the directory dirFD without
// following a symbolic link: its size, and into meta its modification
// time and WASI file type (fsStat's record data).
func statBatchFile(dirFD int, name string, meta *[16]byte) (status uint32, size int64) {
	if dirFD < 0 {
		return wasi.EBADF, 0
	}
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstatat(dirFD, name, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		return wasi.Errno(err), 0
	}
	binary.LittleEndian.PutUint64(meta[0:], uint64(st.Mtim.Nano()))
	meta[8] = wasiFiletype(st.Mode)
	return 0, st.Size
}

// wasiFiletype is the WASI file type of a stat mode, as wazero reports it.
func wasiFiletype(mode uint32) byte {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return 4
	case unix.S_IFDIR:
		return 3
	case unix.S_IFLNK:
		return 7
	case unix.S_IFCHR:
		return 2
	case unix.S_IFBLK:
		return 1
	}
	return 0 // unknown: FIFOs and sockets, as wazero says of them
}
