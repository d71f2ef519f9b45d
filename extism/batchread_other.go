//go:build !linux

package extism

// batchSupported: toolhost_fs_submit answers ENOSYS, and the guest reads
// file by file through WASI.
const batchSupported = false

func readBatchFile(int, string, int64) (uint32, int64, []byte) {
	return wasiENOSYS, 0, nil
}

func statBatchFile(int, string, *[16]byte) (uint32, int64) { return wasiENOSYS, 0 }
