package subprocess

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// TestLeftoverScan checks the check that the hostile tests rely on: the
// scan sees a tool's shims (its plugin's supervisor and its spare) as
// owned, sees a shim that no tool owns as stray, and sees none after Close.
func TestLeftoverScan(t *testing.T) {
	a := newTestAdapter(t, nil)
	mark := newMark(t)
	tool := load(t, a, testSpec(testPluginSum(), "echo", "serve", mark))
	mustServe(t, tool)
	plugins := marked(mark)
	if len(plugins) != 1 {
		t.Fatalf("plugin processes %v", plugins)
	}
	supervisor, _ := statFields(plugins[0])
	// The supervisor and, once warmed, the spare: two shims, both owned.
	var own []shimProc
	deadline := time.Now().Add(10 * time.Second)
	for {
		own = shims(os.Getpid())
		if len(own) == 2 && len(strayShims(t)) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("shims %+v, stray %+v; want the supervisor and a spare, both owned", own, strayShims(t))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !slices.ContainsFunc(own, func(s shimProc) bool { return s.pid == supervisor }) {
		t.Fatalf("the plugin's parent %d is not among the shims %+v", supervisor, own)
	}

	// A shim nobody owns: a warm shim started by hand, waiting for its
	// configuration.
	exe, _ := os.Executable()
	cmd := exec.Command(exe, shimArg, "-", "")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	}()
	deadline = time.Now().Add(5 * time.Second)
	for {
		stray := strayShims(t)
		if len(stray) == 1 && stray[0].pid == cmd.Process.Pid {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stray shims %+v; want the one started by hand, %d", stray, cmd.Process.Pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()

	a.Close()
	assertNoneLeft(t, mark, 2*time.Second)
	for _, s := range own {
		if s.stillRunning() {
			t.Fatalf("shim %d survived Close", s.pid)
		}
	}
}
