//go:build linux

package guestmem

import "syscall"

// mapNoReserve keeps a reservation from counting against overcommit limits:
// only touched pages use memory.
const mapNoReserve = syscall.MAP_NORESERVE
