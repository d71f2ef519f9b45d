package extism

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// backgroundNice is the nice value of the thread that pre-instantiates.
const backgroundNice = 19

// background makes the calling goroutine's thread one the kernel runs
// after everything else of ordinary priority: the goroutine keeps the
// thread to itself (and the thread ends with it, never returning to Go's
// pool at this priority), and the thread's nice value is raised to 19. On
// Linux that applies to the one thread, not the process.
//
// The refill goroutine runs there. Building an instance costs several
// hundred microseconds of CPU; at normal priority it competes, on a small
// machine, with the calls themselves and with the client waiting for their
// results. At nice 19 it takes what they leave (about 1.5 % of a CPU when
// they use it all), and a call that finds the pool empty builds its own
// instance at its own priority.
func background() {
	runtime.LockOSThread()
	_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), backgroundNice)
}
