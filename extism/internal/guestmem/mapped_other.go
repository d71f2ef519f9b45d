//go:build !unix

package guestmem

import "github.com/tetratelabs/wazero/experimental"

// mapMemory: address-space reservation is unix-only here; guest memories
// live on the Go heap.
func mapMemory(*Allocator, uint64) experimental.LinearMemory { return nil }

func isMapped(experimental.LinearMemory) bool { return false }
