//go:build unix && !linux

package guestmem

const mapNoReserve = 0
