package raceexit

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

// childEnv names what a child run of this test binary does.
const childEnv = "RACEEXIT_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		Reexec()
		child(mode)
		return
	}
	os.Exit(m.Run())
}

// child reports on stdout what the process was started with and what it
// sees, then exits with a goroutine still running, after a data race if
// mode is "race".
func child(mode string) {
	given, _ := os.ReadFile("/proc/self/environ")
	fmt.Printf("given=%q\n", strings.ReplaceAll(string(given), "\x00", " "))
	fmt.Printf("sees=%q\n", strings.Join(os.Environ(), " "))
	go time.Sleep(time.Hour)
	if mode == "race" {
		x := 0
		done := make(chan bool)
		go func() { x = 1; done <- true }()
		x = 2
		<-done
		_ = x
	}
	os.Exit(0)
}

// run starts this test binary as a child with the environment env alone,
// as the subprocess sandbox starts the shim.
func run(t *testing.T, env ...string) (string, int, time.Duration) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	took := time.Since(start)
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	return out.String(), code, took
}

// TestReexec: a child started with a scrubbed environment runs again with
// the option in GORACE, sees the environment it was given, exits without
// the sleep, and still reports a race and exits with status 66.
func TestReexec(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Reexec executes again only on Linux")
	}
	out, code, took := run(t, childEnv+"=exit", "KEEP=1")
	if code != 0 {
		t.Fatalf("exit status %d:\n%s", code, out)
	}
	if !strings.Contains(out, `sees="`+childEnv+`=exit KEEP=1"`) {
		t.Errorf("the child does not see the environment it was given:\n%s", out)
	}
	if enabled {
		if !strings.Contains(out, "GORACE="+Option) {
			t.Errorf("the child did not run again with GORACE=%s:\n%s", Option, out)
		}
		// The sleep alone would be a second.
		t.Logf("exited after %s", took)
	}

	// An environment that sets GORACE is left alone.
	out, _, _ = run(t, childEnv+"=exit", "GORACE=halt_on_error=0 "+Option)
	if strings.Contains(out, marker) || !strings.Contains(out, `sees="`+childEnv+`=exit GORACE=halt_on_error=0 `+Option+`"`) {
		t.Errorf("an environment setting GORACE was changed:\n%s", out)
	}

	if enabled {
		out, code, _ = run(t, childEnv+"=race")
		if code != 66 || !strings.Contains(out, "WARNING: DATA RACE") {
			t.Errorf("exit status %d, want 66 and a race report:\n%s", code, out)
		}
	}
}

func TestSetenv(t *testing.T) {
	t.Setenv("GORACE", "halt_on_error=1")
	Setenv()
	want := "halt_on_error=1"
	if enabled {
		want += " " + Option
	}
	if got := os.Getenv("GORACE"); got != want {
		t.Errorf("GORACE = %q, want %q", got, want)
	}
	Setenv()
	if got := os.Getenv("GORACE"); got != want {
		t.Errorf("twice: GORACE = %q, want %q", got, want)
	}
}
