// Package testcache gives the wasm tests one compilation cache.
//
// Compiling a Go-built guest (2–5 MB of wasm) takes about a second, but
// under the race detector, which instruments wazero and the adapter's own
// load-time rewriting (fuel metering, snapshots), preparing one takes half a
// minute or more; the result is the same either way. Tests therefore share
// it: within a test binary always, and across test binaries and runs on
// disk — in $TOOLHOST_TEST_WASM_CACHE when set (as .ci/run does, warming it
// with a quick run without -race first), else under the user's cache
// directory (toolhost/test-wasm, beside Go's own build cache), so that the
// README's test command, run a second time, does not prepare every module
// again.
//
// Under the race detector, a module about to be compiled is first compiled
// by a helper built without it (./precompile, through
// internal/compilehook), and the instrumented compiler finds the
// result in the cache: compiling is most of what the race detector slows.
//
// wazero keys its file cache by the module's bytes, its own version and the
// CPU's features, and writes entries atomically, so concurrent test
// binaries can share one directory. The adapter's cache also keeps modules
// it rewrote, keyed by the original bytes and the rewriting options but not
// by the rewriting code: the default directory is therefore named after a
// digest of that code (the extism package and its internal packages) and of
// go.sum, so that a change to either starts from an empty one.
package testcache

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/toolhost/toolhost/internal/compilehook"
)

// EnvVar names the directory shared across test binaries.
const EnvVar = "TOOLHOST_TEST_WASM_CACHE"

var (
	once  sync.Once
	cache wazero.CompilationCache

	sharedOnce sync.Once
	shared     string
)

// Cache returns the process-wide compilation cache for tests: on disk in
// the shared directory, else (none can be made) in memory.
func Cache() wazero.CompilationCache {
	once.Do(func() {
		if dir := sharedDir(); dir != "" {
			if c, err := wazero.NewCompilationCacheWithDir(filepath.Join(dir, "wazero")); err == nil {
				cache = c
				return
			}
		}
		cache = wazero.NewCompilationCache()
	})
	return cache
}

// Precompile prepares the compilation of code with Cache's runtime
// configuration (no function listeners): under the race detector a helper
// built without it compiles code into the shared directory, where the
// instrumented compiler then finds it; otherwise it does nothing.
func Precompile(code []byte) {
	Cache()
	if dir := sharedDir(); dir != "" {
		compilehook.Before(code, filepath.Join(dir, "wazero"), "")
	}
}

// Dir returns the directory for an adapter's on-disk cache in tests: under
// the shared directory, else fallback.
func Dir(fallback string) string {
	if dir := sharedDir(); dir != "" {
		return filepath.Join(dir, "adapter")
	}
	return fallback
}

// sharedDir returns the directory shared across test binaries and runs, or
// "" when there is none.
func sharedDir() string {
	sharedOnce.Do(func() {
		if dir := os.Getenv(EnvVar); dir != "" {
			shared = dir
			return
		}
		base, err := os.UserCacheDir()
		if err != nil {
			return
		}
		digest, ok := codeDigest()
		if !ok {
			return
		}
		base = filepath.Join(base, "toolhost", "test-wasm")
		dir := filepath.Join(base, digest)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return
		}
		now := time.Now()
		os.Chtimes(dir, now, now) // in use: keep it from the pruning below
		prune(base, dir)
		shared = dir
	})
	return shared
}

// codeDigest hashes the source of the code that rewrites modules (the
// extism package and its internal packages, tests excluded) and go.sum,
// found from this file's path; false when they cannot be read (a binary
// built elsewhere, -trimpath).
func codeDigest() (string, bool) {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return "", false
	}
	extismDir := filepath.Clean(filepath.Join(filepath.Dir(self), "..", "..", "extism"))
	h := sha256.New()
	err := filepath.WalkDir(extismDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			rel, _ := filepath.Rel(extismDir, path)
			if rel != "." && rel != "internal" && !strings.HasPrefix(rel, "internal"+string(filepath.Separator)) {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		h.Write([]byte(path))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", false
	}
	sum, err := os.ReadFile(filepath.Join(extismDir, "..", "go.sum"))
	if err != nil {
		return "", false
	}
	h.Write(sum)
	return hex.EncodeToString(h.Sum(nil)[:12]), true
}

// prune removes the directories of other code versions not used for a week.
func prune(base, keep string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(base, e.Name())
		if p == keep || !e.IsDir() {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > 7*24*time.Hour {
			os.RemoveAll(p)
		}
	}
}
