package extism

import (
	"context"
	"math"

	extism "github.com/extism/go-sdk"

	"github.com/toolhost/toolhost/extism/internal/wasi"
)

// hostProgress is the host function a guest reports its progress with.
const hostProgress = "toolhost_progress"

// progress implements toolhost_progress(progress: f64, total: f64,
// msg: i32, msg_len: i32) -> i32: the call's progress, progress out of
// total (0: unknown), with a message (UTF-8, may be empty), for the caller
// (an MCP client that asked for progress gets notifications/progress). The
// host redacts the call's secrets, drops progress that does not increase,
// and caps what one call reports (plugin.Notifier). It returns 0, -EFAULT
// (21) when the message is outside the guest's memory, -ENOSYS (52)
// outside a call.
func progress(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
	inst := instanceFrom(ctx)
	ret := func(v int32) { stack[0] = uint64(uint32(v)) }
	if inst == nil || inst.req == nil || inst.p == nil {
		ret(-wasi.ENOSYS)
		return
	}
	inst.stopIfOver()
	msg, ok := guestBytes(inst.moduleMemory(), stack[2], stack[3])
	if !ok {
		ret(-wasi.EFAULT)
		return
	}
	if n := inst.req.Notify; n != nil {
		n.Progress(math.Float64frombits(stack[0]), math.Float64frombits(stack[1]), string(msg))
	}
	ret(0)
}

// clientLevel maps an Extism log level to the caller's (MCP's, RFC 5424).
func clientLevel(l extism.LogLevel) string {
	switch l {
	case extism.LogLevelTrace, extism.LogLevelDebug:
		return "debug"
	case extism.LogLevelWarn:
		return "warning"
	case extism.LogLevelError:
		return "error"
	}
	return "info"
}
