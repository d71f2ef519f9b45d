//go:build unix

package extism

import (
	"bytes"
	"context"
	"testing"

	"github.com/toolhost/toolhost/extism/builtin"
	"github.com/toolhost/toolhost/extism/internal/guestmem"
	"github.com/toolhost/toolhost/plugin"
)

// TestRecycledMemoryMatchesFresh fills the memories of an instance of a
// snapshotted built-in with garbage, as a call might leave them, and
// checks that the next instance, made in those recycled memories with
// only the gaps between data segments cleared, starts with exactly the
// bytes of an instance made in fresh memory.
func TestRecycledMemoryMatchesFresh(t *testing.T) {
	a, err := New(Config{CacheDir: cacheDir, Builtins: builtin.LookupTool})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	sp := plugin.Spec{
		Name:         "filesystem.search",
		Source:       plugin.Source{Kind: Kind, Builtin: "filesystem", Tool: "filesystem.search"},
		Capabilities: plugin.Capabilities{Mounts: []plugin.Mount{{HostPath: t.TempDir(), GuestPath: "/workspace", ReadOnly: true}}},
		Limits:       plugin.Limits{Pool: -1},
	}
	tool, err := a.Load(context.Background(), &sp)
	if err != nil {
		t.Fatal(err)
	}
	wt := tool.(*wasmTool)
	if err := wt.ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !wt.snap.on || wt.snap.plan == nil {
		t.Fatalf("snapshot %v, data plan %v: nothing to test", wt.snap.on, wt.snap.plan != nil)
	}
	images := func(inst *instance) [][]byte {
		var out [][]byte
		for _, lm := range inst.mem.Memories() {
			if !guestmem.Mapped(lm) {
				t.Fatal("a memory was not mapped")
			}
			out = append(out, bytes.Clone(guestmem.Bytes(lm)))
		}
		return out
	}
	newInst := func() *instance {
		inst, err := wt.newInstance(context.Background(), wt.spec)
		if err != nil {
			t.Fatal(err)
		}
		return inst
	}

	a.mem.Drain()
	a.mem = guestmem.Pool{}
	fresh := newInst()
	want := images(fresh)
	// Garbage everywhere a call could have written, and past the end.
	for _, lm := range fresh.mem.Memories() {
		b := lm.Reallocate(uint64(len(guestmem.Bytes(lm))) + 1<<20)
		for i := range b {
			b[i] = 0xab
		}
	}
	fresh.close()
	if n := a.mem.Len(); n != 2 {
		t.Fatalf("the pool holds %d memories, want 2", n)
	}
	recycled := newInst()
	defer recycled.close()
	if !recycled.mem.Planned() {
		t.Fatal("the recycled instance did not use the data plan")
	}
	got := images(recycled)
	if len(got) != len(want) {
		t.Fatalf("%d memories, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			n := 0
			for j := range min(len(got[i]), len(want[i])) {
				if got[i][j] != want[i][j] {
					n++
				}
			}
			t.Errorf("memory %d: %d of %d bytes differ from a fresh instance's (len %d, want %d)", i, n, len(want[i]), len(got[i]), len(want[i]))
		}
	}
	// The memory grows over the garbage past its initial size: zero.
	main := recycled.mem.Memories()[1]
	size := uint64(len(guestmem.Bytes(main)))
	grown := main.Reallocate(size + 1<<20)
	if !bytes.Equal(grown[size:], make([]byte, 1<<20)) {
		t.Error("growing a recycled memory exposed an earlier instance's bytes")
	}
}

// TestSustainedCallsRecycleMemories: back-to-back calls, with the pool
// refilling as they go, reuse the memories of the instances they used
// rather than reserving new ones (which costs a page fault per page of the
// memory image): used instances are closed before new ones are made.
func TestSustainedCallsRecycleMemories(t *testing.T) {
	a, err := New(Config{CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	sp := guestSpec("fixtures", "echo")
	tool := loadWith(t, a, sp)
	misses := a.mem.Misses
	for range 20 { // the memories in circulation settle
		if _, err := call(t, tool, &sp, map[string]any{"text": "hi"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	before := misses()
	const n = 300
	for range n {
		if _, err := call(t, tool, &sp, map[string]any{"text": "hi"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Two memories per instance: the module's and the Extism kernel's.
	m := misses() - before
	t.Logf("%d of %d memories reserved afresh", m, 2*n)
	if m > n/20 {
		t.Errorf("%d of %d memories for %d calls were reserved afresh", m, 2*n, n)
	}
}
