package subprocess

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/plugin/config"
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
	return gitRepoAt(t, searchableTempDir(t))
}

// gitRepoAt makes a repository with two commits in dir.
func gitRepoAt(t *testing.T, dir string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
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
	t.Parallel() // mostly waits (helper_test.go)
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

// TestExampleGitPluginConfig: the operator's snippet in
// examples/plugins/git/plugin.hcl parses with the configuration loader once
// the binary is built and pinned as its comments say, and its tools load
// and answer through a host.
func TestExampleGitPluginConfig(t *testing.T) {
	t.Parallel() // mostly waits (helper_test.go)
	bin := buildGitPlugin(t)
	sum, err := FileSHA256(bin)
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../examples/plugins/git/plugin.hcl")
	if err != nil {
		t.Fatal(err)
	}
	const placeholder = `"<output of: sha256sum bin/git-plugin>"`
	if n := strings.Count(string(src), placeholder); n != 2 {
		t.Fatalf("plugin.hcl has %d sha256 placeholders %s, the test expects 2: update the test with the snippet", n, placeholder)
	}
	// The layout the snippet assumes, beside a copy of it: bin/git-plugin
	// and a workspace directory holding a repository.
	dir := searchableTempDir(t)
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "git-plugin"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	repo := gitRepoAt(t, filepath.Join(dir, "workspace", "repo"))
	file := filepath.Join(dir, "config.hcl")
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(string(src), placeholder, `"`+sum+`"`)), 0o644); err != nil {
		t.Fatal(err)
	}

	p := config.NewParser()
	cfg, diags := p.LoadFile(file)
	if diags.HasErrors() || len(diags) > 0 {
		var b strings.Builder
		_ = p.WriteDiagnostics(&b, diags, 100, false)
		t.Fatalf("plugin.hcl:\n%s", b.String())
	}
	if !cfg.Grants.Subprocess {
		t.Fatal("the snippet does not grant tool.exec.subprocess")
	}
	var names []string
	for _, s := range cfg.Tools {
		names = append(names, s.Name)
		src := s.Source
		if src.Kind != Kind || src.Path != filepath.Join(dir, "bin", "git-plugin") || src.SHA256 != sum || src.Tool != s.Name {
			t.Errorf("tool %s: source %+v", s.Name, src)
		}
		ws, _ := filepath.EvalSymlinks(filepath.Join(dir, "workspace"))
		if s.Tier != plugin.TierReadOnly || !s.Capabilities.Subprocess || len(s.Capabilities.Mounts) != 1 ||
			s.Capabilities.Mounts[0].HostPath != ws || !s.Capabilities.Mounts[0].ReadOnly {
			t.Errorf("tool %s: tier %s, capabilities %+v", s.Name, s.Tier, s.Capabilities)
		}
	}
	if strings.Join(names, ",") != "git_log,git_show" {
		t.Fatalf("tools %v", names)
	}
	if l := cfg.Tools[0].Limits; l.Timeout != 10*time.Second || l.Memory != 128<<20 {
		t.Errorf("git_log limits %+v", l)
	}

	h, err := plugin.NewHost(plugin.Options{Grants: cfg.Grants, Adapters: []plugin.Adapter{newTestAdapter(t, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, s := range cfg.Tools {
		if err := h.Load(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
	invoke := func(name, args string) string {
		t.Helper()
		res, err := h.Invoke(t.Context(), plugin.Call{Name: name, Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res.TextContent()
	}
	lines := strings.Split(strings.TrimSpace(invoke("git_log", `{"repo":"`+repo+`"}`)), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], "Ada: add two lines") || !strings.HasSuffix(lines[1], "Ada: first commit") {
		t.Fatalf("git_log:\n%s", strings.Join(lines, "\n"))
	}
	if got := invoke("git_show", `{"repo":"`+repo+`","commit":"HEAD"}`); !strings.Contains(got, "2\t0\ta.txt") {
		t.Fatalf("git_show:\n%s", got)
	}
}
