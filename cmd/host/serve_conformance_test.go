package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"
)

// conformanceBin returns the official MCP conformance suite's CLI,
// installed by npm ci --prefix mcp/testdata/npm/conformance, or skips the
// test when node or the package is missing (fails under CI=true, where
// .ci/run installs them).
func conformanceBin(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../../mcp/testdata/npm/conformance/node_modules/.bin/conformance")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node is not installed: the MCP conformance suite needs it: %v", err)
		}
		t.Skipf("node is not installed: the MCP conformance suite needs it: %v", err)
	}
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the MCP conformance suite is not installed (npm ci --prefix mcp/testdata/npm/conformance): %v", err)
		}
		t.Skipf("the MCP conformance suite is not installed (npm ci --prefix mcp/testdata/npm/conformance): %v", err)
	}
	return p
}

// startHost runs `host serve --http` on a free port with the given
// configuration and returns its MCP endpoint.
func startHost(t *testing.T, cfg string) string {
	t.Helper()
	args := hostCommand(t, "serve", "--http", "127.0.0.1:0", "--config", cfg)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := servingAt.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case url := <-found:
		return url
	case <-time.After(60 * time.Second):
		t.Fatal("host serve --http did not start")
		return ""
	}
}

var (
	conformanceTotal  = regexp.MustCompile(`Total: (\d+) passed, (\d+) failed`)
	conformancePassed = regexp.MustCompile(`(?m)^✓ \S+: `)
	conformanceFailed = regexp.MustCompile(`(?m)^✗ \S+: `)
)

// TestOfficialConformance runs every server scenario of the official MCP
// conformance suite (@modelcontextprotocol/conformance, pinned in
// mcp/testdata/npm/conformance) against `host serve --http` with
// testdata/conformance.hcl. The scenarios toolhost fails on purpose are
// listed, each with its reason, in testdata/conformance-expected-failures.yml
// (see docs/mcp.md): the suite fails the test on any other failure, and on
// a listed scenario that passes (a stale list).
func TestOfficialConformance(t *testing.T) {
	bin := conformanceBin(t)
	cfg, err := filepath.Abs("testdata/conformance.hcl")
	if err != nil {
		t.Fatal(err)
	}
	baseline, err := filepath.Abs("testdata/conformance-expected-failures.yml")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll("testdata/.cache") })
	// The fixture tools' plugin, where the configuration expects it.
	build := exec.Command("go", "build", "-buildmode=c-shared", "-o", ".cache/conformance-fixtures.wasm", "./conformance")
	build.Dir = "testdata"
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the fixture plugin: %v\n%s", err, out)
	}
	url := startHost(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "server", "--url", url, "--expected-failures", baseline, "-o", t.TempDir())
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+cmd.Dir, "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	m := conformanceTotal.FindSubmatch(out)
	if m == nil {
		t.Fatalf("conformance server: %v; no summary in its output:\n%s", err, out)
	}
	t.Logf("official MCP conformance suite: %d server scenarios passed, %d failed (%s checks passed, %s failed)",
		len(conformancePassed.FindAll(out, -1)), len(conformanceFailed.FindAll(out, -1)), m[1], m[2])
	if err != nil {
		t.Fatalf("conformance server: %v (a failure not in %s, or a listed one that passes):\n%s", err, baseline, out)
	}
}
