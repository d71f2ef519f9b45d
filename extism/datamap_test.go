//go:build unix

package extism

import (
	"bytes"
	"context"
	"testing"

	"github.com/toolhost/toolhost/extism/builtin"
	"github.com/toolhost/toolhost/plugin"
)

func TestDataPlanClearExcept(t *testing.T) {
	p := &dataPlan{size: 64, ranges: []memRange{{4, 8}, {10, 20}, {40, 64}}}
	for _, c := range []struct{ lo, hi uint64 }{{0, 64}, {0, 30}, {5, 12}, {20, 40}, {50, 60}, {0, 0}} {
		b := bytes.Repeat([]byte{0xab}, 64)
		p.clearExcept(b, c.lo, c.hi)
		for i := range b {
			inRange := uint64(i) >= c.lo && uint64(i) < c.hi
			covered := false
			for _, r := range p.ranges {
				covered = covered || uint64(i) >= r.off && uint64(i) < r.end
			}
			if want := byte(0xab); inRange && !covered {
				want = 0
				if b[i] != want {
					t.Fatalf("[%d,%d): byte %d = %#x, want cleared", c.lo, c.hi, i, b[i])
				}
			} else if b[i] != 0xab {
				t.Fatalf("[%d,%d): byte %d cleared, outside the range or under a segment", c.lo, c.hi, i)
			}
		}
	}
}

// TestClearDirty: every non-zero byte is cleared, wherever it sits in a
// chunk and however the slice is cut, and nothing outside the slice is.
func TestClearDirty(t *testing.T) {
	const size = 5*len(zeroChunk) + 123
	for _, cut := range []struct{ lo, hi int }{{0, size}, {1, size - 1}, {4095, 8193}, {100, 200}, {7, 7}} {
		for _, at := range []int{cut.lo, cut.hi - 1, (cut.lo + cut.hi) / 2, cut.lo + len(zeroChunk), cut.hi - len(zeroChunk) - 1} {
			if at < cut.lo || at >= cut.hi {
				continue
			}
			b := make([]byte, size)
			b[at] = 0x5a
			if cut.lo > 0 {
				b[cut.lo-1] = 0xee
			}
			if cut.hi < size {
				b[cut.hi] = 0xee
			}
			clearDirty(b[cut.lo:cut.hi])
			if b[at] != 0 {
				t.Errorf("[%d,%d): byte %d not cleared", cut.lo, cut.hi, at)
			}
			if (cut.lo > 0 && b[cut.lo-1] != 0xee) || (cut.hi < size && b[cut.hi] != 0xee) {
				t.Errorf("[%d,%d): a byte outside the slice was cleared", cut.lo, cut.hi)
			}
		}
	}
	b := bytes.Repeat([]byte{0xab}, size)
	clearDirty(b)
	if !bytes.Equal(b, make([]byte, size)) {
		t.Error("a slice full of data was not cleared entirely")
	}
}

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
		for _, lm := range inst.mem.made {
			mm, ok := lm.(*mappedMemory)
			if !ok {
				t.Fatal("a memory was not mapped")
			}
			out = append(out, bytes.Clone(mm.buf))
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

	a.mem.drain()
	a.mem = memPool{}
	fresh := newInst()
	want := images(fresh)
	// Garbage everywhere a call could have written, and past the end.
	for _, lm := range fresh.mem.made {
		mm := lm.(*mappedMemory)
		mm.Reallocate(uint64(len(mm.buf)) + 1<<20)
		for i := range mm.buf {
			mm.buf[i] = 0xab
		}
	}
	fresh.close()
	if len(a.mem.free) != 2 {
		t.Fatalf("the pool holds %d memories, want 2", len(a.mem.free))
	}
	recycled := newInst()
	defer recycled.close()
	if !recycled.mem.planned {
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
	main := recycled.mem.made[1].(*mappedMemory)
	size := uint64(len(main.buf))
	grown := main.Reallocate(size + 1<<20)
	if !bytes.Equal(grown[size:], make([]byte, 1<<20)) {
		t.Error("growing a recycled memory exposed an earlier instance's bytes")
	}
}
