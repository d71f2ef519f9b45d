//go:build !unix

package guestmem

// Pool recycles guest memories where they are reserved outside the Go
// heap (unix); elsewhere it keeps nothing.
type Pool struct{}

// Drain keeps nothing from then on.
func (p *Pool) Drain() {}

// Misses is how many memories were asked for that the pool could not
// give: every one.
func (p *Pool) Misses() int { return 0 }

// Len is the number of memories kept: none.
func (p *Pool) Len() int { return 0 }
