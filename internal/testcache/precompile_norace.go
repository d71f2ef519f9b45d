//go:build !race

package testcache

// Without the race detector, wazero compiles at full speed in process.
func precompile([]byte, string, string) {}
