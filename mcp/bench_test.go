package mcp_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/mcp"
	"github.com/toolhost/toolhost/plugin"
)

// The latency benchmark: `host serve --stdio` (every call in a fresh,
// sandboxed wasm instance) next to the reference filesystem MCP server
// (@modelcontextprotocol/server-filesystem, plain Node.js file access), on
// the same directory, driven over stdio by one Go client (the SDK's). A
// third peer, sdk-floor (testdata/sdkfloor), is the Go SDK's own server
// with plain Go file access: what the transport toolhost is built on costs
// before any sandbox or pipeline. A fourth, jsonrpc-floor
// (testdata/jsonrpcfloor), serves the same tools with no MCP library at
// all: what the client, the pipes and waking the server cost.
// Listing is measured twice: names and types (the reference's
// list_directory, toolhost's filesystem.list), and with sizes (the
// reference's list_directory_with_sizes, filesystem.list with details,
// which adds modification times; the floors offer no such tool).
// The client speaks the same protocol version to every peer,
// benchProtocol, the newest the reference knows: the SDK's client and
// server, left to negotiate, agree on a newer one (2026-07-28), under which
// every request carries the client's identity and capabilities in _meta and
// every result the server's, which both sides encode and decode on each
// call. That cost is measured apart, by a fifth peer, toolhost at the
// version the client picks by itself ("toolhost-negotiated"), and a sixth,
// the Go SDK's own server at that version ("sdk-floor-negotiated").
// Each sub-benchmark reports the median and 99th percentile of tools/call
// round trips, made back to back, and "paced" (25ms apart, as an agent's
// calls are, which lets the wasm tier pre-instantiate the next instance):
//
//	go test ./mcp -run '^$' -bench Filesystem -benchtime 3000x
//
// The host is built from ./cmd/host, or taken from $TOOLHOST_BENCH_HOST
// (and a floor from its testdata, or $TOOLHOST_BENCH_SDKFLOOR,
// $TOOLHOST_BENCH_JSONRPCFLOOR: a wrapper that traces or profiles it), and
// runs the repository's config.hcl with its workspace pointed at a
// temporary directory holding a 4 KiB file and a directory of 20 entries.
// toolhost's side uses whatever config.hcl offers as filesystem.read and
// filesystem.list; without them it is skipped.

var (
	hostBinOnce sync.Once
	hostBin     string
	hostBinErr  error
)

// hostBinary returns a host binary built from this checkout.
func hostBinary(b *testing.B) string {
	b.Helper()
	if p := os.Getenv("TOOLHOST_BENCH_HOST"); p != "" {
		return p
	}
	hostBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "toolhost-bench")
		if err != nil {
			hostBinErr = err
			return
		}
		hostBin = filepath.Join(dir, "host")
		out, err := exec.Command("go", "build", "-o", hostBin, "../cmd/host").CombinedOutput()
		if err != nil {
			hostBinErr = fmt.Errorf("go build ./cmd/host: %v\n%s", err, out)
		}
	})
	if hostBinErr != nil {
		b.Fatal(hostBinErr)
	}
	return hostBin
}

// testdataBinary builds the command ./testdata/name, or returns
// $TOOLHOST_BENCH_NAME (the name in upper case).
func testdataBinary(b *testing.B, name string) string {
	b.Helper()
	if p := os.Getenv("TOOLHOST_BENCH_" + strings.ToUpper(name)); p != "" {
		return p
	}
	bin := filepath.Join(b.TempDir(), name)
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/"+name).CombinedOutput(); err != nil {
		b.Fatalf("go build ./testdata/%s: %v\n%s", name, err, out)
	}
	return bin
}

// benchWorkspace writes the config and the files both servers read.
func benchWorkspace(b *testing.B) (configFile, workspace string) {
	b.Helper()
	dir := b.TempDir()
	cfg, err := os.ReadFile("../config.hcl")
	if err != nil {
		b.Fatal(err)
	}
	configFile = filepath.Join(dir, "config.hcl")
	workspace = filepath.Join(dir, "workspace")
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	must(os.WriteFile(configFile, cfg, 0o600))
	// The configuration may mount directories of the repository's
	// workspace (say workspace/kb): give the copy the same folders.
	filepath.WalkDir("../workspace", func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel("../workspace", p)
		if strings.HasPrefix(rel, ".") && rel != "." {
			return filepath.SkipDir
		}
		return os.MkdirAll(filepath.Join(workspace, rel), 0o755)
	})
	must(os.MkdirAll(filepath.Join(workspace, "dir"), 0o755))
	raw := make([]byte, 3072)
	rand.Read(raw)
	text := []byte(base64.StdEncoding.EncodeToString(raw)) // 4096 bytes
	for i := 76; i < len(text); i += 77 {
		text[i] = '\n'
	}
	must(os.WriteFile(filepath.Join(workspace, "file4k.txt"), text, 0o644))
	for i := range 20 {
		must(os.WriteFile(filepath.Join(workspace, "dir", fmt.Sprintf("entry%02d.txt", i)), []byte("x\n"), 0o644))
	}
	return configFile, workspace
}

// benchProtocol is the protocol version the benchmark's client speaks to
// every peer: the newest that the reference server knows.
const benchProtocol = "2025-11-25"

// benchPeer is one MCP server under measurement.
type benchPeer struct {
	name              string
	cmd               *exec.Cmd
	read, list, sizes *sdk.CallToolParams // sizes: nil where not offered
	// negotiated: the client proposes its own newest protocol version
	// rather than benchProtocol.
	negotiated bool
}

func BenchmarkFilesystem(b *testing.B) {
	fsServer := npmFile(b, "@modelcontextprotocol/server-filesystem/dist/index.js")
	configFile, ws := benchWorkspace(b)
	host := hostBinary(b)

	var hostErr bytes.Buffer
	hostCmd := func() *exec.Cmd {
		cmd := exec.Command(host, "serve", "--stdio", "--config", configFile)
		cmd.Dir = filepath.Dir(configFile)
		cmd.Stderr = &hostErr
		return cmd
	}
	toolhost := benchPeer{name: "toolhost", cmd: hostCmd(),
		read:  &sdk.CallToolParams{Name: "filesystem_read", Arguments: map[string]any{"path": "file4k.txt"}},
		list:  &sdk.CallToolParams{Name: "filesystem_list", Arguments: map[string]any{"path": "dir"}},
		sizes: &sdk.CallToolParams{Name: "filesystem_list", Arguments: map[string]any{"path": "dir", "details": true}}}
	negotiated := toolhost
	sdkFloor := testdataBinary(b, "sdkfloor")
	negotiated.name, negotiated.cmd, negotiated.negotiated = "toolhost-negotiated", hostCmd(), true
	peers := []benchPeer{
		toolhost,
		{name: "reference", cmd: exec.Command("node", fsServer, ws),
			read:  &sdk.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": filepath.Join(ws, "file4k.txt")}},
			list:  &sdk.CallToolParams{Name: "list_directory", Arguments: map[string]any{"path": filepath.Join(ws, "dir")}},
			sizes: &sdk.CallToolParams{Name: "list_directory_with_sizes", Arguments: map[string]any{"path": filepath.Join(ws, "dir")}}},
		{name: "sdk-floor", cmd: exec.Command(sdkFloor, ws),
			read: &sdk.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": "file4k.txt"}},
			list: &sdk.CallToolParams{Name: "list_directory", Arguments: map[string]any{"path": "dir"}}},
		{name: "jsonrpc-floor", cmd: exec.Command(testdataBinary(b, "jsonrpcfloor"), ws),
			read: &sdk.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": "file4k.txt"}},
			list: &sdk.CallToolParams{Name: "list_directory", Arguments: map[string]any{"path": "dir"}}},
		negotiated,
		{name: "sdk-floor-negotiated", cmd: exec.Command(sdkFloor, ws), negotiated: true,
			read: &sdk.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": "file4k.txt"}},
			list: &sdk.CallToolParams{Name: "list_directory", Arguments: map[string]any{"path": "dir"}}},
	}
	ctx := context.Background()
	for _, p := range peers {
		opts := &sdk.ClientSessionOptions{ProtocolVersion: benchProtocol}
		if p.negotiated {
			opts = nil
		}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "0"}, nil).Connect(ctx, &sdk.CommandTransport{Command: p.cmd}, opts)
		if err != nil {
			b.Fatalf("%s: %v\n%s", p.name, err, hostErr.String())
		}
		if v := cs.InitializeResult().ProtocolVersion; !p.negotiated && v != benchProtocol {
			b.Fatalf("%s speaks protocol %s, not %s", p.name, v, benchProtocol)
		} else if p.negotiated {
			b.Logf("%s: protocol %s", p.name, v)
		}
		names := map[string]bool{}
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				b.Fatal(err)
			}
			names[t.Name] = true
		}
		for _, op := range []struct {
			name   string
			params *sdk.CallToolParams
		}{{"read4KiB", p.read}, {"listDir", p.list}, {"listDirSizes", p.sizes}} {
			if op.params == nil {
				continue
			}
			for _, gap := range []time.Duration{0, 25 * time.Millisecond} {
				name := p.name + "/" + op.name
				if gap > 0 {
					name += "/paced"
				}
				b.Run(name, func(b *testing.B) {
					if !names[op.params.Name] {
						b.Skipf("%s offers no %s (config.hcl lacks it)", p.name, op.params.Name)
					}
					benchCallsPaced(b, cs, op.params, gap)
				})
			}
		}
		cs.Close()
	}
}

// benchCalls makes b.N calls back to back and reports their latency
// percentiles.
func benchCalls(b *testing.B, cs *sdk.ClientSession, params *sdk.CallToolParams) {
	benchCallsPaced(b, cs, params, 0)
}

// benchCallsPaced makes b.N calls, pausing gap between them (an agent's
// calls come seconds apart, which lets a server prepare the next one: the
// wasm tier pre-instantiates), and reports the latency percentiles of the
// calls alone.
func benchCallsPaced(b *testing.B, cs *sdk.ClientSession, params *sdk.CallToolParams, gap time.Duration) {
	ctx := context.Background()
	for range 20 { // warm up: compile caches, JIT, file cache
		if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
			b.Fatalf("%s: %v %+v", params.Name, err, res)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if gap > 0 {
			b.StopTimer()
			time.Sleep(gap)
			b.StartTimer()
		}
		t0 := time.Now()
		res, err := cs.CallTool(ctx, params)
		lat = append(lat, time.Since(t0))
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %+v", params.Name, err, res)
		}
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

// reportPercentiles reports the median and 99th percentile of lat.
func reportPercentiles(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds())
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}

// BenchmarkServerOverhead measures what the MCP front-end adds to a call:
// the same in-process echo tool called with Host.Invoke directly, through
// mcp.Server over stdio pipes, and over streamable HTTP on 127.0.0.1.
func BenchmarkServerOverhead(b *testing.B) {
	th := newTestHost(b)
	args := map[string]any{"text": "hello"}
	b.Run("invoke", func(b *testing.B) {
		raw := []byte(`{"text":"hello"}`)
		lat := make([]time.Duration, 0, b.N)
		b.ReportAllocs()
		for range b.N {
			t0 := time.Now()
			if _, err := th.Invoke(context.Background(), plugin.Call{Name: "fx.echo", Arguments: raw}); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		reportPercentiles(b, lat)
	})
	b.Run("stdio", func(b *testing.B) {
		cs := stdioSession(b, newServer(b, th.Host), clientOptions{})
		benchCalls(b, cs, &sdk.CallToolParams{Name: "fx_echo", Arguments: args})
	})
	b.Run("http", func(b *testing.B) {
		url, _ := httpServer(b, newServer(b, th.Host), mcp.HTTPOptions{})
		cs := httpSession(b, url, clientOptions{}, "")
		benchCalls(b, cs, &sdk.CallToolParams{Name: "fx_echo", Arguments: args})
	})
}
