package main

import (
	"os"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/raceexit"
	// Under the race detector, the wasm modules these tests' hosts compile
	// are compiled by a helper built without it (internal/testcache).
	_ "github.com/toolhost/toolhost/internal/testcache"
	"github.com/toolhost/toolhost/subprocess"
)

// TestMain lets the test binary serve as the subprocess sandbox shim, as the
// real host binary does: the subprocess adapter re-executes os.Executable().
func TestMain(m *testing.M) {
	// The shim (the one way this binary starts with an argument that is
	// not a test flag) and the test hosts that clients start with a clean
	// environment (hostScript) run without the race detector's second of
	// sleep at exit, which the tests would wait for (internal/raceexit).
	if len(os.Args) > 1 && !strings.HasPrefix(os.Args[1], "-") || os.Getenv(helperEnv) == "1" {
		raceexit.Reexec()
	}
	subprocess.MaybeRunShim()
	raceexit.Setenv() // for the test hosts and clients the tests start
	os.Exit(m.Run())
}

// longTestsEnv, set to 1, asks for the long forms of soak tests (.ci/run
// sets it; docs/testing.md).
const longTestsEnv = "TOOLHOST_LONG_TESTS"

func longTests() bool { return os.Getenv(longTestsEnv) == "1" }
