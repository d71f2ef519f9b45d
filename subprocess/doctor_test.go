package subprocess

import (
	"slices"
	"strings"
	"testing"
	"time"
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

// TestPluginInItsCgroup: the host moves a warm shim into its tree's pids
// cgroup while the shim starts, and the plugin the shim forks is born in
// it (the cgroup's cap and membership hold from the plugin's first
// instruction on).
func TestPluginInItsCgroup(t *testing.T) {
	t.Parallel() // mostly waits (helper_test.go)
	a := newTestAdapter(t, nil)
	if a.cgroupParent == "" {
		t.Skip("no pids cgroup here")
	}
	mark := newMark(t)
	tool := load(t, a, testSpec(testPluginSum(), "echo", "serve", mark))
	mustServe(t, tool)
	pt := tool.(*pluginTool)
	pt.mu.Lock()
	p := pt.cur
	pt.mu.Unlock()
	if p == nil || p.runner.g.cgroup == "" {
		t.Fatalf("no running plugin with a cgroup: %+v", p)
	}
	members, err := readCgroupMembers(p.runner.g.cgroup)
	if err != nil {
		t.Fatal(err)
	}
	pids := marked(mark)
	if len(pids) != 1 {
		t.Fatalf("plugin processes %v", pids)
	}
	for _, pid := range []int{p.runner.g.root, pids[0]} { // the shim, the plugin
		if !slices.Contains(members, pid) {
			t.Errorf("process %d is not in the cgroup %s (members %v)", pid, p.runner.g.cgroup, members)
		}
	}
	pt.stopAll()
	assertNoneLeft(t, mark, 2*time.Second)
}
