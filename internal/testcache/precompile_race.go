//go:build race

package testcache

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/toolhost/toolhost/internal/compilehook"
)

// Under the race detector every wasm compilation of a test binary that
// imports this package goes through the helper first, the extism adapter's
// included, unless TOOLHOST_TEST_PRECOMPILE=0 (to measure what it saves).
func init() {
	if os.Getenv("TOOLHOST_TEST_PRECOMPILE") != "0" {
		compilehook.Set(precompile)
	}
}

var (
	helperOnce sync.Once
	helper     string // the helper's path; "" when it could not be built
	warnOnce   sync.Once
)

// precompile compiles code into the wazero cache in dir with the helper,
// built without -race on first use. On any failure it says so once and
// leaves the compilation to the caller.
func precompile(code []byte, dir, listenExport string) {
	helperOnce.Do(func() { helper = buildHelper() })
	if helper == "" {
		return
	}
	f, err := os.CreateTemp("", "precompile-*.wasm")
	if err != nil {
		warn(err)
		return
	}
	defer os.Remove(f.Name())
	_, err = f.Write(code)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		warn(err)
		return
	}
	args := []string{"-dir", dir}
	if listenExport != "" {
		args = append(args, "-listen", listenExport)
	}
	if out, err := exec.Command(helper, append(args, f.Name())...).CombinedOutput(); err != nil {
		warn(fmt.Errorf("%v: %s", err, out))
	}
}

// wazeroVersion is the version string wazero puts in its cache keys in this
// binary, found as wazero finds it: a test binary's build information
// usually lists no dependencies, so it is wazero's default, "dev".
func wazeroVersion() string {
	v := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if strings.Contains(d.Path, "github.com/tetratelabs/wazero") {
				v = d.Version
			}
		}
		if v == "" || v == "(devel)" {
			v = bi.Main.Version
		}
	}
	if v == "" || v == "(devel)" {
		v = "dev"
	}
	return v
}

// buildHelper returns the path of ./precompile built without -race, building
// it if needed, or "" (having said why). It is kept in the shared directory
// under a name that holds what makes its cache entries the ones this binary
// looks for: the Go version, wazero's version string, and a digest of its
// source and of go.sum.
func buildHelper() string {
	base := sharedDir()
	if base == "" {
		base = os.TempDir()
	}
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), "precompile")
	h := sha256.New()
	for _, f := range []string{filepath.Join(src, "main.go"), filepath.Join(src, "..", "..", "..", "go.sum")} {
		b, err := os.ReadFile(f)
		if err != nil {
			warn(err)
			return ""
		}
		h.Write(b)
	}
	wz := wazeroVersion()
	exe := filepath.Join(base, "bin", fmt.Sprintf("precompile-%s-%s-%x", runtime.Version(), wz, h.Sum(nil)[:8]))
	if _, err := os.Stat(exe); err == nil {
		return exe
	}
	if err := os.MkdirAll(filepath.Dir(exe), 0o700); err != nil {
		warn(err)
		return ""
	}
	tmp := fmt.Sprintf("%s.%d.tmp", exe, os.Getpid())
	defer os.Remove(tmp)
	cmd := exec.Command("go", "build", "-race=false",
		"-ldflags", "-X github.com/tetratelabs/wazero/internal/version.version="+wz, "-o", tmp, ".")
	cmd.Dir = src // a helper process of a test may run anywhere
	if out, err := cmd.CombinedOutput(); err != nil {
		warn(fmt.Errorf("building the helper: %v: %s", err, out))
		return ""
	}
	if err := os.Rename(tmp, exe); err != nil {
		warn(err)
		return ""
	}
	return exe
}

func warn(err error) {
	warnOnce.Do(func() {
		fmt.Fprintf(os.Stderr, "testcache: compiling wasm in process under the race detector (slow): %v\n", err)
	})
}
