package plugintest_test

import (
	"testing"

	"github.com/toolhost/toolhost/plugin/plugintest"
)

// TestInProcess runs the conformance suite over the in-process adapter.
func TestInProcess(t *testing.T) {
	plugintest.Run(t, plugintest.InProcessHarness())
}
