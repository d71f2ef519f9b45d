//go:build !unix

package extism

import "github.com/tetratelabs/wazero/experimental"

// mapMemory: address-space reservation is unix-only here; guest memories
// live on the Go heap.
func mapMemory(*memLimiter, uint64) experimental.LinearMemory { return nil }
