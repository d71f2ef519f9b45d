package hostfs

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestBatchReadAhead: reading pauses once batchMaxAhead bytes are read and
// not taken, and a take gets what was read.
func TestBatchReadAhead(t *testing.T) {
	ws := t.TempDir()
	var big []string
	for i := range 3 {
		n := "big" + string(rune('0'+i))
		big = append(big, n)
		if err := os.WriteFile(filepath.Join(ws, n), make([]byte, MaxFile), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := os.Open(ws)
	if err != nil {
		t.Fatal(err)
	}
	b := NewBatchReader()
	defer b.Stop()
	open := func() (*os.File, uint32) { return dir, 0 }
	var names []string
	for range 8 {
		names = append(names, big...) // 24 MiB, none holding the filter
	}
	if e := b.Submit("/workspace", open, names, MaxFile, &Filter{needle: []byte("no such text")}, false); e != 0 {
		t.Fatal(e)
	}
	if e := b.Submit("/workspace", open, names[:1], MaxFile, nil, false); e != 0 {
		t.Fatal(e)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.mu.Lock()
		next, ahead, running, dirs := b.next, b.ahead, b.running, len(b.dirs)
		b.mu.Unlock()
		if dirs != 1 {
			t.Fatalf("%d directories open for one", dirs)
		}
		if ahead > batchMaxAhead+batchWorkers*(2*MaxFile) {
			t.Fatalf("%d bytes ahead", ahead)
		}
		if ahead >= batchMaxAhead && next < len(names) {
			break // paused, the rest unread
		}
		if running == 0 || time.Now().After(deadline) {
			t.Fatalf("reading did not pause: next %d of %d, ahead %d", next, len(names)+1, ahead)
		}
		time.Sleep(5 * time.Millisecond)
	}
	out := make([]byte, 4<<20)
	done := make(chan struct{})
	n, taken, _ := b.Take(out, true, done)
	if n <= 0 || taken < MaxFile {
		t.Fatalf("take: %d bytes, %d counted", n, taken)
	}
}
