package extism

import "testing"

// TestInstPool checks the pool's order (newest first), its size and that a
// closed pool hands back what it held and takes nothing more.
func TestInstPool(t *testing.T) {
	p := newInstPool(2)
	a, b, c := &instance{}, &instance{}, &instance{}
	if p.pop() != nil || p.full() {
		t.Fatal("a new pool is not empty")
	}
	p.push(a)
	p.push(b)
	if !p.full() {
		t.Fatal("a pool of 2 holding 2 is not full")
	}
	if got := p.pop(); got != b {
		t.Fatal("pop did not return the newest instance")
	}
	p.push(c)
	if got := p.pop(); got != c {
		t.Fatal("pop did not return the newest instance")
	}
	held := p.close()
	if len(held) != 1 || held[0] != a {
		t.Fatalf("close returned %d instances, want the one left", len(held))
	}
	if p.push(b) || p.pop() != nil {
		t.Fatal("a closed pool took an instance")
	}
}
