package extism

import (
	"context"
	"sync"
	"testing"

	"github.com/toolhost/toolhost/plugin"
)

// tinyRawModule exports run() -> i32 and a memory: the smallest module a
// raw-mode tool can name, quick to compile even under the race detector.
func tinyRawModule() []byte {
	return []byte{
		0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
		0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7f, // type: () -> i32
		0x03, 0x02, 0x01, 0x00, // func 0 of type 0
		0x05, 0x03, 0x01, 0x00, 0x01, // memory of 1 page
		0x07, 0x10, 0x02, // exports:
		0x03, 'r', 'u', 'n', 0x00, 0x00, // run = func 0
		0x06, 'm', 'e', 'm', 'o', 'r', 'y', 0x02, 0x00, // memory = memory 0
		0x0a, 0x06, 0x01, 0x04, 0x00, 0x41, 0x00, 0x0b, // code: i32.const 0
	}
}

// TestOnCompile: the hook hears each tool's compilation start and end, and
// a later adapter over the same cache directory reports it as cached.
func TestOnCompile(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var events []CompileEvent
	hook := func(ev CompileEvent) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	}
	spec := plugin.Spec{Name: "tiny", Source: plugin.Source{Kind: Kind, Bytes: tinyRawModule(), Export: "run"},
		InputSchema: []byte(`{"type":"object"}`)}
	for run, wantCached := range []bool{false, true} {
		events = nil
		a, err := New(Config{CacheDir: dir, OnCompile: hook})
		if err != nil {
			t.Fatal(err)
		}
		s := spec
		if _, err := a.Load(context.Background(), &s); err != nil {
			t.Fatal(err)
		}
		if err := a.Ready(context.Background()); err != nil {
			t.Fatal(err)
		}
		a.Close()
		mu.Lock()
		if len(events) != 2 || events[0].Done || !events[1].Done || events[1].Err != nil ||
			events[0].Tool != "tiny" || events[0].Cached != wantCached || events[1].Cached != wantCached || events[1].Duration <= 0 {
			t.Errorf("run %d: events %+v; want start and end of tiny, cached=%v", run, events, wantCached)
		}
		mu.Unlock()
	}
}
