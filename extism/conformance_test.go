package extism

import (
	"context"
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
			tool := load(t, sp)
			// As a long-running host does after loading: compile now and
			// start filling the pool, so that the suite's tight timeouts
			// measure calls, not the first compile (slow under -race).
			if err := shared.Ready(context.Background()); err != nil {
				t.Fatal(err)
			}
			return tool
		},
	})
}
