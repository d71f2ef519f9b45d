package main

import (
	"os"
	"testing"

	// Under the race detector, the wasm modules these tests' hosts compile
	// are compiled by a helper built without it (internal/testcache).
	_ "github.com/toolhost/toolhost/internal/testcache"
	"github.com/toolhost/toolhost/subprocess"
)

// TestMain lets the test binary serve as the subprocess sandbox shim, as the
// real host binary does: the subprocess adapter re-executes os.Executable().
func TestMain(m *testing.M) {
	subprocess.MaybeRunShim()
	os.Exit(m.Run())
}
