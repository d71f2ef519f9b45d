package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary run `host serve` (TestHelperHostServe)
// with the in-process test tools, so that real MCP clients can start it
// the way a desktop client starts `host serve --stdio`.
const helperEnv = "TOOLHOST_TEST_HELPER_SERVE"

// TestHelperHostServe is not a test: it is the host process the serve
// tests start, in the manner of go-plugin's TestHelperProcess.
func TestHelperHostServe(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("helper process for the serve tests")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a := &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, goTools: testTools(t)}
	os.Exit(a.run(ctx, args))
}

// hostCommand returns the command line that runs `host ARGS...` as the
// helper process.
func hostCommand(t *testing.T, args ...string) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{exe, "-test.run=^TestHelperHostServe$", "--"}, args...)
}

// hostScript writes an executable script that runs `host ARGS...`, for
// clients that start servers with a clean environment.
func hostScript(t *testing.T, args ...string) string {
	t.Helper()
	cmd := hostCommand(t, args...)
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/sh\n%s=1 exec", helperEnv)
	for _, a := range cmd {
		b.WriteString(" '" + strings.ReplaceAll(a, "'", `'\''`) + "'")
	}
	b.WriteString("\n")
	p := filepath.Join(t.TempDir(), "host.sh")
	if err := os.WriteFile(p, []byte(b.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// inspector returns the MCP Inspector CLI installed by
// npm ci --prefix mcp/testdata/npm, or skips the test when it is missing
// (fails under CI=true).
func inspector(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../../mcp/testdata/npm/node_modules/.bin/mcp-inspector")
	if err != nil {
		t.Fatal(err)
	}
	_, err = os.Stat(p)
	if err == nil {
		_, err = exec.LookPath("node")
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the MCP Inspector is not installed (npm ci --prefix mcp/testdata/npm): %v", err)
		}
		t.Skipf("the MCP Inspector is not installed (npm ci --prefix mcp/testdata/npm): %v", err)
	}
	return p
}

// runInspector runs the Inspector CLI and decodes its JSON output.
func runInspector(t *testing.T, bin string, args ...string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--cli"}, args...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+cmd.Dir, "MCP_CATALOG_PATH="+filepath.Join(cmd.Dir, "mcp.json"))
	out, err := cmd.Output()
	// Exit status 5 is the Inspector's "the tool returned isError"; the
	// result is on stdout and the caller checks it.
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 5 {
		err = nil
	}
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("inspector %v: %v\nstdout: %s\nstderr: %s", args, err, out, stderr)
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("inspector output is not JSON: %v\n%s", err, out)
	}
	return v
}

// checkInspectorSession lists and calls tools through the Inspector and
// checks them against testdata/cli.hcl and the test tools.
func checkInspectorSession(t *testing.T, bin string, target []string) {
	t.Helper()
	list := runInspector(t, bin, append(slices.Clone(target), "--method", "tools/list")...)
	tools, _ := list["tools"].([]any)
	byName := map[string]map[string]any{}
	for _, x := range tools {
		m, _ := x.(map[string]any)
		name, _ := m["name"].(string)
		byName[name] = m
	}
	var names []string
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	if want := []string{"ask", "big", "danger_zone", "echo"}; !slices.Equal(names, want) {
		t.Fatalf("tools/list names = %v, want %v (cli.hcl, with danger.zone as danger_zone)", names, want)
	}
	if d := byName["echo"]["description"]; d != "Echoes its text." {
		t.Errorf("echo description = %v", d)
	}
	schema, _ := json.Marshal(byName["echo"]["inputSchema"])
	if !strings.Contains(string(schema), `"required":["text"]`) {
		t.Errorf("echo inputSchema = %s", schema)
	}
	ann, _ := byName["echo"]["annotations"].(map[string]any)
	if ann["readOnlyHint"] != true {
		t.Errorf("echo annotations = %v, want readOnlyHint", ann)
	}
	ann, _ = byName["danger_zone"]["annotations"].(map[string]any)
	if ann["destructiveHint"] != true || ann["readOnlyHint"] == true {
		t.Errorf("danger_zone annotations = %v, want destructiveHint", ann)
	}

	res := runInspector(t, bin, append(slices.Clone(target), "--method", "tools/call", "--tool-name", "echo", "--tool-arg", "text=hello inspector")...)
	if res["isError"] == true || !strings.Contains(fmt.Sprint(res["content"]), "hello inspector") {
		t.Errorf("tools/call echo = %v", res)
	}
	res = runInspector(t, bin, append(slices.Clone(target), "--method", "tools/call", "--tool-name", "danger_zone")...)
	if res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), "APPROVAL_REQUIRED") {
		t.Errorf("tools/call danger_zone without elicitation = %v, want APPROVAL_REQUIRED", res)
	}
	res = runInspector(t, bin, append(slices.Clone(target), "--method", "tools/call", "--tool-name", "big")...)
	if !strings.Contains(fmt.Sprint(res["content"]), "[... truncated") || !strings.Contains(fmt.Sprint(res["content"]), "toolhost://artifacts/art_") {
		t.Errorf("tools/call big = %v, want truncated text and a resource link", res)
	}
}

// The MCP Inspector (a real client nobody here wrote) drives host serve
// --stdio: it starts the host as a subprocess, lists and calls tools.
func TestServeStdioWithInspector(t *testing.T) {
	bin := inspector(t)
	cfg, _ := filepath.Abs("testdata/cli.hcl")
	t.Cleanup(func() { os.RemoveAll("testdata/.cache") })
	checkInspectorSession(t, bin, []string{hostScript(t, "serve", "--stdio", "--config", cfg)})
}

var servingAt = regexp.MustCompile(`serving MCP at (http://\S+/mcp)`)

// startHTTPHost starts host serve --http on a random loopback port and
// returns its URL; the process is stopped with SIGTERM at cleanup.
func startHTTPHost(t *testing.T, extra ...string) (url string, cmd *exec.Cmd) {
	t.Helper()
	cfg, _ := filepath.Abs("testdata/cli.hcl")
	args := hostCommand(t, append([]string{"serve", "--http", "127.0.0.1:0", "--config", cfg}, extra...)...)
	cmd = exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState != nil {
			return // the test waited for it
		}
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		os.RemoveAll("testdata/.cache")
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
	case url = <-found:
	case <-time.After(30 * time.Second):
		t.Fatal("host serve --http did not start")
	}
	return url, cmd
}

// The MCP Inspector drives host serve --http over streamable HTTP.
func TestServeHTTPWithInspector(t *testing.T) {
	bin := inspector(t)
	url, _ := startHTTPHost(t)
	checkInspectorSession(t, bin, []string{url})
}

// With --token-env, the Inspector gets in only with the token.
func TestServeHTTPTokenWithInspector(t *testing.T) {
	bin := inspector(t)
	t.Setenv("TOOLHOST_TEST_TOKEN", "tok-123")
	url, _ := startHTTPHost(t, "--token-env", "TOOLHOST_TEST_TOKEN")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--cli", url, "--method", "tools/list")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+cmd.Dir)
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("the Inspector listed tools without the token: %s", out)
	}
	list := runInspector(t, bin, url, "--header", "Authorization: Bearer tok-123", "--method", "tools/list")
	if tools, _ := list["tools"].([]any); len(tools) != 4 {
		t.Errorf("with the token: %v", list)
	}
}

func TestServeFlags(t *testing.T) {
	for _, args := range [][]string{
		{"serve"},
		{"serve", "--stdio", "--http", ":0"},
		{"serve", "--http", ":0", "--token-env", "TOOLHOST_NO_SUCH_VAR"},
		{"serve", "--http", ":0", "--max-body", "lots"},
		{"serve", "--http", ":0", "--max-sessions", "0"},
		{"serve", "--http", ":0", "--session-idle", "0s"},
	} {
		r := runCLI(t, "", append(args, "--config=testdata/cli.hcl")...)
		if r.code != exitUsage || r.stderr == "" || (len(args) == 5 && !strings.Contains(r.stderr, args[3])) {
			t.Errorf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
}

// SIGTERM stops host serve --http cleanly (exit 0) and promptly.
func TestServeStopsOnSignal(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on windows")
	}
	url, cmd := startHTTPHost(t)
	resp, err := http.Post(url, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatalf("host serve --http not answering: %v", err)
	}
	resp.Body.Close()
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("host serve exited with %v after SIGTERM", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("host serve did not stop within 15s of SIGTERM")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stopping an idle server took %s", d)
	}
}

// The session flags reach the HTTP options.
func TestServeSessionFlags(t *testing.T) {
	f := serveFlags{maxBody: "1MiB", maxConcurrent: 3, maxTotal: 9, maxSessions: 7, sessionIdle: 90 * time.Second}
	o, err := f.httpOptions()
	if err != nil {
		t.Fatal(err)
	}
	if o.MaxSessions != 7 || o.SessionTimeout != 90*time.Second || o.MaxConcurrent != 3 || o.MaxConcurrentTotal != 9 || o.MaxBodyBytes != 1<<20 {
		t.Errorf("options: %+v", o)
	}
}
