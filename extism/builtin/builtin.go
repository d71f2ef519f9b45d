// Package builtin is toolhost's catalog of built-in tools: wasm plugins
// compiled from the Go sources under guests/ and embedded in the host
// binary. Operators enable them with wasm { builtin = "<plugin>" tool =
// "<tool>" }; they run in the wasm tier like any plugin, with only the
// mounts and hosts the operator grants. docs/tools.md describes each tool.
//
// The plugins, one per family:
//
//   - filesystem: filesystem.read, .list, .search, .write, .edit, .delete
//   - web: web.fetch, http.request, web.search
//   - kb: kb.learn
//
// The .wasm files are produced by go generate (internal/gen, reproducible:
// fixed flags, -trimpath) and committed with the Go version that built them
// (wasm/GOVERSION); a test rebuilds them and compares the bytes.
package builtin

import (
	"embed"
	"io/fs"
	"slices"
	"strings"
)

//go:generate go run ./internal/gen -src guests -out wasm

//go:embed wasm/*.wasm
var modules embed.FS

// Lookup returns the module bytes of the built-in plugin name. It is the
// extism.Config.Builtins hook. The bytes are shared: do not modify them.
func Lookup(name string) ([]byte, bool) {
	if name == "" || strings.ContainsAny(name, `/\.`) {
		return nil, false
	}
	b, err := modules.ReadFile("wasm/" + name + ".wasm")
	if err != nil {
		return nil, false
	}
	return b, true
}

// Names returns the names of the built-in plugins, sorted.
func Names() []string {
	entries, err := fs.ReadDir(modules, "wasm")
	if err != nil {
		panic(err) // the embedded directory always exists
	}
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".wasm"); ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}
