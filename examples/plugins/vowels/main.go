//go:build wasip1

// Command vowels is the smallest useful Extism plugin: one plain export,
// count_vowels, written against go-pdk alone. toolhost runs it in raw mode:
// the tool's HCL block names the export and declares its schemas.
package main

import (
	"strings"

	pdk "github.com/extism/go-pdk"
)

type input struct {
	Text string `json:"text"`
}

type output struct {
	Count  int    `json:"count"`
	Vowels string `json:"vowels"`
}

//go:wasmexport count_vowels
func countVowels() int32 {
	var in input
	if err := pdk.InputJSON(&in); err != nil {
		pdk.SetError(err)
		return 1
	}
	var out output
	for _, c := range strings.ToLower(in.Text) {
		if strings.ContainsRune("aeiou", c) {
			out.Count++
			if !strings.ContainsRune(out.Vowels, c) {
				out.Vowels += string(c)
			}
		}
	}
	if err := pdk.OutputJSON(out); err != nil {
		pdk.SetError(err)
		return 1
	}
	return 0
}

func main() {}
