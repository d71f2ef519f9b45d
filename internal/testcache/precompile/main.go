// Command precompile compiles wasm modules into a wazero compilation cache
// directory. The tests run it, built without the race detector, to compile
// the modules a race-instrumented test binary is about to compile (see
// internal/compilehook): the cache entry is the same, the compiler
// thirty times faster. It must be built with the wazero version string the
// test binary sees (-ldflags -X .../internal/version.version=...), which is
// part of the cache key.
//
//	precompile -dir CACHE [-listen EXPORT] module.wasm...
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

func main() {
	dir := flag.String("dir", "", "the wazero compilation cache directory")
	listen := flag.String("listen", "", "attach a function listener to the function exported under this name, as the caller does")
	flag.Parse()
	if *dir == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: precompile -dir CACHE [-listen EXPORT] module.wasm...")
		os.Exit(2)
	}
	cache, err := wazero.NewCompilationCacheWithDir(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx := context.Background()
	if *listen != "" {
		ctx = experimental.WithFunctionListenerFactory(ctx, exportListener(*listen))
	}
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache))
	defer r.Close(ctx)
	for _, file := range flag.Args() {
		code, err := os.ReadFile(file)
		if err == nil {
			_, err = r.CompileModule(ctx, code)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", file, err)
			os.Exit(1)
		}
	}
}

// exportListener attaches a listener that does nothing to the function
// exported under its name: the cache key records which functions have one.
type exportListener string

func (l exportListener) NewFunctionListener(def api.FunctionDefinition) experimental.FunctionListener {
	for _, n := range def.ExportNames() {
		if n == string(l) {
			return nopListener{}
		}
	}
	return nil
}

type nopListener struct{}

func (nopListener) Before(context.Context, api.Module, api.FunctionDefinition, []uint64, experimental.StackIterator) {
}
func (nopListener) After(context.Context, api.Module, api.FunctionDefinition, []uint64) {}
func (nopListener) Abort(context.Context, api.Module, api.FunctionDefinition, error)    {}
