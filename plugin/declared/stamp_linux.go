//go:build linux

package declared

import (
	"fmt"
	"io/fs"
	"syscall"
)

// changeStamp returns what the kernel changes on every write to a file
// and every replacement of it, whatever its modification time then says:
// the status change time (set by the kernel, never by a program: a write
// that restores the modification time, `cp -p` or `touch -r`, moves it all
// the same), and the device and inode (a file renamed over it has others).
func changeStamp(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("/%d.%d/%d/%d", st.Ctim.Sec, st.Ctim.Nsec, st.Dev, st.Ino)
}
