package plugin_test

import (
	"strings"
	"testing"

	"github.com/toolhost/toolhost/plugin"
)

// BenchmarkRedact redacts 1 MiB of tool output holding two secrets a few
// times, as the pipeline does for every output of a tool granted secrets.
func BenchmarkRedact(b *testing.B) {
	s := plugin.NewSecrets(map[string]string{"KEY": "sk-live-0123456789abcdef", "PASS": `p@ss/w+rd "<é>"`})
	line := "2026-11-24 INFO request id=42 status=200 bytes=5120 path=/v1/items?page=3 took=12ms\n"
	text := strings.Repeat(line, (1<<20)/len(line))
	text = text[:len(text)/2] + " sk-live-0123456789abcdef " + text[len(text)/2:] + `"p@ss/w+rd \"<é>\""`
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if out := s.Redact(text); !strings.Contains(out, "[REDACTED:KEY]") {
			b.Fatal("not redacted")
		}
	}
}
