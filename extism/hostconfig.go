package extism

import (
	"context"

	extism "github.com/extism/go-sdk"

	"github.com/toolhost/toolhost/extism/internal/wasi"
)

// hostConfigGet is the host function that reads a key of the plugin's
// Extism config in one call.
const hostConfigGet = "toolhost_config_get"

// configGet implements toolhost_config_get(key, key_len, out, out_cap: i32)
// -> i32: the value of the config key, the same one Extism's config_get
// reads, copied to out when it fits. It returns the value's length (the
// bytes copied when it is at most out_cap; the guest asks again with room
// for more otherwise), -ENOENT (44) when the key is not set, -EFAULT (21)
// when a buffer is outside the guest's memory, -ENOSYS (52) outside a
// toolhost instance.
//
// Extism's config_get goes through its kernel module: storing the key and
// loading the value there cost a guest a dozen host calls, each of which
// builds wazero call state anew; this is one.
func configGet(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
	inst := instanceFrom(ctx)
	ret := func(v int32) { stack[0] = uint64(uint32(v)) }
	if inst == nil || inst.p == nil {
		ret(-wasi.ENOSYS)
		return
	}
	mem := inst.moduleMemory()
	key, ok := guestBytes(mem, stack[0], stack[1])
	out, ok2 := guestBytes(mem, stack[2], stack[3])
	if mem == nil || !ok || !ok2 {
		ret(-wasi.EFAULT)
		return
	}
	v, found := inst.p.Config[string(key)]
	if !found {
		ret(-wasi.ENOENT)
		return
	}
	if len(v) > 1<<30 {
		ret(-wasi.EFAULT) // no guest buffer could hold it
		return
	}
	if len(v) <= len(out) {
		copy(out, v)
	}
	ret(int32(len(v)))
}
