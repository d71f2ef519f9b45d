//go:build wasip1

package mounts

import "unsafe"

//go:wasmimport wasi_snapshot_preview1 fd_prestat_get
func fdPrestatGet(fd int32, buf unsafe.Pointer) int32

//go:wasmimport wasi_snapshot_preview1 fd_prestat_dir_name
func fdPrestatDirName(fd int32, buf unsafe.Pointer, n int32) int32

// Discover returns the directories the host preopened for this instance,
// in the host's order, without the per-call /tmp. The WASI preopens are the
// only truth about what the operator mounted: the guest reads them instead
// of trusting configuration.
func Discover() Set {
	var names []string
	for fd := int32(3); fd < 64; fd++ {
		var pre [2]uint32 // tag (u8, padded), name length
		if fdPrestatGet(fd, unsafe.Pointer(&pre[0])) != 0 {
			break
		}
		if pre[0]&0xff != 0 || pre[1] == 0 || pre[1] > MaxPathBytes {
			continue
		}
		buf := make([]byte, pre[1])
		if fdPrestatDirName(fd, unsafe.Pointer(&buf[0]), int32(len(buf))) != 0 {
			continue
		}
		if n := len(buf); buf[n-1] == 0 {
			buf = buf[:n-1]
		}
		names = append(names, string(buf))
	}
	return New(names...)
}
