package plugin_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/toolhost/toolhost/plugin"
)

// recorder is a caller's Notifier that keeps what reaches it.
type recorder struct {
	mu       sync.Mutex
	progress []float64
	messages []string
}

func (r *recorder) Progress(p, _ float64, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.progress = append(r.progress, p)
	r.messages = append(r.messages, msg)
}

func (r *recorder) Log(level, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.messages = append(r.messages, level+": "+msg)
}

// TestNotify: what a tool reports while it runs reaches the caller with the
// call's secrets redacted, progress only while it increases, at most 256
// reports, long messages cut, and nothing once the call has returned.
func TestNotify(t *testing.T) {
	const secret = "sk-live-12345"
	h := newHost(t, plugin.Options{
		Grants:  plugin.Capabilities{Secrets: []string{"KEY"}},
		Secrets: plugin.SecretFunc(func(context.Context, string) (string, error) { return secret, nil }),
	})
	var kept plugin.Notifier
	mustRegister(t, h, plugin.Spec{Name: "chatty", Tier: plugin.TierReadOnly, Capabilities: plugin.Capabilities{Secrets: []string{"KEY"}}},
		fn(`{"type":"object"}`, func(_ context.Context, req *plugin.Request) (*plugin.Result, error) {
			n := req.Notify
			kept = n
			n.Progress(1, 10, "using "+secret)
			n.Progress(1, 10, "again")              // not increasing: dropped
			n.Progress(0.5, 10, "back")             // dropped
			n.Progress(math.Inf(1), 10, "infinite") // dropped: JSON has no infinity
			n.Progress(1.5, math.NaN(), "no total") // dropped
			n.Progress(2, 10, "")
			n.Log("warning", "key is "+secret)
			n.Log("shouting", "an unknown level is info")
			n.Log("info", strings.Repeat("é", 5000))
			for i := 0; i < 1000; i++ {
				n.Progress(float64(3+i), 0, fmt.Sprint(i))
			}
			return &plugin.Result{Content: []plugin.Content{{Type: "text", Text: "done"}}}, nil
		}))
	rec := &recorder{}
	c := call("chatty", `{}`)
	c.Notify = rec
	if _, err := invoke(t, h, c); err != nil {
		t.Fatal(err)
	}
	kept.Progress(5000, 0, "after the call")
	kept.Log("info", "after the call")

	if got := len(rec.progress) + 3; got != 256 {
		t.Errorf("%d reports reached the caller, want 256 (the cap)", got)
	}
	if strings.Contains(strings.Join(rec.messages, "|"), "infinite") || strings.Contains(strings.Join(rec.messages, "|"), "no total") {
		t.Errorf("progress that is not finite reached the caller: %q", rec.messages[:4])
	}
	if rec.progress[0] != 1 || rec.progress[1] != 2 || rec.progress[2] != 3 {
		t.Errorf("progress = %v..., want 1, 2, 3, ...", rec.progress[:3])
	}
	for i := 1; i < len(rec.progress); i++ {
		if rec.progress[i] <= rec.progress[i-1] {
			t.Fatalf("progress did not increase: %v", rec.progress[i-1:i+1])
		}
	}
	all := strings.Join(rec.messages, "\n")
	if strings.Contains(all, secret) || !strings.Contains(all, "using [REDACTED:KEY]") || !strings.Contains(all, "key is [REDACTED:KEY]") {
		t.Errorf("secret not redacted:\n%.300s", all)
	}
	if !strings.Contains(all, "info: an unknown level is info") || !strings.Contains(all, "warning: key is") {
		t.Errorf("log levels: %.300s", all)
	}
	for _, m := range rec.messages {
		if len(m) > 4<<10+16 {
			t.Errorf("a message of %d bytes passed (cap 4 KiB)", len(m))
		}
		if strings.Contains(m, "after the call") {
			t.Errorf("a report after the call returned reached the caller: %q", m)
		}
	}
}

// A call without a listening caller still gives the tool a Notifier.
func TestNotifyNobodyListens(t *testing.T) {
	h := newHost(t, plugin.Options{})
	mustRegister(t, h, plugin.Spec{Name: "quiet", Tier: plugin.TierReadOnly},
		fn(`{"type":"object"}`, func(_ context.Context, req *plugin.Request) (*plugin.Result, error) {
			req.Notify.Progress(1, 2, "nobody hears this")
			req.Notify.Log("info", "nor this")
			return &plugin.Result{Content: []plugin.Content{{Type: "text", Text: "ok"}}}, nil
		}))
	if _, err := invoke(t, h, call("quiet", `{}`)); err != nil {
		t.Fatal(err)
	}
}

// deaf is a caller's Notifier that says nothing it is sent reaches anyone.
type deaf struct{ recorder }

func (*deaf) Listening() bool { return false }

// TestListening: a tool can tell whether what it reports reaches anyone —
// not without a listener, not when the listener says so — through the
// pipeline's notifier too.
func TestListening(t *testing.T) {
	h := newHost(t, plugin.Options{})
	var got []bool
	mustRegister(t, h, plugin.Spec{Name: "ear", Tier: plugin.TierReadOnly},
		fn(`{"type":"object"}`, func(_ context.Context, req *plugin.Request) (*plugin.Result, error) {
			got = append(got, plugin.Listening(req.Notify))
			return &plugin.Result{Content: []plugin.Content{{Type: "text", Text: "ok"}}}, nil
		}))
	for _, n := range []plugin.Notifier{nil, &recorder{}, &deaf{}} {
		c := call("ear", `{}`)
		c.Notify = n
		if _, err := invoke(t, h, c); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(got) != "[false true false]" {
		t.Errorf("Listening through the pipeline = %v, want [false true false]", got)
	}
	if plugin.Listening(nil) || !plugin.Listening(&recorder{}) || plugin.Listening(&deaf{}) {
		t.Error("Listening on the caller's notifiers is wrong")
	}
}
