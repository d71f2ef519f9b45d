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
	_ "embed"
	"maps"
	"slices"
	"strings"
)

//go:generate go run ./internal/gen -src guests -out wasm

// The modules are embedded as byte slices, one variable each, rather than
// as an embed.FS: a []byte embed is the binary's own data, used in place,
// where embed.FS.ReadFile copies the whole module on every lookup (a host
// loading six tools of the filesystem plugin copied and hashed it six
// times, ~50 ms of a `host call`). TestNames checks that every module in
// wasm/ is listed here.
var (
	//go:embed wasm/filesystem.wasm
	filesystemWasm []byte
	//go:embed wasm/kb.wasm
	kbWasm []byte
	//go:embed wasm/web.wasm
	webWasm []byte
)

var modules = map[string][]byte{
	"filesystem": filesystemWasm,
	"kb":         kbWasm,
	"web":        webWasm,
}

// Lookup returns the module bytes of the built-in plugin name. It is the
// extism.Config.Builtins hook. The bytes are the binary's own, shared by
// every caller: do not modify them.
func Lookup(name string) ([]byte, bool) {
	if name == "" || strings.ContainsAny(name, `/\.`) {
		return nil, false
	}
	b, ok := modules[name]
	return b, ok
}

// Names returns the names of the built-in plugins, sorted.
func Names() []string {
	return slices.Sorted(maps.Keys(modules))
}
