//go:build race

package subprocess

// raceEnabled: the race detector maps terabytes of shadow memory, which
// RLIMIT_DATA counts, so a race-built test plugin cannot run under the
// data-segment limits the tests use.
const raceEnabled = true
