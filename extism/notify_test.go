package extism

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/extism/internal/wasi"
	"github.com/toolhost/toolhost/plugin"
)

// notes is a plugin.Notifier that keeps what reaches it.
type notes struct {
	mu  sync.Mutex
	got []string
}

func (n *notes) Progress(p, total float64, msg string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, fmt.Sprintf("progress %v/%v %s", p, total, msg))
}

func (n *notes) Log(level, msg string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, level+" "+msg)
}

// TestGuestReportsProgressAndLogs: a guest's toolhost_progress calls and
// its log lines reach the call's Notifier, in order; a message outside the
// guest's memory is refused with -EFAULT, not read.
func TestGuestReportsProgressAndLogs(t *testing.T) {
	sp := guestSpec("hostile", "report")
	tool := load(t, sp)
	n := &notes{}
	req := &plugin.Request{
		ID: "test", Name: sp.Name, Arguments: json.RawMessage(`{"n":3}`), Spec: &sp,
		Secrets: plugin.NewSecrets(nil), Log: hclog.NewNullLogger(), Notify: n,
	}
	res, err := tool.Call(context.Background(), req)
	if err != nil || res.IsError {
		t.Fatalf("report: %v %v", err, res)
	}
	want := []string{
		"progress 1/3 step 1", "info did step 1",
		"progress 2/3 step 2", "info did step 2",
		"progress 3/3 step 3", "info did step 3",
	}
	if fmt.Sprint(n.got) != fmt.Sprint(want) {
		t.Errorf("notifications:\n got %q\nwant %q", n.got, want)
	}
	if got := string(res.StructuredContent); got != fmt.Sprintf(`{"bad_pointer":%d}`, -wasi.EFAULT) {
		t.Errorf("progress with a message outside memory answered %s, want -EFAULT", got)
	}
}

// TestGuestFloodsProgress: a guest reporting hundreds of times through the
// pipeline gets its call answered, and its caller at most the host's cap of
// reports, in increasing order.
func TestGuestFloodsProgress(t *testing.T) {
	h := newHost(t)
	sp := guestSpec("hostile", "report")
	sp.Tier = plugin.TierReadOnly
	hostLoad(t, h, sp)
	n := &notes{}
	res, err := h.Invoke(context.Background(), plugin.Call{Name: sp.Name, Arguments: json.RawMessage(`{"n":600}`), Notify: n})
	if err != nil || res.IsError {
		t.Fatalf("report n=600: %v %v", err, res)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.got) != 256 {
		t.Errorf("%d reports reached the caller, want the cap of 256", len(n.got))
	}
	if n.got[0] != "progress 1/600 step 1" || n.got[254] != "progress 128/600 step 128" {
		t.Errorf("reports out of order: %q ... %q", n.got[0], n.got[254])
	}
}
