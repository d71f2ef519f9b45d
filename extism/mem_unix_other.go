//go:build unix && !linux

package extism

const mapNoReserve = 0
