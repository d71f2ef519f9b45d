// Package hostfs is what a wasm guest sees of the host's files, as a wazero
// filesystem (experimental/sys.FS) and a batched reader.
//
//   - FS (Mount, TmpDir.Mount): a mounted directory over an *os.Root,
//     which is the security boundary: no path a guest names leads out of
//     it, through "..", an absolute path or a symbolic link. Read-only
//     mounts refuse every write; bytes read are counted by a Meter. Around
//     os.Root, directory listings and opens take shortcuts (dirents_linux.go,
//     plainopen_linux.go) that change speed, never what a guest can reach.
//   - TmpDirs: the per-call /tmp directories, recycled only while a call
//     left them untouched.
//   - BatchReader: reading many files of a mounted directory on host
//     goroutines while the guest walks on (toolhost_fs_submit/take,
//     docs/wasm.md); OpenDir finds the mount that holds a directory.
//
// An FS and a BatchReader belong to one instance; TmpDirs is shared by all
// the instances of an adapter.
package hostfs
