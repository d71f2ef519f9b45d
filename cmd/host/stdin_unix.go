//go:build unix

package main

import (
	"io"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// serveInput returns what `host serve --stdio` reads its messages from.
// When stdin is a pipe or a socket, as an MCP client's is, it is put in
// non-blocking mode and read through Go's poller: a read waiting for the
// next message then parks the goroutine instead of holding a thread, the
// call is handled on the thread that read it, and the read can be
// interrupted (SetReadDeadline) at shutdown. A terminal or a file is left
// as it is: non-blocking mode belongs to the open file, which a terminal
// shares with the shell; so is a stdin that is also stdout (one socket, as
// inetd gives), whose writes are not made through the poller. restore
// puts the mode back as it was.
func serveInput(in io.Reader) (r io.ReadCloser, restore func()) {
	f, ok := in.(*os.File)
	if !ok {
		return io.NopCloser(in), func() {}
	}
	fd := -1
	if sc, err := f.SyscallConn(); err == nil {
		sc.Control(func(d uintptr) { fd = int(d) }) // unlike Fd, leaves the mode alone
	}
	var st, out syscall.Stat_t
	if fd < 0 || syscall.Fstat(fd, &st) != nil {
		return io.NopCloser(in), func() {}
	}
	if kind := st.Mode & syscall.S_IFMT; kind != syscall.S_IFIFO && kind != syscall.S_IFSOCK {
		return io.NopCloser(in), func() {}
	}
	if syscall.Fstat(1, &out) == nil && out.Dev == st.Dev && out.Ino == st.Ino {
		return io.NopCloser(in), func() {}
	}
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return io.NopCloser(in), func() {}
	}
	wasNonblock := flags&unix.O_NONBLOCK != 0
	dup, err := syscall.Dup(fd)
	if err != nil {
		return io.NopCloser(in), func() {}
	}
	syscall.CloseOnExec(dup)
	if err := syscall.SetNonblock(dup, true); err != nil {
		syscall.Close(dup)
		return io.NopCloser(in), func() {}
	}
	pf := os.NewFile(uintptr(dup), f.Name())
	if pf.SetReadDeadline(time.Time{}) != nil { // not pollable after all
		pf.Close()
		syscall.SetNonblock(fd, wasNonblock)
		return io.NopCloser(in), func() {}
	}
	return pf, func() {
		pf.Close()
		syscall.SetNonblock(fd, wasNonblock)
	}
}
