//go:build wasip1

// Command filesystem is toolhost's built-in file plugin: filesystem.search,
// .write, .edit and .delete over the directories the operator mounts
// (docs/tools.md); filesystem.read and .list are the Rust module's
// (../filesystem-rs), and the catalog routes them there. It sees nothing
// else: every path goes through the host's os.Root-backed mounts, and this
// plugin refuses paths outside them before it even asks.
package main

import (
	"fmt"
	"unicode/utf8"

	"github.com/toolhost/toolhost/extism/builtin/internal/hostcfg"
	"github.com/toolhost/toolhost/extism/builtin/internal/mounts"
	"github.com/toolhost/toolhost/extism/builtin/internal/scan"
	"github.com/toolhost/toolhost/shared/guest"
)

func main() {}

func init() {
	guest.Register(searchTool(), writeTool(), editTool(), deleteTool())
}

// The default of the Extism config key max_file_size.
const defaultMaxFileSize = 10 << 20

// fail turns an *mounts.Error into a failed result with its code.
func fail(e *mounts.Error) *guest.Result { return guest.ErrorCode(e.Code, "%s", e.Msg) }

func invalid(format string, args ...any) *guest.Result {
	return guest.ErrorCode(mounts.CodeInvalidRequest, format, args...)
}

// decode reads the arguments strictly: an unknown field is a mistake the
// model should hear about.
func decode(c *guest.Call, v any) *guest.Result {
	if err := c.Bind(v); err != nil {
		return invalid("invalid arguments: %v", err)
	}
	return nil
}

// configSize reads a size from the plugin's Extism config.
func configSize(key string, def int64) (int64, *guest.Result) {
	v, ok := hostcfg.Get(key)
	if !ok || v == "" {
		return def, nil
	}
	n, err := mounts.ParseSize(v)
	if err != nil || n <= 0 {
		return 0, guest.ErrorCode(mounts.CodeFailed, "the operator's config %s = %q is not a size: %v", key, v, err)
	}
	return n, nil
}

// resolve resolves a path argument against this instance's mounts.
func resolve(p string) (mounts.Path, *guest.Result) {
	r, err := mounts.Discover().Resolve(p)
	if err != nil {
		return r, fail(err)
	}
	return r, nil
}

func tooLarge(shown string, size, max int64) *guest.Result {
	return guest.ErrorCode(mounts.CodeFileTooLarge, "%s is %d bytes, over the %d-byte limit for reading (max_file_size)", shown, size, max)
}

// displayName quotes a name that is not valid UTF-8, so that a result
// stays readable and says why such a file cannot be named in a call.
func displayName(p string) (string, bool) {
	if utf8.ValidString(p) {
		return p, true
	}
	q := fmt.Sprintf("%q", p)
	return q[1 : len(q)-1], false
}

// binaryPrefix is how much of a file isBinary looks at.
const binaryPrefix = 8 << 10

// isBinary reports whether data looks binary: a NUL byte in its first 8 KiB,
// the test git and grep use.
func isBinary(data []byte) bool {
	return scan.IndexByte(data[:min(len(data), binaryPrefix)], 0) >= 0
}
