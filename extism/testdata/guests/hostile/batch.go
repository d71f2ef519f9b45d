//go:build wasip1

package main

import (
	"encoding/binary"
	"encoding/hex"
	"strings"
	"unsafe"

	"github.com/toolhost/toolhost/shared/guest"
)

//go:wasmimport extism:host/user toolhost_fs_submit
func fsSubmit(dir unsafe.Pointer, dirLen uint32, names unsafe.Pointer, namesLen uint32, max int64, filter unsafe.Pointer, filterLen uint32, flags uint32) int32

// fsSubmitAt is fsSubmit with names given as an address.
//
//go:wasmimport extism:host/user toolhost_fs_submit
func fsSubmitAt(dir unsafe.Pointer, dirLen uint32, names uint32, namesLen uint32, max int64, filter unsafe.Pointer, filterLen uint32, flags uint32) int32

//go:wasmimport extism:host/user toolhost_fs_take
func fsTake(out unsafe.Pointer, outCap uint32, wait uint32) int32

// batchArgs drives toolhost_fs_submit and toolhost_fs_take directly, bad
// pointers and all.
type batchArgs struct {
	Dir   string   `json:"dir"`
	Names []string `json:"names"`
	Max   int64    `json:"max"`
	// Raw names, NUL-separated, instead of Names.
	Raw *string `json:"raw"`
	// Filter and Flags are passed as the submit's.
	Filter string `json:"filter"`
	Flags  uint32 `json:"flags"`
	// BadPointer passes a names pointer past the end of memory.
	BadPointer bool `json:"bad_pointer"`
	// Take is how many records to take (-1: all); NoWait takes without
	// waiting; Buf is the take buffer's size (default 1 MiB).
	Take   int  `json:"take"`
	NoWait bool `json:"no_wait"`
	Buf    int  `json:"buf"`
	// Sums returns the sum of each file's bytes instead of its bytes.
	Sums bool `json:"sums"`
	// More are submitted after the first, before taking.
	More []struct {
		Dir   string   `json:"dir"`
		Names []string `json:"names"`
	} `json:"more"`
}

type batchRecord struct {
	Status uint32 `json:"status"`
	Size   int64  `json:"size"`
	Data   string `json:"data,omitempty"`
	Sum    int    `json:"sum,omitempty"`
}

type batchOut struct {
	Submit int32         `json:"submit"`
	More   []int32       `json:"more,omitempty"`
	Takes  []int32       `json:"takes,omitempty"`
	Read   []batchRecord `json:"read,omitempty"`
}

func batchTool() guest.Tool {
	return guest.Func("batchread", "Reads files through toolhost_fs_submit/take.", anyObject, func(in batchArgs) (batchOut, error) {
		var out batchOut
		raw := strings.Join(in.Names, "\x00")
		if in.Raw != nil {
			raw = *in.Raw
		}
		filter := unsafe.Pointer(unsafe.StringData(in.Filter))
		if in.BadPointer {
			out.Submit = fsSubmitAt(unsafe.Pointer(unsafe.StringData(in.Dir)), uint32(len(in.Dir)), 0xfffffff0, 64, in.Max, filter, uint32(len(in.Filter)), in.Flags)
		} else {
			out.Submit = fsSubmit(unsafe.Pointer(unsafe.StringData(in.Dir)), uint32(len(in.Dir)), unsafe.Pointer(unsafe.StringData(raw)), uint32(len(raw)), in.Max, filter, uint32(len(in.Filter)), in.Flags)
		}
		for _, m := range in.More {
			raw := strings.Join(m.Names, "\x00")
			out.More = append(out.More, fsSubmit(unsafe.Pointer(unsafe.StringData(m.Dir)), uint32(len(m.Dir)), unsafe.Pointer(unsafe.StringData(raw)), uint32(len(raw)), in.Max, filter, uint32(len(in.Filter)), in.Flags))
		}
		if in.Buf == 0 {
			in.Buf = 1 << 20
		}
		buf := make([]byte, in.Buf)
		wait := uint32(1)
		if in.NoWait {
			wait = 0
		}
		for in.Take < 0 || len(out.Read) < in.Take {
			n := fsTake(unsafe.Pointer(&buf[0]), uint32(len(buf)), wait)
			out.Takes = append(out.Takes, n)
			if n <= 0 {
				break
			}
			for b := buf[:n]; len(b) > 0; {
				r := batchRecord{Status: binary.LittleEndian.Uint32(b), Size: int64(binary.LittleEndian.Uint64(b[8:]))}
				data := b[16 : 16+binary.LittleEndian.Uint32(b[4:])]
				b = b[16+len(data):]
				if in.Sums {
					for _, c := range data {
						r.Sum += int(c)
					}
				} else if in.Flags&2 != 0 {
					r.Data = hex.EncodeToString(data) // a stat's time and type
				} else {
					r.Data = string(data)
				}
				out.Read = append(out.Read, r)
			}
		}
		return out, nil
	})
}
