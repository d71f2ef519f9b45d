//go:build !race

package subprocess

const raceEnabled = false
