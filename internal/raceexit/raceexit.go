// Package raceexit spares the tests the second that a child process built
// with the race detector waits before it exits.
//
// Under the race detector a Go program that exits while other goroutines
// are alive first sleeps for GORACE's atexit_sleep_ms, 1000 by default, so
// that a race they are in the middle of can still be reported. Test
// binaries that run copies of themselves — the subprocess sandbox's shim,
// the subprocess tests' plugins, cmd/host's test hosts — pay that second at
// each of their exits, and a host waits for it whenever it stops a plugin
// or a command ends: it was half the time of the subprocess tests under
// -race. With atexit_sleep_ms=0 the race detector still reports every race
// it sees and still makes the process exit with status 66; only the sleep
// goes.
//
// The runtime reads GORACE once, as it starts, so a process cannot change
// its own. Setenv sets it in a test binary's environment for the children
// that inherit it; Reexec, for a child started with an environment of its
// own (the subprocess sandbox gives the shim and the plugin a scrubbed one),
// executes the process again with it and then removes it, so that the
// process sees, and passes on, the environment it was given.
//
// Without the race detector both do nothing.
package raceexit

import (
	"os"
	"strings"
)

// Option is the GORACE option that turns the sleep off.
const Option = "atexit_sleep_ms=0"

// marker is set in the environment of a process that Reexec executed again.
const marker = "TOOLHOST_TEST_RACEEXIT"

// Setenv adds Option to GORACE in the test process's environment, for the
// children that inherit it. Call it from TestMain.
func Setenv() {
	if !enabled {
		return
	}
	if v := os.Getenv("GORACE"); !strings.Contains(v, Option) {
		os.Setenv("GORACE", strings.TrimSpace(v+" "+Option))
	}
}

// Reexec executes the calling process again, same executable, arguments and
// descriptors, with Option in GORACE, unless its environment sets GORACE
// already; in the process executed again it removes what it added. Call it
// first thing in TestMain of a child whose exit a test waits for. It
// returns, leaving the sleep as it is, where it cannot execute.
func Reexec() {
	if !enabled {
		return
	}
	if _, ok := os.LookupEnv(marker); ok {
		os.Unsetenv(marker)
		os.Unsetenv("GORACE")
		return
	}
	if _, ok := os.LookupEnv("GORACE"); ok {
		return
	}
	reexec(append(os.Environ(), "GORACE="+Option, marker+"=1"))
}
