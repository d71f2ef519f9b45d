package extism

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/internal/testcache"
	"github.com/toolhost/toolhost/plugin"
)

// Guest modules built from source once per test run (TestMain).
var guests = map[string]string{
	"hostile":   "./testdata/guests/hostile",
	"rawguest":  "./testdata/guests/rawguest",
	"fixtures":  "./testdata/guests/fixtures",
	"textstats": "../examples/plugins/textstats",
	"vowels":    "../examples/plugins/vowels",
}

var (
	wasmPath = map[string]string{}
	// shared is one adapter for the package, so each module is compiled once.
	shared   *Adapter
	cacheDir string
)

// buildGuest builds a Go package as a wasip1 reactor module, the way plugin
// authors do.
func buildGuest(pkg, out string) error {
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %v\n%s", pkg, err, b)
	}
	return nil
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "toolhost-extism-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for name, pkg := range guests {
		out := filepath.Join(dir, name+".wasm")
		wasmPath[name] = out
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := buildGuest(pkg, out); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		fmt.Fprintln(os.Stderr, err)
	}
	if len(errs) > 0 {
		return 1
	}
	cacheDir = testcache.Dir(filepath.Join(dir, "cache"))
	shared, err = New(Config{CacheDir: cacheDir, Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: os.Stderr})})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer shared.Close()
	return m.Run()
}

// load loads a tool of a test module through the shared adapter.
func load(t testing.TB, spec plugin.Spec) plugin.Tool {
	t.Helper()
	return loadWith(t, shared, spec)
}

func loadWith(t testing.TB, a *Adapter, spec plugin.Spec) plugin.Tool {
	t.Helper()
	spec.Source.Kind = Kind
	tool, err := a.Load(context.Background(), &spec)
	if err != nil {
		t.Fatalf("Load(%s): %v", spec.Name, err)
	}
	t.Cleanup(func() {
		if c, ok := tool.(plugin.Closer); ok {
			c.Close()
		}
	})
	return tool
}

// guestSpec is a spec for the named tool of a test module.
func guestSpec(module, tool string) plugin.Spec {
	return plugin.Spec{Name: tool, Source: plugin.Source{Kind: Kind, Path: wasmPath[module]}}
}

// call calls a tool directly, with the request the pipeline would build.
func call(t testing.TB, tool plugin.Tool, spec *plugin.Spec, args any, secrets map[string]string) (*plugin.Result, error) {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	req := &plugin.Request{
		ID: "test", Name: spec.Name, Arguments: b, Spec: spec,
		Secrets: plugin.NewSecrets(secrets), Log: hclog.NewNullLogger(),
	}
	return tool.Call(context.Background(), req)
}

// structured decodes a result's structured content.
func structured(t testing.TB, res *plugin.Result) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(res.StructuredContent, &m); err != nil {
		t.Fatalf("structuredContent %q: %v (text %q)", res.StructuredContent, err, res.TextContent())
	}
	return m
}
