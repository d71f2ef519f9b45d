//go:build !linux

package extism

// background does nothing where a thread's priority cannot be set on its
// own (background_linux.go).
func background() {}
