//go:build race

package raceexit

const enabled = true
