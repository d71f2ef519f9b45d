//go:build !linux

package raceexit

// reexec does nothing where the tests' children are not re-executed: the
// subprocess sandbox exists only on Linux.
func reexec([]string) {}
