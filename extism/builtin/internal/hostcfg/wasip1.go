//go:build wasip1

// Package hostcfg reads the built-in plugins' Extism config through
// toolhost's toolhost_config_get host function (docs/wasm.md): one host
// call, where Extism's config_get costs a guest a dozen through its kernel.
// Outside toolhost it falls back to config_get.
package hostcfg

import (
	"unsafe"

	pdk "github.com/extism/go-pdk"
)

//go:wasmimport extism:host/user toolhost_config_get
func configGet(key unsafe.Pointer, keyLen uint32, out unsafe.Pointer, outCap uint32) int32

// enoent is what toolhost_config_get returns for a key that is not set.
const enoent = -44

// Get returns the value of the config key and whether it is set.
func Get(key string) (string, bool) {
	var buf [128]byte
	out := buf[:]
	for {
		n := configGet(unsafe.Pointer(unsafe.StringData(key)), uint32(len(key)), unsafe.Pointer(unsafe.SliceData(out)), uint32(len(out)))
		switch {
		case n == enoent:
			return "", false
		case n < 0:
			return pdk.GetConfig(key)
		case int(n) <= len(out):
			return string(out[:n]), true
		}
		out = make([]byte, n)
	}
}
