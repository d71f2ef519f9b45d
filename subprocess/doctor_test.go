package subprocess

import (
	"strings"
	"testing"
)

// TestSubreaper: the adapter makes the host the child subreaper whether or
// not plugins get a PID namespace, and the doctor report says so before any
// adapter exists.
func TestSubreaper(t *testing.T) {
	if !platformSupported {
		t.Skip("no subprocess tier on this platform")
	}
	r := Report()
	if !r.Subreaper || !strings.Contains(r.String(), "child subreaper:       yes") {
		t.Fatalf("doctor report: Subreaper=%v\n%s", r.Subreaper, r)
	}
	for _, nons := range []bool{false, true} {
		a := newTestAdapter(t, func(c *Config) { c.NoPIDNamespace = nons })
		if !a.Hardening().Subreaper {
			t.Errorf("NoPIDNamespace=%v: adapter is not the subreaper: %+v", nons, a.Hardening())
		}
	}
	if !isSubreaper() {
		t.Fatal("PR_GET_CHILD_SUBREAPER: the process is not a subreaper")
	}
}
