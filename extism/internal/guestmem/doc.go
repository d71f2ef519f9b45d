// Package guestmem makes the linear memories of wasm guests for wazero: an
// Allocator per instance enforces the memory limit and reports when it was
// hit; on unix a memory is a reservation of address space for its whole
// limit, outside the Go heap, which grows without copying and which a Pool
// recycles from closed instances to new ones (cleared before the new guest
// runs); a Plan, read from a module's data segments, spares clearing what
// instantiation is about to overwrite.
//
// Nothing here knows about Extism beyond the order in which an Extism
// instance makes its two memories (the kernel's, then the module's own).
package guestmem
