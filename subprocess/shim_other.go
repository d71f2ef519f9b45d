//go:build !linux

package subprocess

import "errors"

// runShim is not implemented off Linux: the adapter refuses subprocess
// tools there, so a shim is never started.
func runShim(*shimConfig) error {
	return errors.New("the subprocess sandbox shim runs only on Linux")
}

func stdinToDevNull() error { return errors.New("the subprocess sandbox shim runs only on Linux") }
