package snapshot

import (
	"context"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/toolhost/toolhost/internal/testcache"
)

var builds sync.Map // package dir -> *buildResult

type buildResult struct {
	once sync.Once
	wasm []byte
	err  error
}

// goWasm builds the Go package at dir (relative to this package) with
// GOOS=wasip1 GOARCH=wasm -buildmode=c-shared, once per test binary.
func goWasm(tb testing.TB, dir string) []byte {
	tb.Helper()
	v, _ := builds.LoadOrStore(dir, &buildResult{})
	br := v.(*buildResult)
	br.once.Do(func() {
		tmp, err := os.MkdirTemp("", "snapshot-guest")
		if err != nil {
			br.err = err
			return
		}
		defer os.RemoveAll(tmp)
		out := filepath.Join(tmp, "guest.wasm")
		gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(gobin); err != nil {
			gobin = "go"
		}
		cmd := exec.Command(gobin, "build", "-buildmode=c-shared", "-o", out, dir)
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if msg, err := cmd.CombinedOutput(); err != nil {
			br.err = &buildError{err: err, out: string(msg)}
			return
		}
		br.wasm, br.err = os.ReadFile(out)
	})
	if br.err != nil {
		tb.Fatalf("building %s: %v", dir, br.err)
	}
	return br.wasm
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// testCache shares compiled code between the tests' runtimes: the same Go
// guests are compiled by many tests.
var testCache = testcache.Cache()

func newRuntime(tb testing.TB) wazero.Runtime {
	tb.Helper()
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(testCache))
	tb.Cleanup(func() { r.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	return r
}

func compile(tb testing.TB, r wazero.Runtime, wasm []byte) wazero.CompiledModule {
	tb.Helper()
	testcache.Precompile(wasm) // newRuntime's configuration: no listeners
	cm, err := r.CompileModule(context.Background(), wasm)
	if err != nil {
		tb.Fatalf("compile: %v", err)
	}
	return cm
}

// fresh instantiates cm the way a host would for one call: real clocks and
// randomness, then _initialize (a no-op in a snapshot).
func fresh(tb testing.TB, r wazero.Runtime, cm wazero.CompiledModule, cfg wazero.ModuleConfig) api.Module {
	tb.Helper()
	ctx := context.Background()
	if cfg == nil {
		cfg = wazero.NewModuleConfig()
	}
	cfg = cfg.WithName("").WithStartFunctions().WithSysNanotime().WithSysWalltime().WithRandSource(rand.Reader)
	mod, err := r.InstantiateModule(ctx, cm, cfg)
	if err != nil {
		tb.Fatalf("instantiate: %v", err)
	}
	if _, err := mod.ExportedFunction("_initialize").Call(ctx); err != nil {
		tb.Fatalf("_initialize: %v", err)
	}
	return mod
}
