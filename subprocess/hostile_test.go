package subprocess

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/toolhost/toolhost/plugin"
)

// Hostile plugins. Each test starts real processes, asserts the
// containment, that no process is left behind, and that the host keeps
// serving: a healthy tool of the same adapter still answers, and the
// hostile tool itself can be called again.

// healthy loads an echo tool next to the hostile one.
func healthy(t *testing.T, a *Adapter) plugin.Tool {
	t.Helper()
	s := testSpec(testPluginSum(), "echo", "serve", newMark(t)+"-healthy")
	s.Name = "healthy"
	tool := load(t, a, s)
	mustServe(t, tool)
	return tool
}

func wantCode(t *testing.T, err error, code plugin.Code, limit string) {
	t.Helper()
	var pe *plugin.Error
	if !errors.As(err, &pe) || pe.Code != code || (limit != "" && pe.Limit != limit) {
		t.Fatalf("err = %v (%#v); want %s %s", err, pe, code, limit)
	}
}

// inEveryMode runs fn with an adapter in each pidns × pids-cgroup mode
// this machine offers (mod sets the case's limits), skipping the others.
func inEveryMode(t *testing.T, mod func(*Config), fn func(t *testing.T, a *Adapter)) {
	for _, v := range []struct{ pidns, cgroup bool }{{true, true}, {false, true}, {true, false}, {false, false}} {
		t.Run(fmt.Sprintf("pidns=%t,cgroup=%t", v.pidns, v.cgroup), func(t *testing.T) {
			a := newTestAdapter(t, func(c *Config) {
				mod(c)
				c.NoPIDNamespace = !v.pidns
				c.NoPIDsCgroup = !v.cgroup
			})
			if h := a.Hardening(); v.pidns && !h.PIDNamespace || v.cgroup && !h.PIDsCgroup {
				t.Skipf("not available here: %+v", h)
			}
			fn(t, a)
		})
	}
}

// cpuHogs keeps every CPU of the machine busy with processes outside any
// sandbox until the test ends: the kill must not depend on the host
// getting the CPU first (issue 28: on a busy machine a fork bomb without a
// pids cgroup outlived it).
func cpuHogs(t *testing.T) {
	t.Helper()
	for range runtime.NumCPU() {
		cmd := exec.Command("/bin/sh", "-c", "while :; do :; done")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		})
	}
}

func TestHostileForkBomb(t *testing.T) {
	inEveryMode(t, func(c *Config) { c.MaxProcesses = 16 }, func(t *testing.T, a *Adapter) {
		cpuHogs(t)
		ok := healthy(t, a)
		mark := newMark(t)
		s := testSpec(testPluginSum(), "forkbomb", "serve", mark)
		s.Limits.Memory = 1 << 30
		tool := load(t, a, s)
		_, err := call(t, tool, `{}`, 15*time.Second)
		wantCode(t, err, plugin.CodeLimitExceeded, "processes")
		start := time.Now()
		assertNoneLeft(t, mark, 3*time.Second)
		t.Logf("no process left %v after the call returned", time.Since(start).Round(time.Millisecond))
		mustServe(t, ok)
		a.Close()
		assertNoneLeft(t, mark, 3*time.Second)
	})
}

func TestHostileThreadBomb(t *testing.T) {
	inEveryMode(t, func(c *Config) { c.MaxThreads = 150 }, func(t *testing.T, a *Adapter) {
		ok := healthy(t, a)
		mark := newMark(t)
		tool := load(t, a, testSpec(testPluginSum(), "threadbomb", "serve", mark))
		_, err := call(t, tool, `{}`, 15*time.Second)
		wantCode(t, err, plugin.CodeLimitExceeded, "threads")
		assertNoneLeft(t, mark, 3*time.Second)
		mustServe(t, ok)
		// The tool restarts and is contained again.
		_, err = call(t, tool, `{}`, 15*time.Second)
		wantCode(t, err, plugin.CodeLimitExceeded, "threads")
		assertNoneLeft(t, mark, 3*time.Second)
		a.Close()
		assertNoneLeft(t, mark, 3*time.Second)
	})
}

func TestHostileSetsidDoubleFork(t *testing.T) {
	for _, v := range []struct {
		name      string
		ns, cgrup bool
	}{{"pidns+cgroup", true, true}, {"cgroup", false, true}, {"pgroup+subreaper", false, false}} {
		t.Run(v.name, func(t *testing.T) {
			a := newTestAdapter(t, func(c *Config) { c.NoPIDNamespace = !v.ns; c.NoPIDsCgroup = !v.cgrup })
			ok := healthy(t, a)
			mark := newMark(t)
			tool := load(t, a, testSpec(testPluginSum(), "escape", "serve", mark))
			res, err := call(t, tool, `{}`, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			// Exit 10: setsid failed (seccomp), the grandchild started.
			if got := res.TextContent(); !strings.HasPrefix(got, "escape-a exit 10") {
				t.Fatalf("escape: %s", got)
			}
			// The plugin exits by itself; the orphaned grandchild, which
			// ignores SIGTERM, must not survive it.
			assertNoneLeft(t, mark, 3*time.Second)
			mustServe(t, ok)
			waitRetired(t, tool)
			if _, err := call(t, tool, `{}`, 10*time.Second); err != nil {
				t.Fatalf("hostile tool after restart: %v", err)
			}
			assertNoneLeft(t, mark, 3*time.Second)
		})
	}
}

func TestHostileIgnoresSIGTERM(t *testing.T) {
	t.Parallel() // mostly waits (helper_test.go)
	const grace = 300 * time.Millisecond
	a := newTestAdapter(t, func(c *Config) { c.KillGrace = grace })
	ok := healthy(t, a)
	mark := newMark(t)
	s := testSpec(testPluginSum(), "echo", "ignore-sigterm", mark)
	tool := load(t, a, s)
	mustServe(t, tool)
	start := time.Now()
	tool.(*pluginTool).stopAll()
	took := time.Since(start)
	if left := marked(mark); len(left) > 0 {
		t.Fatalf("stopAll returned with the plugin still running: %v", left)
	}
	assertNoneLeft(t, mark, 2*time.Second)
	if took < grace || took > grace+2*time.Second {
		t.Fatalf("stop took %s; want the grace period %s, then SIGKILL", took, grace)
	}
	mustServe(t, ok)
}

func TestConcurrentCalls(t *testing.T) {
	t.Parallel() // mostly waits (helper_test.go)
	a := newTestAdapter(t, nil)
	mark := newMark(t)
	tool := load(t, a, testSpec(testPluginSum(), "echo", "serve", mark))
	errs := make(chan error, 16)
	for i := 0; i < 16; i++ {
		go func() {
			res, err := call(t, tool, `{"text":"`+strconv.Itoa(i)+`"}`, 20*time.Second)
			if err == nil && res.TextContent() != "echo: "+strconv.Itoa(i) {
				err = errors.New("wrong answer " + res.TextContent())
			}
			errs <- err
		}()
	}
	for i := 0; i < 16; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := len(marked(mark)); n != 1 {
		t.Fatalf("%d plugin processes for one tool", n)
	}
}

func TestHostileAllocates(t *testing.T) {
	t.Run("watchdog", func(t *testing.T) {
		a := newTestAdapter(t, nil)
		ok := healthy(t, a)
		mark := newMark(t)
		s := testSpec(testPluginSum(), "alloc", "serve", mark)
		s.Limits.Memory = 96 << 20
		tool := load(t, a, s)
		_, err := call(t, tool, `{}`, 15*time.Second)
		wantCode(t, err, plugin.CodeLimitExceeded, "memory")
		assertNoneLeft(t, mark, 3*time.Second)
		mustServe(t, ok)
	})
	t.Run("rlimit_data", func(t *testing.T) {
		if raceEnabled {
			t.Skip("the race detector's shadow memory does not fit a data-segment limit")
		}
		// The watchdog samples too rarely to see it: RLIMIT_DATA stops it.
		a := newTestAdapter(t, func(c *Config) { c.SampleInterval = time.Hour; c.DataSlack = 128 << 20 })
		ok := healthy(t, a)
		mark := newMark(t)
		s := testSpec(testPluginSum(), "alloc", "serve", mark)
		s.Limits.Memory = 64 << 20
		tool := load(t, a, s)
		_, err := call(t, tool, `{}`, 15*time.Second)
		// The Go runtime reports the exhausted data segment either as
		// "out of memory" or as a failed thread creation (the thread
		// stack is data too).
		var pe *plugin.Error
		if !errors.As(err, &pe) || pe.Code != plugin.CodeLimitExceeded || pe.Limit != "memory" && pe.Limit != "threads" {
			t.Fatalf("err = %v, want LIMIT_EXCEEDED memory or threads", err)
		}
		assertNoneLeft(t, mark, 3*time.Second)
		mustServe(t, ok)
	})
}

func TestHostileFillsDisk(t *testing.T) {
	const limit = 4 << 20
	for _, tc := range []struct {
		name string
		op   string
	}{
		// A Go plugin ignores SIGXFSZ: its write fails with EFBIG and
		// it answers with an error result.
		{"EFBIG", ""},
		// A plugin that keeps the default action is killed by the
		// kernel, which the host reports as the file-size limit.
		{"SIGXFSZ", "sigdfl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestAdapter(t, func(c *Config) { c.MaxFileSize = limit })
			ok := healthy(t, a)
			mark := newMark(t)
			// The plugin writes into a read-write mount, where the host
			// can look at the file after the plugin is gone (its scratch
			// directory goes with it).
			out := sandboxDir(t)
			s := testSpec(testPluginSum(), "filldisk", "serve", mark)
			s.Capabilities.Mounts = []plugin.Mount{{HostPath: out, GuestPath: "/out"}}
			tool := load(t, a, s)
			big := filepath.Join(out, "big")
			res, err := call(t, tool, fmt.Sprintf(`{"path":%q,"op":%q}`, big, tc.op), 15*time.Second)
			if tc.op == "sigdfl" {
				wantCode(t, err, plugin.CodeLimitExceeded, "file_size")
				assertNoneLeft(t, mark, 3*time.Second) // the plugin and its shim are gone
			} else {
				if err != nil {
					t.Fatalf("a Go plugin should survive its EFBIG: %v", err)
				}
				m := regexp.MustCompile(`^wrote (\d+) bytes: .*file too large`).FindStringSubmatch(res.TextContent())
				if !res.IsError || m == nil {
					t.Fatalf("filldisk: %s", res.TextContent())
				}
				if n, _ := strconv.Atoi(m[1]); n > limit {
					t.Fatalf("the plugin says it wrote %d bytes past the limit %d", n, limit)
				}
				assertLeft(t, mark, 1, 3*time.Second) // the plugin alone, no stray shim
			}
			// What reached the disk, seen from the host.
			st, err := os.Stat(big)
			if err != nil {
				t.Fatal(err)
			}
			if st.Size() > limit || st.Size() == 0 {
				t.Fatalf("%s has %d bytes; the file-size limit is %d", big, st.Size(), limit)
			}
			mustServe(t, ok)
			// The hostile tool serves a call within the limit (restarted,
			// if it was killed).
			small := filepath.Join(out, "small")
			res, err = call(t, tool, fmt.Sprintf(`{"path":%q,"n":1}`, small), 15*time.Second)
			if err != nil || res.IsError || res.TextContent() != "wrote 1048576 bytes" {
				t.Fatalf("call within the limit: %v, %v", res, err)
			}
			if st, err := os.Stat(small); err != nil || st.Size() != 1<<20 {
				t.Fatalf("small: %v, %v", st, err)
			}
			assertLeft(t, mark, 1, 3*time.Second)
			a.Close()
			assertNoneLeft(t, mark, 3*time.Second)
		})
	}
}

func TestHostileExhaustsFileDescriptors(t *testing.T) {
	const limit = 40
	a := newTestAdapter(t, nil)
	ok := healthy(t, a)
	mark := newMark(t)
	s := testSpec(testPluginSum(), "fds", "serve", mark)
	s.Limits.FileDescriptors = limit
	tool := load(t, a, s)
	res, err := call(t, tool, `{}`, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`^opened (\d+) files: .*too many open files`).FindStringSubmatch(res.TextContent())
	if !res.IsError || m == nil {
		t.Fatalf("fds: %s", res.TextContent())
	}
	if n, _ := strconv.Atoi(m[1]); n >= limit {
		t.Fatalf("opened %d files with a limit of %d", n, limit)
	}
	assertLeft(t, mark, 1, 3*time.Second)

	// From the host: the plugin's descriptor table while it holds all it
	// could open.
	pids := marked(mark)
	if len(pids) != 1 {
		t.Fatalf("%d plugin processes", len(pids))
	}
	fdTable := func() map[int]string {
		ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pids[0]))
		if err != nil {
			t.Fatal(err)
		}
		out := map[int]string{}
		for _, e := range ents {
			n, _ := strconv.Atoi(e.Name())
			out[n], _ = os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pids[0], n))
		}
		return out
	}
	before := fdTable()
	res, err = call(t, tool, `{"op":"hold"}`, 15*time.Second)
	m = regexp.MustCompile(`^opened (\d+) files: .*too many open files`).FindStringSubmatch(res.TextContent())
	if err != nil || !res.IsError || m == nil {
		t.Fatalf("fds hold: %v, %v", res, err)
	}
	opened, _ := strconv.Atoi(m[1])
	limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pids[0]))
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^Max open files\s+(\d+)\s+(\d+)`).FindSubmatch(limits); m == nil || string(m[1]) != "40" || string(m[2]) != "40" {
		t.Fatalf("the plugin's RLIMIT_NOFILE is not %d:\n%s", limit, limits)
	}
	// The files it opened are the new descriptors of /dev/null; each
	// has a number below the limit. (Descriptors it inherited may have
	// higher numbers: RLIMIT_NOFILE bounds new ones.)
	after := fdTable()
	added, below, highest := 0, 0, -1
	for n, target := range after {
		if n < limit {
			below++
		}
		if target == "/dev/null" && before[n] != "/dev/null" {
			added++
			highest = max(highest, n)
		}
	}
	if added != opened || highest >= limit || below > limit || below < limit-5 {
		t.Fatalf("the plugin holds %d new descriptors of /dev/null (it says %d), the highest %d, and %d descriptors below %d; want them all below the limit, the table full:\n%v",
			added, opened, highest, below, limit, after)
	}
	// It gives them back and still serves.
	res, err = call(t, tool, `{"op":"release"}`, 15*time.Second)
	if err != nil || !strings.HasPrefix(res.TextContent(), "released ") {
		t.Fatalf("fds release: %v, %v", res, err)
	}
	if _, err := call(t, tool, `{}`, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := marked(mark); len(got) != 1 || got[0] != pids[0] {
		t.Fatalf("the plugin was restarted: %v, was %v", got, pids)
	}
	mustServe(t, ok)
	a.Close()
	assertNoneLeft(t, mark, 2*time.Second)
}

func TestHostileSleepsForever(t *testing.T) {
	t.Parallel() // mostly waits (helper_test.go)
	a := newTestAdapter(t, nil)
	ok := healthy(t, a)
	mark := newMark(t)
	s := testSpec(testPluginSum(), "sleep", "serve", mark)
	s.Limits.Timeout = 500 * time.Millisecond
	tool := load(t, a, s)
	for i := 0; i < 2; i++ { // and again, after the restart
		start := time.Now()
		_, err := call(t, tool, `{}`, 10*time.Second)
		wantCode(t, err, plugin.CodeToolExecutionTimeout, "")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("errors.Is(err, context.DeadlineExceeded) = false for %v", err)
		}
		if d := time.Since(start); d > 6*time.Second {
			t.Fatalf("timeout took %s", d)
		}
		assertNoneLeft(t, mark, 2*time.Second)
	}
	mustServe(t, ok)
}

func TestHostileHangsInHandshake(t *testing.T) {
	t.Parallel() // mostly waits (helper_test.go)
	a := newTestAdapter(t, func(c *Config) { c.StartTimeout = time.Second })
	ok := healthy(t, a)
	mark := newMark(t)
	start := time.Now()
	_, err := a.Load(context.Background(), testSpec(testPluginSum(), "echo", "hang", mark))
	wantCode(t, err, plugin.CodeToolUnavailable, "")
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("start timeout took %s", d)
	}
	assertNoneLeft(t, mark, 3*time.Second)
	mustServe(t, ok)
}

func TestHostileCrashesMidCall(t *testing.T) {
	t.Parallel() // mostly waits (helper_test.go)
	a := newTestAdapter(t, func(c *Config) { c.RestartBackoff = 300 * time.Millisecond })
	ok := healthy(t, a)
	mark := newMark(t)
	tool := load(t, a, testSpec(testPluginSum(), "crash", "serve", mark))
	_, err := call(t, tool, `{}`, 10*time.Second)
	wantCode(t, err, plugin.CodeToolUnavailable, "")
	if !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("crash error does not say how: %v", err)
	}
	if avail, why := tool.(plugin.Availability).Available(); avail || !strings.Contains(why, "restarting in") {
		t.Errorf("Available() = %v, %q during the backoff", avail, why)
	}
	assertNoneLeft(t, mark, 2*time.Second)
	mustServe(t, ok)
	// The next call waits out the backoff, restarts the plugin, which
	// crashes again: restarted, and contained again.
	start := time.Now()
	_, err = call(t, tool, `{}`, 10*time.Second)
	wantCode(t, err, plugin.CodeToolUnavailable, "")
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("restart after %s: no backoff", d)
	}
	assertNoneLeft(t, mark, 2*time.Second)
}

func TestHostileGarbage(t *testing.T) {
	t.Parallel() // mostly waits (helper_test.go)
	a := newTestAdapter(t, nil)
	ok := healthy(t, a)
	t.Run("stdout before the handshake", func(t *testing.T) {
		mark := newMark(t)
		_, err := a.Load(context.Background(), testSpec(testPluginSum(), "echo", "garbage", mark))
		wantCode(t, err, plugin.CodeToolUnavailable, "")
		if !strings.Contains(err.Error(), "Unrecognized remote plugin message") {
			t.Errorf("err = %v", err)
		}
		assertNoneLeft(t, mark, 3*time.Second)
	})
	t.Run("invalid result JSON", func(t *testing.T) {
		mark := newMark(t)
		tool := load(t, a, testSpec(testPluginSum(), "echo", "badjson", mark))
		_, err := call(t, tool, `{}`, 10*time.Second)
		wantCode(t, err, plugin.CodeOutputInvalid, "")
		pids := marked(mark)
		mustServeTool(t, tool, plugin.CodeOutputInvalid) // still the same plugin, still answering
		if got := marked(mark); len(pids) != 1 || !slices.Equal(got, pids) {
			t.Fatalf("plugin processes %v after the second call, %v after the first; want the same one", got, pids)
		}
		assertLeft(t, mark, 1, 3*time.Second)
		tool.(*pluginTool).stopAll()
		assertNoneLeft(t, mark, 3*time.Second)
	})
	mustServe(t, ok)
}

func mustServeTool(t *testing.T, tool plugin.Tool, code plugin.Code) {
	t.Helper()
	_, err := call(t, tool, `{}`, 10*time.Second)
	wantCode(t, err, code, "")
}

func TestHostileBinarySwapped(t *testing.T) {
	t.Parallel() // mostly waits (helper_test.go)
	exe, _ := os.Executable()
	dir := sandboxDir(t)
	bin := filepath.Join(dir, "plugin")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{bin, filepath.Join(dir, "healthy")} {
		if err := os.WriteFile(name, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	a := newTestAdapter(t, func(c *Config) { c.PluginDir = dir })
	hs := testSpec(testPluginSum(), "echo", "serve", newMark(t)+"-healthy")
	hs.Name, hs.Source.Path = "healthy", "healthy"
	ok := load(t, a, hs)
	mark := newMark(t)
	s := testSpec(testPluginSum(), "echo", "serve", mark)
	s.Source.Path = "plugin"
	s.Limits.IdleTimeout = 100 * time.Millisecond
	tool := load(t, a, s)
	mustServe(t, tool)
	assertNoneLeft(t, mark, 3*time.Second) // stopped when idle

	// Swap the binary (a new file renamed over the pinned one).
	if err := os.WriteFile(bin+".new", append(data, "tampered"...), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(bin+".new", bin); err != nil {
		t.Fatal(err)
	}
	_, err = call(t, tool, `{"text":"x"}`, 10*time.Second)
	wantCode(t, err, plugin.CodeToolUnavailable, "")
	if !errors.Is(err, goplugin.ErrChecksumsDoNotMatch) {
		t.Fatalf("err = %v, want ErrChecksumsDoNotMatch", err)
	}
	if left := marked(mark); len(left) > 0 {
		t.Fatalf("the swapped binary ran: %v", left)
	}
	mustServe(t, ok)
}

func TestHostKilled(t *testing.T) {
	t.Parallel() // mostly waits (helper_test.go)
	for _, v := range []struct {
		name string
		env  []string
	}{
		{"pidns", []string{"TOOLHOST_TEST_NOPIDNS="}},
		// The host's adapter reads TOOLHOST_TEST_NOPIDNS (runTestHost):
		// then only the lifeline and the process groups stop the trees.
		{"no pidns", []string{"TOOLHOST_TEST_NOPIDNS=1"}},
	} {
		t.Run(v.name, func(t *testing.T) {
			if v.name == "pidns" && !Report().PIDNamespace {
				t.Skip("no PID namespaces here")
			}
			mark := newMark(t)
			host, _ := startTestHost(t, mark, v.env...)
			// Two plugins, each with three sleeping children that ignore
			// SIGTERM.
			if n := len(marked(mark)); n < 8 {
				host.Process.Kill()
				t.Fatalf("%d marked processes before the kill, want 8", n)
			}
			// The host's shims: one supervisor per plugin (the parent of a
			// marked process) and, once warmed, one spare per tool.
			var hostShims []shimProc
			deadline := time.Now().Add(10 * time.Second)
			for {
				hostShims = shims(host.Process.Pid)
				supervisors := 0
				for _, s := range hostShims {
					for _, pid := range marked(mark) {
						if pp, _ := statFields(pid); pp == s.pid {
							supervisors++
							break
						}
					}
				}
				if supervisors == 2 && len(hostShims) >= 4 {
					break
				}
				if time.Now().After(deadline) {
					host.Process.Kill()
					t.Fatalf("the test host has %d shims, %d of them supervising a plugin; want 2 supervisors and 2 spares", len(hostShims), supervisors)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := host.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = host.Wait()
			assertNoneLeft(t, mark, 3*time.Second)
			deadline = time.Now().Add(3 * time.Second)
			for {
				var left []string
				for _, s := range hostShims {
					if s.stillRunning() {
						left = append(left, describeProc(s.pid)+" "+strings.Join(s.args, " "))
					}
				}
				if len(left) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("shims of the killed host left behind: %s", strings.Join(left, ", "))
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

func TestIdleStop(t *testing.T) {
	t.Parallel() // mostly waits (helper_test.go)
	a := newTestAdapter(t, nil)
	mark := newMark(t)
	s := testSpec(testPluginSum(), "echo", "serve", mark)
	s.Limits.IdleTimeout = 150 * time.Millisecond
	tool := load(t, a, s)
	mustServe(t, tool)
	if len(marked(mark)) != 1 {
		t.Fatal("plugin not running after a call")
	}
	assertNoneLeft(t, mark, 2*time.Second)
	mustServe(t, tool) // started again on demand
}

// waitRetired waits until the host noticed that the tool's plugin exited by
// itself (a call racing with that exit fails with TOOL_UNAVAILABLE).
func waitRetired(t *testing.T, tool plugin.Tool) {
	t.Helper()
	pt := tool.(*pluginTool)
	deadline := time.Now().Add(5 * time.Second)
	for {
		pt.mu.Lock()
		cur := pt.cur
		pt.mu.Unlock()
		if cur == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the plugin's exit went unnoticed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestHostileSpins(t *testing.T) {
	t.Run("watchdog", func(t *testing.T) {
		// Three spinning processes (the plugin and two children): the
		// tree passes its CPU budget of 1 s long before any one process
		// reaches its RLIMIT_CPU, so the watchdog is what stops it.
		a := newTestAdapter(t, func(c *Config) { c.CPUSeconds = 1 })
		ok := healthy(t, a)
		mark := newMark(t)
		tool := load(t, a, testSpec(testPluginSum(), "spin", "serve", mark))
		for i := 0; i < 2; i++ { // and again, after the restart
			start := time.Now()
			_, err := call(t, tool, `{"n":2}`, 15*time.Second)
			wantCode(t, err, plugin.CodeLimitExceeded, "cpu")
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("stopped after %s", d)
			}
			assertNoneLeft(t, mark, 3*time.Second)
			mustServe(t, ok)
		}
	})
	t.Run("rlimit", func(t *testing.T) {
		// One spinning process and a watchdog that never samples:
		// RLIMIT_CPU stops it, and the host should say so.
		a := newTestAdapter(t, func(c *Config) { c.CPUSeconds = 1; c.SampleInterval = time.Hour })
		ok := healthy(t, a)
		mark := newMark(t)
		tool := load(t, a, testSpec(testPluginSum(), "spin", "serve", mark))
		_, err := call(t, tool, `{}`, 15*time.Second)
		assertNoneLeft(t, mark, 3*time.Second)
		mustServe(t, ok)
		// The soft limit's SIGXCPU is ignored (a Go plugin), the hard
		// one's SIGKILL follows; the shim tells the host which limit it was.
		wantCode(t, err, plugin.CodeLimitExceeded, "cpu")
	})
}

// TestBackoffReleasesTheTool: a call waiting out the restart backoff does
// not hold the tool: Close returns at once and ends the waiting call, and
// the tool says it is restarting meanwhile.
func TestBackoffReleasesTheTool(t *testing.T) {
	t.Parallel() // mostly waits (helper_test.go)
	a := newTestAdapter(t, func(c *Config) { c.RestartBackoff = 20 * time.Second; c.MaxRestartBackoff = 20 * time.Second })
	mark := newMark(t)
	tool := load(t, a, testSpec(testPluginSum(), "crash", "serve", mark))
	_, err := call(t, tool, `{}`, 10*time.Second)
	wantCode(t, err, plugin.CodeToolUnavailable, "")
	waiting := make(chan error, 1)
	go func() {
		_, err := tool.Call(context.Background(), &plugin.Request{ID: "w", Name: tool.Descriptor().Name, Arguments: json.RawMessage(`{}`)})
		waiting <- err
	}()
	pt := tool.(*pluginTool)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		pt.mu.Lock()
		n := pt.backoffs
		pt.mu.Unlock()
		if n == 1 {
			break // the call waits out the backoff, without the lock
		}
		if time.Now().After(deadline) {
			t.Fatal("the second call never reached the restart backoff")
		}
	}
	done := make(chan struct{})
	go func() {
		if avail, why := tool.(plugin.Availability).Available(); avail || !strings.Contains(why, "restarting in") {
			t.Errorf("Available() = %v, %q during the backoff", avail, why)
		}
		a.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for the call that waits out the backoff")
	}
	select {
	case err := <-waiting:
		wantCode(t, err, plugin.CodeToolUnavailable, "")
		if !strings.Contains(err.Error(), "closed") {
			t.Errorf("waiting call: %v, want it told the adapter closed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting call did not end with Close")
	}
	assertNoneLeft(t, mark, 2*time.Second)
}
