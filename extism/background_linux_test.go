package extism

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestBackgroundThread: background lowers the priority of its goroutine's
// thread alone.
func TestBackgroundThread(t *testing.T) {
	nice := func() int {
		// getpriority returns 20 - nice for a thread (the raw syscall).
		p, err := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid())
		if err != nil {
			t.Fatal(err)
		}
		return 20 - p
	}
	done := make(chan [2]int)
	go func() {
		before := nice()
		background()
		done <- [2]int{before, nice()}
	}()
	got := <-done
	if got[1] != backgroundNice {
		t.Fatalf("nice %d after background (was %d); want %d", got[1], got[0], backgroundNice)
	}
	if p, err := unix.Getpriority(unix.PRIO_PROCESS, 0); err != nil || 20-p == backgroundNice {
		t.Fatalf("another thread has nice %d (%v): background changed more than its own thread", 20-p, err)
	}
}
