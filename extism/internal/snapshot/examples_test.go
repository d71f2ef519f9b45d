package snapshot

import (
	"context"
	"crypto/rand"
	"os"
	"testing"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/toolhost/toolhost/extism/internal/fuel"
	"github.com/toolhost/toolhost/internal/testcache"
)

// compileCache keeps compiled code across the test's many plugins.
var compileCache = testCache

// extismPlugin is a module compiled with go-sdk once, the way the extism
// adapter compiles a tool's; each call runs in a fresh instance of it, as
// each of the adapter's calls does.
type extismPlugin struct {
	cp      *extism.CompiledPlugin
	metered bool
}

// compileExtism compiles wasm for extismPlugin.call; metered says that it
// was instrumented with fuel, and needs the meter's host functions.
func compileExtism(t *testing.T, wasm []byte, metered bool) *extismPlugin {
	t.Helper()
	ctx := context.Background()
	funcs := noToolhostFuncs()
	if metered {
		funcs = append(funcs, fuel.HostFunctions()...)
	}
	testcache.Precompile(wasm)
	cp, err := extism.NewCompiledPlugin(ctx, extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: wasm}}},
		extism.PluginConfig{EnableWasi: true, RuntimeConfig: wazero.NewRuntimeConfig().WithCompilationCache(compileCache)}, funcs)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	t.Cleanup(func() { cp.Close(ctx) })
	return &extismPlugin{cp: cp, metered: metered}
}

// call runs export in a fresh go-sdk instance and returns what go-sdk
// returns.
func (p *extismPlugin) call(t *testing.T, export string, input []byte) (uint32, string, error) {
	t.Helper()
	ctx := context.Background()
	inst, err := p.cp.Instance(ctx, extism.PluginInstanceConfig{ModuleConfig: wazero.NewModuleConfig().WithRandSource(rand.Reader)})
	if err != nil {
		t.Fatalf("instance: %v", err)
	}
	defer inst.Close(ctx)
	m := fuel.NewMeter(0)
	rc, out, err := inst.CallWithContext(fuel.WithMeter(ctx, m), export, input)
	if p.metered && m.Used() == 0 {
		t.Fatalf("%s: no fuel used", export)
	}
	return rc, string(out), err
}

// noToolhostFuncs are the toolhost host functions the built-in guests
// import (extism/fsbatch.go, extism/hostconfig.go), answering as a host
// without them does: ENOSYS. The guests then read through WASI, and their
// config through Extism's config_get.
func noToolhostFuncs() []extism.HostFunction {
	enosys := int32(52)
	i32 := extism.ValueTypeI32
	answer := func(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
		stack[0] = uint64(uint32(-enosys))
	}
	return []extism.HostFunction{
		extism.NewHostFunctionWithStack("toolhost_fs_submit", answer, []extism.ValueType{i32, i32, i32, i32, extism.ValueTypeI64, i32, i32, i32}, []extism.ValueType{i32}),
		extism.NewHostFunctionWithStack("toolhost_fs_take", answer, []extism.ValueType{i32, i32, i32}, []extism.ValueType{i32}),
		extism.NewHostFunctionWithStack("toolhost_config_get", answer, []extism.ValueType{i32, i32, i32, i32}, []extism.ValueType{i32}),
	}
}

type exampleCall struct {
	export string
	input  string
}

// TestExamplesFromSnapshotAndWithFuel runs the example plugins and the
// built-in tools through go-sdk as they are, with fuel, from a snapshot and
// from a snapshot with fuel, and requires the same answers.
func TestExamplesFromSnapshotAndWithFuel(t *testing.T) {
	builtin, err := os.ReadFile("../../builtin/wasm/filesystem.wasm")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		wasm  func(t *testing.T) []byte
		calls []exampleCall
	}{
		{
			name: "vowels",
			wasm: func(t *testing.T) []byte { return goWasm(t, "../../../examples/plugins/vowels") },
			calls: []exampleCall{
				{"count_vowels", `{"text":"Snapshots and fuel, identically"}`},
				{"count_vowels", `{"text":""}`},
				{"count_vowels", `not json`},
			},
		},
		{
			name: "textstats",
			wasm: func(t *testing.T) []byte { return goWasm(t, "../../../examples/plugins/textstats") },
			calls: []exampleCall{
				{"list_tools", ``},
				{"call_tool", `{"name":"text_stats","arguments":{"text":"one two\nthree"}}`},
				{"call_tool", `{"name":"grep_file","arguments":{"path":"x.txt","pattern":"a"}}`},
				{"call_tool", `{"name":"nope","arguments":{}}`},
			},
		},
		{
			name: "builtin filesystem",
			wasm: func(*testing.T) []byte { return builtin },
			calls: []exampleCall{
				{"list_tools", ``},
				{"call_tool", `{"name":"fs.read","arguments":{"path":"/nothing/here"}}`},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // CPU-bound, apart from the helper's compiles
			orig := tc.wasm(t)
			metered, err := fuel.Instrument(orig)
			if err != nil {
				t.Fatal(err)
			}
			variants := map[string]struct {
				wasm    []byte
				metered bool
			}{"fuel": {metered, true}}
			snap, _, err := Snapshot(context.Background(), orig, Options{})
			switch {
			case err != nil:
				t.Fatal(err)
			default:
				snapFuel, err := fuel.Instrument(snap)
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := Describe(snapFuel); !ok {
					t.Fatal("the snapshot's record did not survive fuel instrumentation")
				}
				variants["snapshot"] = struct {
					wasm    []byte
					metered bool
				}{snap, false}
				variants["snapshot+fuel"] = struct {
					wasm    []byte
					metered bool
				}{snapFuel, true}
			}
			plain := compileExtism(t, orig, false)
			compiled := map[string]*extismPlugin{}
			for name, v := range variants {
				compiled[name] = compileExtism(t, v.wasm, v.metered)
			}
			for _, c := range tc.calls {
				wantRC, wantOut, wantErr := plain.call(t, c.export, []byte(c.input))
				for name, p := range compiled {
					rc, out, err := p.call(t, c.export, []byte(c.input))
					if rc != wantRC || out != wantOut || errString(err) != errString(wantErr) {
						t.Errorf("%s %s(%s): rc %d out %q err %v; original rc %d out %q err %v",
							name, c.export, c.input, rc, out, err, wantRC, wantOut, wantErr)
					}
				}
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
