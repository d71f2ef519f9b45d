package wasi

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"
)

// TestErrno: host errors map to the WASI errno a guest expects, wrapped or
// not; os.Root's refusal to leave its directory is EPERM; anything else is
// EIO, never success.
func TestErrno(t *testing.T) {
	for _, c := range []struct {
		err  error
		want uint32
	}{
		{fs.ErrNotExist, ENOENT},
		{fs.ErrPermission, EACCES},
		{&os.PathError{Op: "open", Path: "x", Err: syscall.ENOENT}, ENOENT},
		{&os.PathError{Op: "open", Path: "x", Err: syscall.ELOOP}, ELOOP},
		{&os.PathError{Op: "open", Path: "x", Err: syscall.EISDIR}, EISDIR},
		{&os.PathError{Op: "open", Path: "x", Err: syscall.ENOTDIR}, ENOTDIR},
		{&os.PathError{Op: "open", Path: "x", Err: syscall.EMFILE}, EMFILE},
		{fmt.Errorf("wrapped: %w", syscall.EACCES), EACCES},
		{errors.New("path escapes from parent"), EPERM},
		{errors.New("something else"), EIO},
	} {
		if got := Errno(c.err); got != c.want {
			t.Errorf("Errno(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
