package mcp_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// npmBin returns the path of a file installed by
// npm ci --prefix mcp/testdata/npm, skipping the test when the peers are
// not installed (and failing it under CI=true, where they must be).
func npmFile(t testing.TB, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "npm", "node_modules", rel))
	if err != nil {
		t.Fatal(err)
	}
	_, err = os.Stat(p)
	if err == nil {
		_, err = exec.LookPath("node")
	}
	if err != nil {
		msg := fmt.Sprintf("MCP peers not installed (run: npm ci --prefix mcp/testdata/npm): %v", err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// nodeServer is an npm MCP server process listening on 127.0.0.1.
type nodeServer struct {
	cmd  *exec.Cmd
	Port int
	done chan struct{}
}

// URL is the server's streamable HTTP endpoint.
func (s *nodeServer) URL() string { return fmt.Sprintf("http://127.0.0.1:%d/mcp", s.Port) }

// Kill kills the server at once (SIGKILL) and waits for it.
func (s *nodeServer) Kill() {
	s.cmd.Process.Kill()
	<-s.done
}

// startEverything starts @modelcontextprotocol/server-everything in
// streamable HTTP mode on port (0: any free port), bound to 127.0.0.1 by
// testdata/loopback.cjs. It is killed when the test ends.
func startEverything(t testing.TB, port int) *nodeServer {
	t.Helper()
	entry := npmFile(t, "@modelcontextprotocol/server-everything/dist/index.js")
	preload, _ := filepath.Abs("testdata/loopback.cjs")
	cmd := exec.Command("node", "--require", preload, entry, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	ownGroup(cmd)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &nodeServer{cmd: cmd, done: make(chan struct{})}
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
	go func() { cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		killTree(cmd)
		<-s.done
	})
	select {
	case s.Port = <-ports:
	case <-s.done:
		t.Fatal("server-everything exited before listening")
	case <-time.After(30 * time.Second):
		t.Fatal("server-everything did not start listening within 30s")
	}
	return s
}
