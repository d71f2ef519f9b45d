package subprocess

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/plugin"
)

var (
	gitPluginOnce sync.Once
	gitPluginPath string
	gitPluginErr  error
)

// buildGitPlugin builds examples/plugins/git once per test run.
func buildGitPlugin(t testing.TB) string {
	t.Helper()
	gitPluginOnce.Do(func() {
		dir, err := os.MkdirTemp("", "toolhost-git-plugin-")
		if err != nil {
			gitPluginErr = err
			return
		}
		gitPluginPath = filepath.Join(dir, "git-plugin")
		goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
		cmd := exec.Command(goTool, "build", "-o", gitPluginPath, "../examples/plugins/git")
		if out, err := cmd.CombinedOutput(); err != nil {
			gitPluginErr = &exec.Error{Name: "go build: " + string(out), Err: err}
		}
	})
	if gitPluginErr != nil {
		t.Fatal(gitPluginErr)
	}
	return gitPluginPath
}

// gitRepo makes a repository with two commits.
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	run := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=Ada", "-c", "user.email=ada@example.com"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\n"), 0o644)
	run("add", "a.txt")
	run("commit", "-q", "-m", "first commit")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\ntwo\nthree\n"), 0o644)
	run("commit", "-q", "-am", "add two lines")
	return dir
}

func TestExampleGitPlugin(t *testing.T) {
	bin := buildGitPlugin(t)
	sum, err := FileSHA256(bin)
	if err != nil {
		t.Fatal(err)
	}
	repo := gitRepo(t)
	a := newTestAdapter(t, func(c *Config) { c.PluginDir = filepath.Dir(bin) })
	spec := func(tool string) *plugin.Spec {
		return &plugin.Spec{
			Name:   tool,
			Source: plugin.Source{Kind: Kind, Path: "git-plugin", SHA256: sum, Tool: tool},
			Tier:   plugin.TierReadOnly,
			Capabilities: plugin.Capabilities{Subprocess: true,
				Mounts: []plugin.Mount{{HostPath: repo, GuestPath: "/repo", ReadOnly: true}}},
		}
	}
	log := load(t, a, spec("git_log"))
	if d := log.Descriptor(); !strings.Contains(d.Description, "latest commits") || d.Annotations == nil || !d.Annotations.ReadOnlyHint {
		t.Fatalf("descriptor %+v", d)
	}
	res, err := call(t, log, `{"repo":"`+repo+`","max":5}`, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(res.TextContent()), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], "Ada: add two lines") || !strings.HasSuffix(lines[1], "Ada: first commit") {
		t.Fatalf("git_log:\n%s", res.TextContent())
	}

	show := load(t, a, spec("git_show"))
	res, err = call(t, show, `{"repo":"`+repo+`","commit":"HEAD"}`, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.TextContent(), "2\t0\ta.txt") {
		t.Fatalf("git_show:\n%s", res.TextContent())
	}

	// A repository that was not mounted for the tool is out of reach.
	other := gitRepo(t)
	res, err = call(t, log, `{"repo":"`+other+`"}`, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if a.hard.Landlock && (!res.IsError || !strings.Contains(res.TextContent(), "ermission denied") && !strings.Contains(res.TextContent(), "not a git repository")) {
		t.Fatalf("unmounted repository: %+v", res)
	}
	// Mistakes come back as results the model can act on.
	res, err = call(t, show, `{"repo":"`+repo+`","commit":"--output=/tmp/x"}`, 20*time.Second)
	if err != nil || !res.IsError || !strings.Contains(res.TextContent(), "commit: expected") {
		t.Fatalf("bad commit: %+v %v", res, err)
	}
}
