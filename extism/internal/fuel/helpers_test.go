package fuel

import (
	"context"
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

var (
	guestOnce sync.Once
	guestWasm []byte
	guestErr  error
)

// goGuest builds testdata/guest with the Go toolchain running the tests
// (GOOS=wasip1 GOARCH=wasm -buildmode=c-shared) once per test binary.
func goGuest(tb testing.TB) []byte {
	tb.Helper()
	guestOnce.Do(func() {
		dir, err := os.MkdirTemp("", "fuel-guest")
		if err != nil {
			guestErr = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "guest.wasm")
		gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(gobin); err != nil {
			gobin = "go"
		}
		cmd := exec.Command(gobin, "build", "-buildmode=c-shared", "-o", out, "./testdata/guest")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if msg, err := cmd.CombinedOutput(); err != nil {
			guestErr = &buildError{err: err, out: string(msg)}
			return
		}
		guestWasm, guestErr = os.ReadFile(out)
	})
	if guestErr != nil {
		tb.Fatalf("building Go guest: %v", guestErr)
	}
	return guestWasm
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// newRuntime returns a wazero runtime with WASI and the fuel host module.
func newRuntime(tb testing.TB, cfg wazero.RuntimeConfig) wazero.Runtime {
	tb.Helper()
	ctx := context.Background()
	plain := cfg == nil
	if cfg == nil {
		cfg = wazero.NewRuntimeConfig()
	}
	r := wazero.NewRuntimeWithConfig(ctx, cfg.WithCompilationCache(testcache.Cache()))
	if plain {
		plainRuntimes.Store(r, true)
	}
	tb.Cleanup(func() { r.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	if _, err := InstantiateHostModule(ctx, r); err != nil {
		tb.Fatal(err)
	}
	return r
}

// plainRuntimes holds the runtimes of the default configuration, whose
// compilations testcache.Precompile can do ahead (another configuration,
// close-on-deadline for one, compiles to other code).
var plainRuntimes sync.Map

// instantiate compiles and instantiates wasm as an anonymous module, running
// _initialize if the module exports it.
func instantiate(tb testing.TB, ctx context.Context, r wazero.Runtime, wasm []byte) api.Module {
	tb.Helper()
	if _, ok := plainRuntimes.Load(r); ok {
		testcache.Precompile(wasm)
	}
	cm, err := r.CompileModule(ctx, wasm)
	if err != nil {
		tb.Fatalf("compile: %v", err)
	}
	cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions()
	mod, err := r.InstantiateModule(ctx, cm, cfg)
	if err != nil {
		tb.Fatalf("instantiate: %v", err)
	}
	if f := mod.ExportedFunction("_initialize"); f != nil {
		if _, err := f.Call(ctx); err != nil {
			tb.Fatalf("_initialize: %v", err)
		}
	}
	return mod
}
