package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startEverything starts @modelcontextprotocol/server-everything in
// streamable HTTP mode on a random 127.0.0.1 port and returns its port.
func startEverything(t *testing.T) int {
	t.Helper()
	entry, err := filepath.Abs("../../mcp/testdata/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(entry); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("server-everything is not installed (npm ci --prefix mcp/testdata/npm): %v", err)
		}
		t.Skipf("server-everything is not installed (npm ci --prefix mcp/testdata/npm): %v", err)
	}
	preload, _ := filepath.Abs("../../mcp/testdata/loopback.cjs")
	cmd := exec.Command("node", "--require", preload, entry, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT=0")
	ownGroup(cmd)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		killTree(cmd)
		<-done
	})
	ports := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "TOOLHOST_TEST_LISTENING "); ok {
				n, _ := strconv.Atoi(p)
				ports <- n
			}
		}
	}()
	select {
	case p := <-ports:
		return p
	case <-done:
		t.Fatal("server-everything exited")
	case <-time.After(30 * time.Second):
		t.Fatal("server-everything did not start")
	}
	return 0
}

func bridgeConfig(t *testing.T, port int) string {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`host {
  cache_dir = "./.cache"
  log_level = "warn"
}

mcp_server "everything" {
  url     = "http://127.0.0.1:%d/mcp"
  tools   = ["echo", "get-sum", "get-tiny-image"]
  tier    = "read_only"
  timeout = "20s"
}
`, port)
	p := filepath.Join(dir, "bridge.hcl")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A remote MCP server's tools, re-served by host serve: the Inspector
// talks to the host, the host to server-everything, through the pipeline.
func TestServeBridgesRemoteServer(t *testing.T) {
	bin := inspector(t)
	cfg := bridgeConfig(t, startEverything(t))
	target := []string{hostScript(t, "serve", "--stdio", "--config", cfg)}

	list := runInspector(t, bin, append(target, "--method", "tools/list")...)
	var names []string
	for _, x := range list["tools"].([]any) {
		names = append(names, x.(map[string]any)["name"].(string))
	}
	if strings.Join(names, " ") != "everything__echo everything__get-sum everything__get-tiny-image" {
		t.Fatalf("tools/list = %v", names)
	}
	res := runInspector(t, bin, append(target, "--method", "tools/call", "--tool-name", "everything__echo", "--tool-arg", "message=through two hops")...)
	if res["isError"] == true || !strings.Contains(fmt.Sprint(res["content"]), "Echo: through two hops") {
		t.Errorf("echo through the host = %v", res)
	}
	res = runInspector(t, bin, append(target, "--method", "tools/call", "--tool-name", "everything__get-tiny-image")...)
	if !strings.Contains(fmt.Sprint(res["content"]), "type:image") || !strings.Contains(fmt.Sprint(res["content"]), "mimeType:image/png") {
		t.Errorf("image through the host = %v", res)
	}
	res = runInspector(t, bin, append(target, "--method", "tools/call", "--tool-name", "everything__get-sum", "--tool-arg", "a=x")...)
	if res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), "INVALID_REQUEST") {
		t.Errorf("bad arguments through the host = %v", res)
	}
}

// A remote server that is down does not stop the host: its tools are
// listed as unavailable.
func TestRemoteServerDownAtStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cfg := bridgeConfig(t, port)
	start := time.Now()
	r := runCLI(t, "", "tools", "--config", cfg)
	if r.code != 0 || !strings.Contains(r.stdout, "everything/echo") || !strings.Contains(r.stdout, "(unavailable: MCP server \"everything\" is unreachable") {
		t.Errorf("host tools with the remote server down: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("host start took %s with the remote server down", d)
	}
	r = runCLI(t, "", "call", "--config", cfg, "everything/echo", `{"message":"x"}`)
	if r.code != exitToolError || !strings.Contains(r.stderr, "TOOL_UNAVAILABLE") {
		t.Errorf("call with the remote server down: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// host tools --server shows what a remote server offers; validate reports a
// listed tool the server does not offer at the tools attribute, with a
// suggestion, while the other commands only warn.
func TestRemoteServerTools(t *testing.T) {
	port := startEverything(t)
	cfg := bridgeConfig(t, port)

	r := runCLI(t, "", "tools", "--config", cfg, "--server", "everything")
	if r.code != 0 || !strings.Contains(r.stdout, `MCP server "everything"`) {
		t.Fatalf("tools --server: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"echo  ", "get-sum", "yes", "no", "get-env"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("tools --server lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runCLI(t, "", "tools", "--config", cfg, "--server", "everythin")
	if r.code != exitUsage || !strings.Contains(r.stderr, `no mcp_server "everythin"; did you mean "everything"?`) {
		t.Errorf("tools --server with a typo: exit %d\n%s", r.code, r.stderr)
	}
	if r := runCLI(t, "", "validate", "--config", cfg); r.code != 0 {
		t.Errorf("validate of a matching config: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// A tool the server does not offer.
	src, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(src), `"get-sum"`, `"get-summ"`, 1)
	if err := os.WriteFile(cfg, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, "", "validate", "--config", cfg)
	if r.code != exitUsage || !strings.Contains(r.stderr, "Tool not offered by the server") ||
		!strings.Contains(r.stderr, `does not offer a tool "get-summ". Did you mean "get-sum"?`) ||
		!strings.Contains(r.stderr, `bridge.hcl line 8`) && !strings.Contains(r.stderr, "bridge.hcl:8") {
		t.Errorf("validate of a tool not offered: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, "", "tools", "--config", cfg, "--server", "everything")
	if r.code != 0 || !strings.Contains(r.stdout, `lists them in tools = [...]: "get-summ".`) {
		t.Errorf("tools --server with a tool not offered: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, "", "tools", "--config", cfg, "--server", "everything", "--json")
	var out struct {
		Reachable  bool
		NotOffered []string `json:"not_offered"`
		Tools      []struct {
			Name    string
			Exposed bool
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 0 {
		t.Fatalf("tools --server --json: exit %d, %v\n%s", r.code, err, r.stdout)
	}
	exposed := map[string]bool{}
	for _, tool := range out.Tools {
		exposed[tool.Name] = tool.Exposed
	}
	if !out.Reachable || fmt.Sprint(out.NotOffered) != "[get-summ]" || !exposed["echo"] || exposed["get-sum"] || len(out.Tools) < 5 {
		t.Errorf("tools --server --json = %+v", out)
	}
}
