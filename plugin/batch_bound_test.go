package plugin_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolhost/toolhost/plugin"
)

// A large batch of read_only calls runs concurrently but never more than 16
// at a time, and every outcome lands in its place.
func TestInvokeBatchBoundsConcurrency(t *testing.T) {
	var running, peak atomic.Int32
	release := make(chan struct{})
	var once sync.Once
	tool := plugin.Func(plugin.Descriptor{InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
			n := running.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			if n == 16 {
				once.Do(func() { close(release) }) // the 16th concurrent call lets everyone go
			}
			<-release
			running.Add(-1)
			return &plugin.Result{Content: []plugin.Content{plugin.Text(string(req.Arguments))}}, nil
		})
	h, err := plugin.NewHost(plugin.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.Register(plugin.Spec{Name: "wait", Tier: plugin.TierReadOnly}, tool); err != nil {
		t.Fatal(err)
	}
	calls := make([]plugin.Call, 100)
	for i := range calls {
		calls[i] = plugin.Call{Name: "wait", Arguments: json.RawMessage(`{"i":` + strings.Repeat("1", 1+i%3) + `}`)}
	}
	out := h.InvokeBatch(context.Background(), calls)
	if p := peak.Load(); p != 16 {
		t.Errorf("peak concurrency = %d, want 16", p)
	}
	for i, o := range out {
		if o.Err != nil || o.Result.TextContent() != string(calls[i].Arguments) {
			t.Fatalf("outcome %d = %v %v", i, o.Result, o.Err)
		}
	}
}

func TestRegisterRefusesDisabled(t *testing.T) {
	h, _ := plugin.NewHost(plugin.Options{})
	defer h.Close()
	err := h.Register(plugin.Spec{Name: "off", Disabled: true}, plugin.Func(plugin.Descriptor{}, nil))
	if err == nil || !strings.Contains(err.Error(), "disabled") {
		t.Fatalf("err = %v", err)
	}
	if _, ok := h.Tool("off"); ok {
		t.Errorf("a disabled tool was registered")
	}
}
