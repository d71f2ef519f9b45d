package extism

import (
	"testing"

	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/plugin/plugintest"
)

// TestConformance runs the adapter conformance suite over the fixtures
// guest (testdata/guests/fixtures), one wasm module offering every fixture.
func TestConformance(t *testing.T) {
	plugintest.Run(t, plugintest.Harness{
		Load: func(t testing.TB, fixture string) plugin.Tool {
			sp := guestSpec("fixtures", fixture)
			// The suite calls sleep with a 200ms timeout right after two
			// other sleep calls; a deeper pool keeps fresh instances ready
			// even when building them is slow (-race).
			sp.Limits.Pool = 6
			return load(t, sp)
		},
	})
}
