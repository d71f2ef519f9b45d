// Command gen builds the built-in wasm plugins of extism/builtin from
// their Go sources (../../guests/<name>) into one directory, reproducibly:
// the same sources and Go version give the same bytes. It records the Go
// version next to the modules (GOVERSION), because another version
// produces other bytes.
//
//	go run ./internal/gen -out wasm        (what go generate runs)
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// buildFlags are fixed so that a build is reproducible: no paths of the
// build machine (-trimpath), no VCS stamp (-buildvcs=false).
var buildFlags = []string{"build", "-buildmode=c-shared", "-trimpath", "-buildvcs=false"}

func main() {
	out := flag.String("out", "wasm", "output directory")
	src := flag.String("src", "guests", "directory holding one Go package per plugin")
	flag.Parse()
	if err := run(*src, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(src, out string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	absOut, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	for _, n := range names {
		args := append(slices.Clone(buildFlags), "-o", filepath.Join(absOut, n+".wasm"), "./"+filepath.ToSlash(filepath.Join(src, n)))
		cmd := exec.Command("go", args...)
		cmd.Env = append(cleanEnv(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOWASM=", "GOEXPERIMENT=", "GOFLAGS=-mod=readonly")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building %s: %w", n, err)
		}
	}
	return os.WriteFile(filepath.Join(out, "GOVERSION"), []byte(goVersion()+"\n"), 0o644)
}

// cleanEnv drops the variables that would change the output.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOOS", "GOARCH", "CGO_ENABLED", "GOWASM", "GOEXPERIMENT", "GOFLAGS":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// goVersion is the version of the go command that builds the modules.
func goVersion() string {
	b, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return runtime.Version()
	}
	return strings.TrimSpace(string(b))
}
