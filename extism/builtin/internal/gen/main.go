// Command gen builds the built-in wasm modules of extism/builtin from
// their sources (../../guests/<name>: a Go package, or a Rust crate whose
// root is lib.rs) into one directory, reproducibly: the same sources and
// compiler versions give the same bytes. It records the versions next to
// the modules (GOVERSION, RUSTVERSION), because other versions produce
// other bytes.
//
//	go run ./internal/gen -out wasm        (what go generate runs)
//	go run ./internal/gen -rustc           (prints the rustc it would use: version, path)
//
// Rust guests are built with rustc alone (no cargo, no crates) for
// wasm32-wasi: $RUSTC if set, else the first of rustc on $PATH and
// /usr/bin/rustc (Debian's rustc with libstd-rust-dev-wasm32) that has
// that target's standard library.
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
	src := flag.String("src", "guests", "directory holding one Go package or Rust crate per module")
	printRustc := flag.Bool("rustc", false, "print the version and path of the rustc that would build Rust guests, and exit")
	flag.Parse()
	if *printRustc {
		rc, err := findRustc()
		if err == nil {
			var v string
			if v, err = rustVersion(rc); err == nil {
				fmt.Printf("%s\n%s\n", v, rc)
				return
			}
		}
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
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
	rustc, rustv := "", ""
	for _, n := range names {
		dir := filepath.Join(src, n)
		if _, err := os.Stat(filepath.Join(dir, "lib.rs")); err == nil {
			if rustc == "" {
				if rustc, err = findRustc(); err != nil {
					return fmt.Errorf("building %s: %w", n, err)
				}
				if rustv, err = rustVersion(rustc); err != nil {
					return err
				}
			}
			if err := buildRust(rustc, dir, filepath.Join(absOut, n+".wasm")); err != nil {
				return fmt.Errorf("building %s: %w", n, err)
			}
			continue
		}
		args := append(slices.Clone(buildFlags), "-o", filepath.Join(absOut, n+".wasm"), "./"+filepath.ToSlash(filepath.Join(src, n)))
		cmd := exec.Command("go", args...)
		cmd.Env = append(cleanEnv(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOWASM=", "GOEXPERIMENT=", "GOFLAGS=-mod=readonly")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building %s: %w", n, err)
		}
	}
	if rustv != "" {
		if err := os.WriteFile(filepath.Join(out, "RUSTVERSION"), []byte(rustv+"\n"), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(out, "GOVERSION"), []byte(goVersion()+"\n"), 0o644)
}

// rustTarget is the WASI preview 1 target under the name rustc 1.63
// (Debian 12's) knows; later rustc calls it wasm32-wasip1.
const rustTarget = "wasm32-wasi"

// rustFlags are fixed for reproducible, small modules: one codegen unit,
// whole-program optimisation, no unwinding tables, no symbols, and a 256
// KiB stack (the default is 1 MiB, which every fresh instance would have
// to provide).
var rustFlags = []string{
	"--edition", "2021", "--target", rustTarget, "--crate-type", "cdylib",
	"-C", "opt-level=2", "-C", "lto", "-C", "codegen-units=1", "-C", "panic=abort",
	"-C", "strip=symbols", "-C", "debuginfo=0", "-C", "link-arg=-zstack-size=262144",
}

// buildRust compiles the crate in dir (root lib.rs) to out. The crate's
// directory is mapped to a fixed name so that no path of the build machine
// reaches the module.
func buildRust(rustc, dir, out string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	args := append(slices.Clone(rustFlags), "--remap-path-prefix="+abs+"=guests/"+filepath.Base(dir), "-o", out, filepath.Join(abs, "lib.rs"))
	cmd := exec.Command(rustc, args...)
	cmd.Env = append(cleanRustEnv(), "SOURCE_DATE_EPOCH=0")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return err
	}
	return os.Chmod(out, 0o644) // rustc makes it executable; it is data
}

// findRustc returns a rustc with the standard library for rustTarget.
func findRustc() (string, error) {
	var tried []string
	cands := []string{"rustc", "/usr/bin/rustc"}
	if rc := os.Getenv("RUSTC"); rc != "" {
		cands = []string{rc}
	}
	for _, c := range cands {
		p, err := exec.LookPath(c)
		if err != nil {
			continue
		}
		tried = append(tried, p)
		lib, err := exec.Command(p, "--print", "target-libdir", "--target", rustTarget).Output()
		if err != nil {
			continue
		}
		if fi, err := os.Stat(strings.TrimSpace(string(lib))); err == nil && fi.IsDir() {
			return p, nil
		}
	}
	if len(tried) == 0 {
		return "", fmt.Errorf("no rustc found: install Debian's rustc and libstd-rust-dev-wasm32, or set RUSTC")
	}
	return "", fmt.Errorf("no rustc with the %s standard library (tried %s): install Debian's libstd-rust-dev-wasm32, or set RUSTC", rustTarget, strings.Join(tried, ", "))
}

func rustVersion(rustc string) (string, error) {
	b, err := exec.Command(rustc, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", rustc, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// cleanRustEnv drops the variables that would change rustc's output.
func cleanRustEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "RUSTFLAGS" || k == "CARGO_ENCODED_RUSTFLAGS" || k == "RUSTC_BOOTSTRAP" {
			continue
		}
		env = append(env, kv)
	}
	return env
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
