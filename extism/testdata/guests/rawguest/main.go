//go:build wasip1

// Command rawguest is a test plugin written against go-pdk alone: plain
// exports for raw mode, and a list_tools/call_tool pair whose output is
// broken in the ways a careless plugin breaks it.
package main

import (
	"strings"

	pdk "github.com/extism/go-pdk"
)

//go:wasmexport count_vowels
func countVowels() int32 {
	in := pdk.InputString()
	n := 0
	for _, c := range strings.ToLower(in) {
		if strings.ContainsRune("aeiou", c) {
			n++
		}
	}
	pdk.OutputString(`{"count":` + itoa(n) + `}`)
	return 0
}

//go:wasmexport pdk_out
func pdkOut() int32 {
	// Output through Extism memory only: the slow path, for comparison.
	n := 1 << 20
	pdk.Output([]byte(strings.Repeat("z", n)))
	return 0
}

//go:wasmexport small
func small() int32 {
	pdk.OutputString(`{"ok":true}`)
	return 0
}

//go:wasmexport not_json
func notJSON() int32 {
	pdk.OutputString("this is not json")
	return 0
}

//go:wasmexport list_tools
func listTools() int32 {
	pdk.OutputString(`{"tools":[{"name":"garbage","inputSchema":{"type":"object"}},{"name":"truncated","inputSchema":{"type":"object"}},{"name":"nocontent","inputSchema":{"type":"object"}}]}`)
	return 0
}

//go:wasmexport call_tool
func callTool() int32 {
	in := pdk.InputString()
	switch {
	case strings.Contains(in, `"garbage"`):
		pdk.OutputString("<html>not json</html>")
	case strings.Contains(in, `"truncated"`):
		pdk.OutputString(`{"content":[{"type":"text","text":"cut`)
	default:
		pdk.OutputString(`{"isError":false}`)
	}
	return 0
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

func main() {}
