//go:build unix

package main

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestServeInput: a pipe on stdin is read through the poller (a read can
// be interrupted), and left blocking again afterwards; a regular file is
// read as it is.
func TestServeInput(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// Like a stdin inherited from a parent: a blocking descriptor.
	fd := int(r.Fd()) // Fd puts it in blocking mode
	in, restore := serveInput(r)
	d, ok := in.(interface{ SetReadDeadline(time.Time) error })
	if !ok {
		t.Fatalf("a pipe was given as %T, which cannot be interrupted", in)
	}
	d.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := in.Read(make([]byte, 1)); !os.IsTimeout(err) {
		t.Fatalf("read with a deadline and no input: %v, want a timeout", err)
	}
	d.SetReadDeadline(time.Time{})
	w.WriteString("x\n")
	buf := make([]byte, 8)
	if n, err := in.Read(buf); err != nil || string(buf[:n]) != "x\n" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	restore()
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
		t.Fatalf("stdin left non-blocking after serving (%v)", err)
	}

	f, err := os.CreateTemp(t.TempDir(), "in")
	if err != nil {
		t.Fatal(err)
	}
	in, restore = serveInput(f)
	defer restore()
	if _, ok := in.(interface{ SetReadDeadline(time.Time) error }); ok {
		t.Fatalf("a regular file was made pollable")
	}
}
