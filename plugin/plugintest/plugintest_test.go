package plugintest_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/plugin/plugintest"
)

// TestInProcess runs the conformance suite over the in-process adapter.
func TestInProcess(t *testing.T) {
	plugintest.Run(t, plugintest.InProcessHarness())
}

// The in-process fixtures load the way a configuration's go {} blocks do:
// Host.Load hands a spec of kind "go" to the adapter, which picks the
// fixture its Source.Tool names, whatever the tool is called in the host.
func TestInProcessAdapterThroughHost(t *testing.T) {
	a := plugintest.InProcessAdapter()
	host, err := plugin.NewHost(plugin.Options{Adapters: []plugin.Adapter{a}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close() })
	ctx := context.Background()
	for _, f := range plugintest.Fixtures() {
		if err := host.Load(ctx, plugin.Spec{Name: "fx." + f, Source: plugin.Source{Kind: "go", Tool: f}}); err != nil {
			t.Fatalf("Load %s: %v", f, err)
		}
		info, ok := host.Tool("fx." + f)
		if !ok || info.Kind != "go" || !info.Available {
			t.Errorf("fx.%s: listed %v, %+v", f, ok, info)
		}
	}
	res, err := host.Invoke(ctx, plugin.Call{Name: "fx.echo", Arguments: json.RawMessage(`{"text":"through the adapter"}`)})
	if err != nil || res.TextContent() != "through the adapter" {
		t.Errorf("fx.echo: %v, %q", err, res.TextContent())
	}
	err = host.Load(ctx, plugin.Spec{Name: "fx.nope", Source: plugin.Source{Kind: "go", Tool: "nope"}})
	if err == nil || !strings.Contains(err.Error(), `no in-process tool "nope"`) {
		t.Errorf("loading an unknown fixture: %v", err)
	}
}

// TestRecoveringBackend runs the suite over a harness whose crash takes
// the backend down for a while (echo answers TOOL_UNAVAILABLE three times),
// as a restarting plugin process does: with Crashes set, the suite waits
// for recovery.
func TestRecoveringBackend(t *testing.T) {
	plugintest.Run(t, restartingHarness(3))
}

// restartingHarness is the in-process harness whose backend, after a
// crash, is unavailable for the next down calls to echo or structured.
func restartingHarness(down int64) plugintest.Harness {
	var outage atomic.Int64
	h := plugintest.InProcessHarness()
	load := h.Load
	h.Crashes = true
	h.RecoveryTimeout = 5 * time.Second
	h.Load = func(t testing.TB, fixture string) plugin.Tool {
		inner := load(t, fixture)
		return plugin.Func(inner.Descriptor(), func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
			switch fixture {
			case "crash":
				outage.Store(down)
			case "echo", "structured":
				if outage.Add(-1) >= 0 {
					return nil, plugin.Errorf(plugin.CodeToolUnavailable, "backend restarting")
				}
			}
			return inner.Call(ctx, req)
		})
	}
	return h
}

// TestSuiteCatchesBrokenAdapters proves that the suite asserts real
// behaviour: for each way an adapter can get a fixture wrong, the suite,
// run in a child process over a harness broken that way, fails in the
// subtest that checks it.
func TestSuiteCatchesBrokenAdapters(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite in child processes")
	}
	tests := []struct {
		broken string
		fails  string // the failing subtest
		says   string // a fragment of its message
	}{
		{"echo-mangles-unicode", "Echo/non-ascii", "text ="},
		{"echo-cuts-long-text", "Echo/64KiB", "text ="},
		{"echo-string-schema", "TestBrokenHelper", `registering fixture "echo"`},
		{"structured-wrong-sum", "Structured/2+3", "sum = 6, want 5"},
		{"structured-no-output-schema", "Descriptors/structured/outputSchema", "declares no outputSchema"},
		{"fail-succeeds", "Fail", "got success"},
		{"big-wrong-pattern", "Big/25_bytes", "text ="},
		{"ask-never-asks", "Ask", "returned no question"},
		{"ask-ignores-answer", "Ask/false", `text = "confirmed", want "cancelled"`},
		{"crash-breaks-echo", "Crash", "unexpected error"},
		{"wrong-name", "Descriptors/big", `descriptor name = "large"`},
		{"never-recovers", "Crash", "unexpected error: TOOL_UNAVAILABLE"},
	}
	for _, tc := range tests {
		t.Run(tc.broken, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenHelper$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), "PLUGINTEST_BROKEN="+tc.broken)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("the suite passed a harness with %s (err %v):\n%s", tc.broken, err, out)
			}
			failed := "--- FAIL: TestBrokenHelper/" + tc.fails
			if tc.fails == "TestBrokenHelper" {
				failed = "--- FAIL: TestBrokenHelper "
			}
			if !strings.Contains(string(out), failed) || !strings.Contains(string(out), tc.says) {
				t.Errorf("want %q failing with %q; output:\n%s", failed, tc.says, out)
			}
		})
	}
}

// TestBrokenHelper runs the suite over a broken harness when started by
// TestSuiteCatchesBrokenAdapters.
func TestBrokenHelper(t *testing.T) {
	broken := os.Getenv("PLUGINTEST_BROKEN")
	if broken == "" {
		t.Skip("helper process for TestSuiteCatchesBrokenAdapters")
	}
	plugintest.Run(t, brokenHarness(broken))
}

// brokenHarness is the in-process harness with one fixture broken.
func brokenHarness(broken string) plugintest.Harness {
	var crashed atomic.Bool
	text := func(s string) *plugin.Result { return &plugin.Result{Content: []plugin.Content{plugin.Text(s)}} }
	override := map[string]plugin.Tool{}
	good := func(name string) plugin.Tool {
		tool, _ := plugintest.InProcessFixture(name)
		return tool
	}
	wrap := func(name string, f func(ctx context.Context, req *plugin.Request, inner plugin.Tool) (*plugin.Result, error)) {
		inner := good(name)
		override[name] = plugin.Func(inner.Descriptor(), func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
			return f(ctx, req, inner)
		})
	}
	withDescriptor := func(name string, edit func(*plugin.Descriptor)) {
		inner := good(name)
		d := inner.Descriptor()
		edit(&d)
		override[name] = plugin.Func(d, inner.Call)
	}
	switch broken {
	case "echo-mangles-unicode":
		wrap("echo", func(ctx context.Context, req *plugin.Request, inner plugin.Tool) (*plugin.Result, error) {
			var in struct{ Text string }
			req.DecodeArguments(&in)
			return text(strings.Map(func(r rune) rune {
				if r > 127 {
					return '?'
				}
				return r
			}, in.Text)), nil
		})
	case "echo-cuts-long-text":
		wrap("echo", func(ctx context.Context, req *plugin.Request, inner plugin.Tool) (*plugin.Result, error) {
			var in struct{ Text string }
			req.DecodeArguments(&in)
			return text(in.Text[:min(len(in.Text), 32<<10)]), nil
		})
	case "echo-string-schema":
		withDescriptor("echo", func(d *plugin.Descriptor) { d.InputSchema = json.RawMessage(`{"type":"string"}`) })
	case "structured-wrong-sum":
		wrap("structured", func(ctx context.Context, req *plugin.Request, inner plugin.Tool) (*plugin.Result, error) {
			var in struct{ A, B int64 }
			req.DecodeArguments(&in)
			out, _ := json.Marshal(map[string]int64{"sum": in.A + in.B + 1})
			return &plugin.Result{StructuredContent: out}, nil
		})
	case "structured-no-output-schema":
		withDescriptor("structured", func(d *plugin.Descriptor) { d.OutputSchema = nil })
	case "fail-succeeds":
		wrap("fail", func(context.Context, *plugin.Request, plugin.Tool) (*plugin.Result, error) { return text("boom"), nil })
	case "big-wrong-pattern":
		wrap("big", func(ctx context.Context, req *plugin.Request, inner plugin.Tool) (*plugin.Result, error) {
			var in struct{ Bytes int }
			req.DecodeArguments(&in)
			return text(strings.Repeat("x", in.Bytes)), nil
		})
	case "ask-never-asks":
		wrap("ask", func(context.Context, *plugin.Request, plugin.Tool) (*plugin.Result, error) {
			return text("confirmed"), nil
		})
	case "ask-ignores-answer":
		wrap("ask", func(ctx context.Context, req *plugin.Request, inner plugin.Tool) (*plugin.Result, error) {
			if _, ok := req.Answers["confirm"]; ok {
				return text("confirmed"), nil
			}
			return inner.Call(ctx, req)
		})
	case "crash-breaks-echo":
		wrap("crash", func(ctx context.Context, req *plugin.Request, inner plugin.Tool) (*plugin.Result, error) {
			crashed.Store(true)
			return inner.Call(ctx, req)
		})
		wrap("echo", func(ctx context.Context, req *plugin.Request, inner plugin.Tool) (*plugin.Result, error) {
			if crashed.Load() {
				return nil, plugin.Errorf(plugin.CodeToolUnavailable, "backend is gone")
			}
			return inner.Call(ctx, req)
		})
	case "wrong-name":
		withDescriptor("big", func(d *plugin.Descriptor) { d.Name = "large" })
	case "never-recovers":
		h := restartingHarness(1 << 40)
		h.RecoveryTimeout = 300 * time.Millisecond
		return h
	default:
		panic("unknown breakage " + broken)
	}
	return plugintest.Harness{Load: func(t testing.TB, fixture string) plugin.Tool {
		if tool, ok := override[fixture]; ok {
			return tool
		}
		return good(fixture)
	}}
}
