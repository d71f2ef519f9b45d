// Package wasi holds the WASI errno values (wasi_snapshot_preview1) that
// toolhost's own host functions return to guests, and the mapping from host
// errors to them.
package wasi

import (
	"errors"
	"io/fs"
	"strings"
	"syscall"
)

// WASI errno values (wasi_snapshot_preview1).
const (
	EACCES       = 2
	EAGAIN       = 6
	EBADF        = 8
	EFAULT       = 21
	EFBIG        = 22
	EILSEQ       = 25
	EINVAL       = 28
	EIO          = 29
	EISDIR       = 31
	ELOOP        = 32
	EMFILE       = 33
	ENAMETOOLONG = 37
	ENFILE       = 41
	ENOENT       = 44
	ENOMEM       = 48
	ENOMSG       = 49
	ENOSYS       = 52
	ENOTDIR      = 54
	ENXIO        = 60
	EPERM        = 63
)

// Errno maps a host error to its WASI errno.
func Errno(err error) uint32 {
	var en syscall.Errno
	if !errors.As(err, &en) {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return ENOENT
		case errors.Is(err, fs.ErrPermission):
			return EACCES
		case strings.Contains(err.Error(), "escapes"):
			return EPERM
		}
		return EIO
	}
	switch en {
	case syscall.ENOENT:
		return ENOENT
	case syscall.ELOOP, syscall.EMLINK:
		return ELOOP // O_NOFOLLOW on a symbolic link
	case syscall.EACCES:
		return EACCES
	case syscall.EPERM:
		return EPERM
	case syscall.EISDIR:
		return EISDIR
	case syscall.ENOTDIR:
		return ENOTDIR
	case syscall.EFBIG:
		return EFBIG
	case syscall.EMFILE:
		return EMFILE
	case syscall.ENFILE:
		return ENFILE
	case syscall.ENOMEM:
		return ENOMEM
	case syscall.ENAMETOOLONG:
		return ENAMETOOLONG
	case syscall.EAGAIN:
		return EAGAIN
	case syscall.ENXIO:
		return ENXIO // a socket
	}
	return EIO
}
