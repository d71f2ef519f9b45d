// Package builtin is toolhost's catalog of built-in tools: wasm modules
// compiled from the sources under guests/ (Go packages, and one Rust crate)
// and embedded in the host binary. Operators enable them with wasm {
// builtin = "<plugin>" tool = "<tool>" }; they run in the wasm tier like any
// plugin, with only the mounts and hosts the operator grants. docs/tools.md
// describes each tool.
//
// The plugins, one per family:
//
//   - filesystem: filesystem.read, .list, .search, .write, .edit, .delete
//   - web: web.fetch, http.request, web.search
//   - kb: kb.learn
//
// A plugin is one module, except filesystem: its read and list tools are
// served by the module filesystem-rs, written in Rust, whose fresh
// instances cost a fraction of a Go module's (guests/filesystem-rs/lib.rs
// says why).
// LookupTool routes a tool to its module; operators name the plugin.
//
// The .wasm files are produced by go generate (internal/gen, reproducible:
// fixed flags, -trimpath, --remap-path-prefix) and committed with the
// compiler versions that built them (wasm/GOVERSION, wasm/RUSTVERSION); a
// test rebuilds them and compares the bytes.
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
	//go:embed wasm/filesystem-rs.wasm
	filesystemRsWasm []byte
	//go:embed wasm/kb.wasm
	kbWasm []byte
	//go:embed wasm/web.wasm
	webWasm []byte
)

var modules = map[string][]byte{
	"filesystem":    filesystemWasm,
	"filesystem-rs": filesystemRsWasm,
	"kb":            kbWasm,
	"web":           webWasm,
}

// toolModules names, for a plugin's tool served by a module other than the
// plugin's own, that module.
var toolModules = map[[2]string]string{
	{"filesystem", "filesystem.read"}: "filesystem-rs",
	{"filesystem", "filesystem.list"}: "filesystem-rs",
}

// LookupTool returns the bytes of the module that serves tool of the
// built-in plugin: the plugin's own module, or the one toolModules names.
// It is the extism.Config.Builtins hook. The bytes are the binary's own,
// shared by every caller: do not modify them.
func LookupTool(plugin, tool string) ([]byte, bool) {
	if m, ok := toolModules[[2]string{plugin, tool}]; ok {
		return Lookup(m)
	}
	return Lookup(plugin)
}

// Lookup returns the bytes of the built-in module name.
func Lookup(name string) ([]byte, bool) {
	if name == "" || strings.ContainsAny(name, `/\.`) {
		return nil, false
	}
	b, ok := modules[name]
	return b, ok
}

// catalog is every built-in plugin's tools. TestCatalog checks it against
// what the modules list.
var catalog = map[string][]string{
	"filesystem": {"filesystem.read", "filesystem.list", "filesystem.search", "filesystem.write", "filesystem.edit", "filesystem.delete"},
	"web":        {"web.fetch", "http.request", "web.search"},
	"kb":         {"kb.learn"},
}

// Catalog returns the built-in plugins (the names operators write in
// builtin = "...") and the tools each offers, whichever module serves
// them. The caller may modify the result.
func Catalog() map[string][]string {
	out := make(map[string][]string, len(catalog))
	for p, tools := range catalog {
		out[p] = slices.Clone(tools)
	}
	return out
}

// Names returns the names of the built-in modules, sorted.
func Names() []string {
	return slices.Sorted(maps.Keys(modules))
}
