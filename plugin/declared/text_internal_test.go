package declared

import (
	"reflect"
	"strings"
	"testing"
)

// parseTextSlow is ParseText as first written: each "{{" tried against
// the first "}}" after it. ParseText must give its answer on every input.
func parseTextSlow(s string) Text {
	var t Text
	lit := 0
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], "{{")
		if j < 0 {
			break
		}
		j += i
		k := strings.Index(s[j+2:], "}}")
		if k < 0 {
			i = j + 1
			continue
		}
		name := strings.TrimSpace(s[j+2 : j+2+k])
		if !ValidName(name) {
			i = j + 1
			continue
		}
		if j > lit {
			t.parts = append(t.parts, part{lit: s[lit:j]})
		}
		t.parts = append(t.parts, part{arg: name})
		lit, i = j+2+k+2, j+2+k+2
	}
	if lit < len(s) {
		t.parts = append(t.parts, part{lit: s[lit:]})
	}
	return t
}

func FuzzParseTextSlow(f *testing.F) {
	for _, s := range []string{
		"", "plain", "{{a}} and {{ b_2 }}", "{{{a}}}", "{{{{x}}}}", "{{ {{a}} }}", "{{a}}}}{{b}}",
		"{{ not one }} {{1a}} {{}} {{a", "{{{{{{", "{{ {{ {{ }}", "{{a\\n}}{{b}}", "}}{{a}}{{", "{{{a}} {{b}}}",
		"{{a-}}{{_}}{{-a}}", "{{a}{{b}}", "{{a}}{{", "{{\\t a \\t}}x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ParseText(s), parseTextSlow(s); !reflect.DeepEqual(got, want) {
			t.Fatalf("ParseText(%q) = %+v, the slow path gives %+v", s, got.parts, want.parts)
		}
	})
}
