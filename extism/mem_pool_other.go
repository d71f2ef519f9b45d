//go:build !unix

package extism

// memPool recycles guest memories where they are reserved outside the Go
// heap (unix); elsewhere it keeps nothing.
type memPool struct{}

func (p *memPool) drain() {}
