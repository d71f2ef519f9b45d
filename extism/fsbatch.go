package extism

import (
	"context"
	"os"
	"path"
	"strings"

	extism "github.com/extism/go-sdk"

	"github.com/toolhost/toolhost/extism/internal/hostfs"
	"github.com/toolhost/toolhost/extism/internal/wasi"
)

// toolhost_fs_submit and toolhost_fs_take: the guest's side of reading many
// files through the host in one go (hostfs.BatchReader, docs/wasm.md).

// Host function names, imported by guests from module "extism:host/user".
const (
	hostFSSubmit = "toolhost_fs_submit"
	hostFSTake   = "toolhost_fs_take"
)

// fsSubmit is toolhost_fs_submit(dir, dir_len, names, names_len, max,
// filter, filter_len, flags): read the files names (NUL-separated, each
// one element) of the directory dir (an absolute guest path) in the
// background, each at most max bytes (at most hostfs.MaxFile). With a filter
// (filter_len > 0), a file with a NUL byte in its first 8 KiB comes back
// as EILSEQ, and one that does not hold the filter as ENOMSG, without
// their bytes; flags bit 0 (fsFold) matches the filter (ASCII, lower case)
// in either case; bit 1 (fsStat) examines the files instead of reading
// them. It returns the number of files queued, or -errno.
func fsSubmit(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
	inst := instanceFrom(ctx)
	ret := func(v int32) { stack[0] = uint64(uint32(v)) }
	if inst == nil || inst.req == nil || !hostfs.BatchSupported {
		ret(-wasi.ENOSYS)
		return
	}
	inst.stopIfOver()
	mem := inst.moduleMemory()
	if mem == nil {
		ret(-wasi.ENOSYS)
		return
	}
	dirB, ok1 := guestBytes(mem, stack[0], stack[1])
	namesB, ok2 := guestBytes(mem, stack[2], stack[3])
	filterB, ok3 := guestBytes(mem, stack[5], stack[6])
	if !ok1 || !ok2 || !ok3 {
		ret(-wasi.EFAULT)
		return
	}
	max := int64(stack[4])
	dir := string(dirB)
	if max <= 0 || len(namesB) == 0 || len(namesB) > hostfs.MaxNames || len(filterB) > hostfs.MaxFilter || len(dir) > 4096 ||
		!strings.HasPrefix(dir, "/") || path.Clean(dir) != dir || strings.IndexByte(dir, 0) >= 0 {
		ret(-wasi.EINVAL)
		return
	}
	max = min(max, hostfs.MaxFile)
	names := strings.Split(string(namesB), "\x00")
	for _, n := range names {
		if n == "" || n == "." || n == ".." || len(n) > 255 || strings.IndexByte(n, '/') >= 0 {
			ret(-wasi.EINVAL)
			return
		}
	}
	if inst.batch == nil {
		inst.batch = hostfs.NewBatchReader()
	}
	flags := uint32(stack[7])
	stat := flags&fsStat != 0
	var filter *hostfs.Filter
	switch {
	case flags&^(fsFold|fsStat) != 0, stat && (len(filterB) > 0 || flags&fsFold != 0):
		ret(-wasi.EINVAL)
		return
	case len(filterB) > 0:
		var ok bool
		if filter, ok = hostfs.NewFilter(filterB, flags&fsFold != 0); !ok {
			ret(-wasi.EINVAL)
			return
		}
	}
	open := func() (*os.File, uint32) { return hostfs.OpenDir(inst.filesystems(), dir) }
	if e := inst.batch.Submit(dir, open, names, max, filter, stat); e != 0 {
		ret(-int32(e))
		return
	}
	ret(int32(len(names)))
}

// fsTake is toolhost_fs_take(out, out_cap, wait): the files read so far,
// in the order named, as records of a 16-byte header (status: 0 or a WASI
// errno; the length of the data that follows; the file's size) and the
// data (a file's bytes, or with fsStat its time and type), one record
// after the other. It
// returns the bytes written, 0 when no file is queued (or, with wait 0,
// none is read yet), -needed when the next record does not fit in
// out_cap, or -errno.
func fsTake(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
	inst := instanceFrom(ctx)
	ret := func(v int32) { stack[0] = uint64(uint32(v)) }
	if inst == nil || inst.req == nil {
		ret(-wasi.ENOSYS)
		return
	}
	inst.stopIfOver()
	if inst.batch == nil {
		ret(0)
		return
	}
	mem := inst.moduleMemory()
	out, ok := guestBytes(mem, stack[0], stack[1])
	if mem == nil || !ok {
		ret(-wasi.EFAULT)
		return
	}
	n, taken, over := inst.batch.Take(out, uint32(stack[2]) != 0, inst.callDone)
	if taken > 0 && !inst.FileRead(taken) || over {
		panic(errCallOver)
	}
	ret(int32(n))
}

// toolhost_fs_submit's flags: fsFold matches the filter in either case;
// fsStat examines each file (without following a symbolic link) instead
// of reading it, each record's data then the file's modification time (ns
// since the epoch, i64) and WASI file type (u8), 16 bytes.
const (
	fsFold = 1
	fsStat = 2
)
