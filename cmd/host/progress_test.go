package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/toolhost/toolhost/extism"
)

// syncBuffer is a bytes.Buffer safe for the redraw goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestCompileProgressTerminal: on a terminal, a status line is redrawn while
// modules compile and a summary line stays; cached compilations say nothing.
func TestCompileProgressTerminal(t *testing.T) {
	var out syncBuffer
	p := newCompileProgress(&out, hclog.NewNullLogger())
	p.every = 5 * time.Millisecond
	p.event(extism.CompileEvent{Tool: "filesystem.read"})
	p.event(extism.CompileEvent{Tool: "filesystem.list"})
	time.Sleep(30 * time.Millisecond)
	p.event(extism.CompileEvent{Tool: "filesystem.read", Done: true})
	time.Sleep(30 * time.Millisecond)
	p.event(extism.CompileEvent{Tool: "filesystem.list", Done: true, Err: errors.New("boom")})
	got := out.String()
	for _, want := range []string{
		"Compiling wasm modules (first run only): filesystem.list, 0 done",
		"Compiling wasm modules (first run only): filesystem.list, 1 done",
		"Compiled the wasm modules of 2 tools in ",
		", 1 failed (first run only: later runs read them from cache_dir)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, got)
		}
	}
	time.Sleep(20 * time.Millisecond)
	if after := out.String(); after != got {
		t.Errorf("the status line was redrawn after the summary: %q", after[len(got):])
	}

	// A second run reads every module from the cache: not a word.
	out.b.Reset()
	p.event(extism.CompileEvent{Tool: "filesystem.read", Cached: true})
	p.event(extism.CompileEvent{Tool: "filesystem.read", Cached: true, Done: true})
	time.Sleep(20 * time.Millisecond)
	if s := out.String(); s != "" {
		t.Errorf("cached compilation printed %q", s)
	}
}

// TestCompileProgressLog: without a terminal, one info line for the modules
// compiled one after another while the host loads.
func TestCompileProgressLog(t *testing.T) {
	var logs syncBuffer
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: &logs})
	p := newCompileProgress(nil, log)
	p.hold()
	for _, tool := range []string{"a", "b", "c"} {
		p.event(extism.CompileEvent{Tool: tool})
		p.event(extism.CompileEvent{Tool: tool, Done: true, Duration: time.Second})
	}
	if got := logs.String(); got != "" {
		t.Errorf("logged before the load ended: %s", got)
	}
	p.release()
	got := logs.String()
	if n := strings.Count(got, "\n"); n != 1 || !strings.Contains(got, "[INFO]  compiled wasm modules") || !strings.Contains(got, "tools=3 failed=0") {
		t.Errorf("want one info line for three compilations, got:\n%s", got)
	}
}

// TestFirstRunSaysItCompiles: a host loading a wasm tool it has not
// compiled before says so at info (stderr is not a terminal here); the next
// run reads the module from cache_dir and says nothing of it.
func TestFirstRunSaysItCompiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.hcl")
	src := `host {
  cache_dir = "./cache"
  log_level = "info"
}

grants {
  mount {
    path = "./ws"
  }
}

tool "filesystem.read" {
  tier = "read_only"
  wasm {
    builtin = "filesystem"
    tool    = "filesystem.read"
  }
  mount {
    host_path  = "./ws"
    guest_path = "/workspace"
    read_only  = true
  }
}
`
	if err := os.WriteFile(cfg, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	first := runCLI(t, "", "tools", "--config", cfg)
	if first.code != 0 || strings.Count(first.stderr, "compiled wasm modules") != 1 || !strings.Contains(first.stderr, "tools=1 failed=0") {
		t.Fatalf("first run: exit %d, want one info line about compiling\n%s", first.code, first.stderr)
	}
	again := runCLI(t, "", "tools", "--config", cfg)
	if again.code != 0 || strings.Contains(again.stderr, "compiled wasm modules") {
		t.Errorf("second run: exit %d, want no word about compiling\n%s", again.code, again.stderr)
	}
}
