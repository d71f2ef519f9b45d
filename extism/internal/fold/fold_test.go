package fold

import (
	"regexp"
	"strings"
	"testing"
)

// FuzzRule: whenever (?i) finds an ASCII needle in data, either the
// lower-cased data holds the lower-cased needle or BeyondASCII says so.
func FuzzRule(f *testing.F) {
	f.Add("in \u212aelvin", "kelvin")
	f.Add("pas\u017f", "PASS")
	f.Add("Hello World", "o w")
	f.Fuzz(func(t *testing.T, data, needle string) {
		for i := 0; i < len(needle); i++ {
			if needle[i] >= 0x80 {
				return
			}
		}
		if needle == "" || !regexp.MustCompile("(?i)"+regexp.QuoteMeta(needle)).MatchString(data) {
			return
		}
		low := strings.ToLower(needle)
		if !strings.Contains(string(Lower(nil, []byte(data))), low) && !BeyondASCII([]byte(data), []byte(low)) {
			t.Fatalf("(?i)%q matches %q, which the rule rules out", needle, data)
		}
	})
}

func TestLower(t *testing.T) {
	if got := string(Lower(make([]byte, 3), []byte("AbZ é\u212a"))); got != "abz é\u212a" {
		t.Fatalf("Lower = %q", got)
	}
}
