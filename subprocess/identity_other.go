//go:build !unix

package subprocess

// reachable and permits have no owners and modes to read here; the
// subprocess tier refuses to run on this platform anyway.
func reachable(string, Identity, uint32) error { return nil }

func permits(string, Identity, uint32) error { return nil }
