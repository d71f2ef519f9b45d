package subprocess

import (
	"strings"
	"testing"
)

// TestSubreaper: orphans never re-parent to init. Without a PID namespace
// the adapter makes the host the child subreaper; with one the shim (the
// namespace's init) takes them, and the doctor report says which.
func TestSubreaper(t *testing.T) {
	if !platformSupported {
		t.Skip("no subprocess tier on this platform")
	}
	r := Report()
	want := "child subreaper:       yes"
	if r.PIDNamespace {
		want = "child subreaper:       the shim"
	}
	if !strings.Contains(r.String(), want) || r.Subreaper == r.PIDNamespace {
		t.Fatalf("doctor report: Subreaper=%v PIDNamespace=%v, want %q in\n%s", r.Subreaper, r.PIDNamespace, want, r)
	}
	a := newTestAdapter(t, func(c *Config) { c.NoPIDNamespace = true })
	if h := a.Hardening(); !h.Subreaper || h.PIDNamespace {
		t.Errorf("without a PID namespace: %+v, want the host as subreaper", h)
	}
	if !isSubreaper() {
		t.Fatal("PR_GET_CHILD_SUBREAPER: the process is not a subreaper")
	}
}
