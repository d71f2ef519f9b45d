// Package testcache gives the wasm tests one compilation cache.
//
// Compiling a Go-built guest (2–5 MB of wasm) takes about a second, but
// under the race detector, which instruments wazero's compiler, it takes a
// minute or more; the compiled code is the same either way. Tests therefore
// share compiled code: within a test binary always, and across test
// binaries and runs when TOOLHOST_TEST_WASM_CACHE names a directory (as
// .ci/run does, warming it with a quick run without -race first).
//
// wazero keys its file cache by the module's hash, its own version and the
// CPU's features, and writes entries atomically, so concurrent test
// binaries can share one directory.
package testcache

import (
	"os"
	"sync"

	"github.com/tetratelabs/wazero"
)

// EnvVar names the directory shared across test binaries.
const EnvVar = "TOOLHOST_TEST_WASM_CACHE"

var (
	once  sync.Once
	cache wazero.CompilationCache
)

// Cache returns the process-wide compilation cache for tests: on disk in
// $TOOLHOST_TEST_WASM_CACHE when set, else in memory.
func Cache() wazero.CompilationCache {
	once.Do(func() {
		if dir := os.Getenv(EnvVar); dir != "" {
			if c, err := wazero.NewCompilationCacheWithDir(dir); err == nil {
				cache = c
				return
			}
		}
		cache = wazero.NewCompilationCache()
	})
	return cache
}

// Dir returns the directory for an adapter's on-disk cache in tests:
// $TOOLHOST_TEST_WASM_CACHE/adapter when set, else fallback.
func Dir(fallback string) string {
	if dir := os.Getenv(EnvVar); dir != "" {
		return dir + string(os.PathSeparator) + "adapter"
	}
	return fallback
}
