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
			return load(t, guestSpec("fixtures", fixture))
		},
	})
}
