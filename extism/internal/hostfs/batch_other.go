//go:build !linux

package hostfs

import "github.com/toolhost/toolhost/extism/internal/wasi"

// BatchSupported: toolhost_fs_submit answers wasi.ENOSYS, and the guest reads
// file by file through WASI.
const BatchSupported = false

func readBatchFile(int, string, int64) (uint32, int64, []byte) {
	return wasi.ENOSYS, 0, nil
}

func statBatchFile(int, string, *[16]byte) (uint32, int64) { return wasi.ENOSYS, 0 }
