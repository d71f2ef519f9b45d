//go:build wasip1

package main

import (
	"unsafe"

	"github.com/toolhost/toolhost/shared/guest"
)

//go:wasmimport extism:host/user toolhost_config_get
func configGet(key unsafe.Pointer, keyLen uint32, out unsafe.Pointer, outCap uint32) int32

// configGetAt is configGet with the output buffer given as an address.
//
//go:wasmimport extism:host/user toolhost_config_get
func configGetAt(key unsafe.Pointer, keyLen uint32, out uint32, outCap uint32) int32

type configArgs struct {
	Key string `json:"key"`
	// Buf is the output buffer's size; BadPointer passes one past the end
	// of memory.
	Buf        int  `json:"buf"`
	BadPointer bool `json:"bad_pointer"`
}

type configOut struct {
	Ret   int32  `json:"ret"`
	Value string `json:"value"`
}

// configTool calls toolhost_config_get directly, bad pointers and all.
func configTool() guest.Tool {
	return guest.Func("configget", "Reads a config key through toolhost_config_get.", anyObject, func(in configArgs) (configOut, error) {
		key := unsafe.Pointer(unsafe.StringData(in.Key))
		if in.BadPointer {
			return configOut{Ret: configGetAt(key, uint32(len(in.Key)), 0xfffffff0, 64)}, nil
		}
		buf := make([]byte, in.Buf+1) // never empty: a real pointer
		n := configGet(key, uint32(len(in.Key)), unsafe.Pointer(&buf[0]), uint32(in.Buf))
		out := configOut{Ret: n}
		if n >= 0 && int(n) <= in.Buf {
			out.Value = string(buf[:n])
		}
		return out, nil
	})
}
