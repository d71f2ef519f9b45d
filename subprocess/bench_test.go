package subprocess

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/shared"
)

// Benchmarks measure the subprocess tier against raw go-plugin in the same
// run, with the same plugin binary (the test binary serving testTools):
//
//	go test ./subprocess -run '^$' -bench . -benchtime 2s -count 5
//
// Compare BenchmarkWarmCall/raw with /toolhost and BenchmarkColdStart/raw
// with /toolhost.

// rawClient starts the test plugin with plain go-plugin: no shim, no limits.
func rawClient(b *testing.B, mark string) (*goplugin.Client, *shared.Client) {
	exe, _ := os.Executable()
	c := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  shared.Handshake,
		Plugins:          shared.PluginSet(),
		Cmd:              exec.Command(exe, testPluginArg, "serve", mark),
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		AutoMTLS:         true,
		Logger:           hclog.NewNullLogger(),
	})
	rpc, err := c.Client()
	if err != nil {
		b.Fatal(err)
	}
	raw, err := rpc.Dispense(shared.PluginName)
	if err != nil {
		b.Fatal(err)
	}
	return c, raw.(*shared.Client)
}

func benchAdapter(b *testing.B) *Adapter {
	a, err := New(Config{Logger: hclog.NewNullLogger(), ScratchDir: searchableTempDir(b), KillGrace: 100 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Close() })
	return a
}

func BenchmarkWarmCall(b *testing.B) {
	args := json.RawMessage(`{"text":"hello"}`)
	b.Run("raw", func(b *testing.B) {
		c, rpc := rawClient(b, newMark(b))
		defer c.Kill()
		req, _ := json.Marshal(shared.CallToolRequest{Params: shared.CallToolParams{Name: "echo", Arguments: args}})
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			out, err := rpc.CallTool(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			var r shared.CallToolResult
			if err := json.Unmarshal(out, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("toolhost", func(b *testing.B) {
		a := benchAdapter(b)
		tool, err := a.Load(context.Background(), testSpec(testPluginSum(), "echo", "serve", newMark(b)))
		if err != nil {
			b.Fatal(err)
		}
		req := &plugin.Request{ID: "b", Name: "echo", Arguments: args}
		benchToolCalls(b, tool, req)
	})
	// A call with a listener (every call over MCP has one) runs over the
	// CallToolSession stream, so that the plugin can report and ask.
	b.Run("toolhost-session", func(b *testing.B) {
		a := benchAdapter(b)
		tool, err := a.Load(context.Background(), testSpec(testPluginSum(), "echo", "serve", newMark(b)))
		if err != nil {
			b.Fatal(err)
		}
		req := &plugin.Request{ID: "b", Name: "echo", Arguments: args, Notify: &asker{}}
		benchToolCalls(b, tool, req)
	})
}

func benchToolCalls(b *testing.B, tool plugin.Tool, req *plugin.Request) {
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := tool.Call(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Content) != 1 {
			b.Fatal(res)
		}
	}
}

// BenchmarkColdStart starts the example git plugin (a small plugin binary)
// raw and through the shim; the shim is the test binary, as the host binary
// is in production.
func BenchmarkColdStart(b *testing.B) {
	bin := buildGitPlugin(b)
	b.Run("raw", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			c := goplugin.NewClient(&goplugin.ClientConfig{
				HandshakeConfig:  shared.Handshake,
				Plugins:          shared.PluginSet(),
				Cmd:              exec.Command(bin),
				AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
				AutoMTLS:         true,
				Logger:           hclog.NewNullLogger(),
			})
			rpc, err := c.Client()
			if err != nil {
				b.Fatal(err)
			}
			if _, err := rpc.Dispense(shared.PluginName); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			c.Kill()
			b.StartTimer()
		}
	})
	b.Run("toolhost", func(b *testing.B) {
		a := benchAdapter(b)
		sum, err := FileSHA256(bin)
		if err != nil {
			b.Fatal(err)
		}
		// Every tool gets a network namespace of its own; one granted a
		// host also gets the proxy (its start cost is the difference
		// between the two).
		for _, offline := range []bool{true, false} {
			spec := &plugin.Spec{Name: "git_log", Source: plugin.Source{Kind: Kind, Path: bin, SHA256: sum, Tool: "git_log"},
				Capabilities: plugin.Capabilities{Subprocess: true}, InputSchema: json.RawMessage(`{"type":"object"}`)}
			net := "netns"
			if !offline {
				spec.Capabilities.Hosts = []plugin.HostRule{{Host: "example.com", Port: 443}}
				net = "proxy"
			}
			tool, err := a.Load(context.Background(), spec) // starts nothing: the spec has the schema
			if err != nil {
				b.Fatal(err)
			}
			pt := tool.(*pluginTool)
			for _, warm := range []bool{true, false} {
				name := net + "/warm-shim"
				if !warm {
					name = net + "/cold-shim"
				}
				b.Run(name, func(b *testing.B) {
					ctx := context.Background()
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						b.StopTimer()
						pt.mu.Lock()
						if warm {
							waitSpare(b, pt)
						} else {
							pt.dropSpare()
						}
						b.StartTimer()
						// pin check, cgroup, shim, rlimits, Landlock, seccomp, exec, handshake
						p, err := pt.start(ctx)
						if !warm {
							pt.dropSpare() // start warmed one: not for this run
						}
						pt.mu.Unlock()
						if err != nil {
							b.Fatal(err)
						}
						b.StopTimer()
						p.stop(0)
						b.StartTimer()
					}
				})
			}
		}
	})
}

// waitSpare waits (t.mu held) until the tool has a warm shim.
func waitSpare(b *testing.B, t *pluginTool) {
	if t.spare == nil && !t.warming {
		t.warmSpare()
	}
	for t.spare == nil {
		t.mu.Unlock()
		time.Sleep(time.Millisecond)
		t.mu.Lock()
	}
}

// BenchmarkKillTree50 measures how long it takes, once the grace period is
// over (grace 0: straight to SIGKILL), until a plugin, its shim and its 50
// descendants (which ignore SIGTERM) are all gone.
func BenchmarkKillTree50(b *testing.B) {
	for _, v := range []struct {
		name      string
		ns, cgrup bool
	}{{"pidns+cgroup", true, true}, {"pidns", true, false}, {"pgroup+subreaper", false, false}} {
		b.Run(v.name, func(b *testing.B) {
			a, err := New(Config{Logger: hclog.NewNullLogger(), ScratchDir: b.TempDir(), NoPIDNamespace: !v.ns,
				NoPIDsCgroup: !v.cgrup, MaxProcesses: 100, MaxThreads: 4096})
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			spec := testSpec(testPluginSum(), "spawn", "serve", "bench-kill")
			spec.Limits.FileDescriptors = 256 // the plugin holds a pidfd per child
			spec.Limits.Memory = 1 << 30      // 51 Go processes
			spec.InputSchema = json.RawMessage(`{"type":"object"}`)
			tool, _ := a.Load(context.Background(), spec)
			pt := tool.(*pluginTool)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				p, err := pt.acquire(ctx)
				if err != nil {
					b.Fatal(err)
				}
				out, err := p.rpc.CallTool(ctx, []byte(`{"params":{"name":"spawn","arguments":{"n":50}}}`))
				if err != nil || strings.Count(string(out), " ") < 49 {
					b.Fatal(string(out), err)
				}
				pt.release(p)
				if n := len(tree(ctx, p.runner.g, true, 0)); n != 52 { // shim, plugin, 50 children
					b.Fatalf("%d processes before the kill", n)
				}
				b.StartTimer()
				if err := killTree(ctx, p.runner.g, 0); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				pt.retire(p, nil, false)
				// The watchdog may have seen the exit first and counted
				// it as a crash: the next start is not to wait a backoff.
				pt.mu.Lock()
				pt.failures, pt.retryAt = 0, time.Time{}
				pt.mu.Unlock()
				b.StartTimer()
			}
		})
	}
}
