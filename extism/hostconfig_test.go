package extism

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/extism/internal/wasi"
)

// TestConfigGet calls toolhost_config_get directly: the value of a key of
// the plugin's config when it fits, its length alone when it does not,
// -ENOENT for a key not set and -EFAULT for a buffer outside memory.
func TestConfigGet(t *testing.T) {
	long := strings.Repeat("0123456789", 30)
	spec := guestSpec("hostile", "configget")
	spec.Source.Config = map[string]string{"greeting": "héllo", "long": long, "empty": ""}
	tool := load(t, spec)
	for _, tc := range []struct {
		name string
		args map[string]any
		ret  int32
		val  string
	}{
		{"a key", map[string]any{"key": "greeting", "buf": 64}, int32(len("héllo")), "héllo"},
		{"an exact fit", map[string]any{"key": "greeting", "buf": len("héllo")}, int32(len("héllo")), "héllo"},
		{"a value longer than the buffer", map[string]any{"key": "long", "buf": 16}, int32(len(long)), ""},
		{"a long value", map[string]any{"key": "long", "buf": 512}, int32(len(long)), long},
		{"an empty value", map[string]any{"key": "empty", "buf": 8}, 0, ""},
		{"a key not set", map[string]any{"key": "missing", "buf": 8}, -wasi.ENOENT, ""},
		{"no key", map[string]any{"key": "", "buf": 8}, -wasi.ENOENT, ""},
		{"a buffer outside memory", map[string]any{"key": "greeting", "bad_pointer": true}, -wasi.EFAULT, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := call(t, tool, &spec, tc.args, nil)
			if err != nil {
				t.Fatal(err)
			}
			var out struct {
				Ret   int32  `json:"ret"`
				Value string `json:"value"`
			}
			if err := json.Unmarshal(res.StructuredContent, &out); err != nil {
				t.Fatalf("output %s: %v", res.StructuredContent, err)
			}
			if out.Ret != tc.ret || out.Value != tc.val {
				t.Fatalf("got %d %q, want %d %q", out.Ret, out.Value, tc.ret, tc.val)
			}
		})
	}
}
