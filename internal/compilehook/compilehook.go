// Package compilehook lets a process have wazero's compilation of a module
// done by another process before it compiles the module itself, through a
// shared on-disk compilation cache.
//
// Its one user is the test suite under the race detector, which instruments
// wazero's compiler and makes a Go guest's compilation take half a minute
// instead of a second, while the compiled code is the same: the tests
// register a hook (internal/testcache) that compiles the module in a
// helper built without -race, and the in-process compilation then reads the
// result from the cache. Without a hook, Before does nothing.
package compilehook

import "sync/atomic"

// Func compiles code into the wazero compilation cache in cacheDir, as a
// runtime whose function listeners are attached exactly to the functions
// exported as listenExport ("" for none) would. It must not fail loudly:
// the caller compiles anyway.
type Func func(code []byte, cacheDir, listenExport string)

var hook atomic.Pointer[Func]

// Set registers f (nil removes the hook).
func Set(f Func) {
	if f == nil {
		hook.Store(nil)
		return
	}
	hook.Store(&f)
}

// Before runs the hook, if one is set and cacheDir is not empty, before
// the caller compiles code with the cache in cacheDir.
func Before(code []byte, cacheDir, listenExport string) {
	if f := hook.Load(); f != nil && cacheDir != "" {
		(*f)(code, cacheDir, listenExport)
	}
}
