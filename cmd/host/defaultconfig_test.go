package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/plugin/config"
)

// repoConfig returns the repository's config.hcl, found by walking up to
// the directory of toolhost's go.mod, as a path relative to the test's
// working directory (so that diagnostics and outputs read as a user's do).
func repoConfig(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel := "."
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/toolhost/toolhost\n") {
			return filepath.Join(rel, "config.hcl")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no toolhost go.mod above the test's directory")
		}
		dir, rel = parent, filepath.Join(rel, "..")
	}
}

// tableNames returns the first column of `host tools` output, header
// excluded.
func tableNames(t *testing.T, out string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "NAME ") {
		t.Fatalf("no table header in:\n%s", out)
	}
	var names []string
	for _, l := range lines[1:] {
		names = append(names, strings.Fields(l)[0])
	}
	return names
}

// The repository's default config.hcl works end to end through the CLI:
// it lists the built-in tools it enables (and not the disabled network
// ones), and a file tool sees ./workspace, resolved relative to the
// configuration file rather than the working directory.
func TestRepositoryConfig(t *testing.T) {
	cfgFile := repoConfig(t)
	cfg, diags := config.Load(cfgFile)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	var enabled []string
	for _, s := range cfg.Tools {
		if !s.Disabled {
			enabled = append(enabled, s.Name)
		}
	}

	r := runCLI(t, "", "tools", "--config", cfgFile)
	if r.code != 0 {
		t.Fatalf("tools: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	names := tableNames(t, r.stdout)
	if !slices.Equal(names, enabled) {
		t.Errorf("tools lists %q, want the enabled tools of %s in order: %q", names, cfgFile, enabled)
	}
	for _, want := range []string{"filesystem.read", "filesystem.list", "filesystem.search", "filesystem.write", "filesystem.edit", "filesystem.delete", "kb.learn"} {
		if !slices.Contains(names, want) {
			t.Errorf("the default configuration does not offer %s", want)
		}
	}
	for _, off := range []string{"http.request", "web.fetch", "web.search"} {
		if slices.Contains(names, off) {
			t.Errorf("%s is disabled in config.hcl but listed", off)
		}
	}
	if !strings.Contains(r.stdout, "filesystem.list    read_only       wasm") {
		t.Errorf("filesystem.list is not a read_only wasm tool:\n%s", r.stdout)
	}

	r = runCLI(t, "", "call", "--config", cfgFile, "filesystem.list", `{"path":"."}`)
	if r.code != 0 {
		t.Fatalf("call filesystem.list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	entries, err := os.ReadDir(filepath.Join(filepath.Dir(cfgFile), "workspace"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		want := e.Name()
		if e.IsDir() {
			want += "/"
		}
		if !strings.Contains(r.stdout, want) {
			t.Errorf("filesystem.list of the workspace lacks %s:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "README.md") || !strings.Contains(r.stdout, "kb/") {
		t.Errorf("filesystem.list does not show ./workspace:\n%s", r.stdout)
	}

	// Outside the workspace is outside the tool's world.
	r = runCLI(t, "", "call", "--config", cfgFile, "filesystem.read", `{"path":"../go.mod"}`)
	if r.code != 1 || strings.Contains(r.stdout, "module github.com/toolhost/toolhost") {
		t.Errorf("filesystem.read of ../go.mod: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

// --config defaults to ./config.hcl.
func TestConfigFlagDefault(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)

	r := runCLI(t, "", "validate")
	if r.code != exitUsage || !strings.Contains(r.stderr, "Reading config.hcl: open config.hcl: no such file") ||
		!strings.Contains(r.stderr, "There is no config.hcl in "+dir+": name the configuration with --config FILE") {
		t.Errorf("validate with no ./config.hcl: exit %d, stderr %q", r.code, r.stderr)
	}
	// The auth commands read the configuration alone, and say the same.
	r = runCLI(t, "", "auth", "status")
	if r.code != exitUsage || !strings.Contains(r.stderr, "There is no config.hcl in "+dir+": name the configuration with --config FILE") {
		t.Errorf("auth status with no ./config.hcl: exit %d, stderr %q", r.code, r.stderr)
	}

	src := `host {
  log_level = "off"
  cache_dir = "./.cache"
}

tool "echo" {
  tier = "read_only"
  go {}
}
`
	if err := os.WriteFile(filepath.Join(dir, "config.hcl"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, "", "validate")
	if r.code != 0 || r.stdout != "config.hcl: valid, 1 tool\n" {
		t.Errorf("validate: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, "", "tools")
	if r.code != 0 || !slices.Equal(tableNames(t, r.stdout), []string{"echo"}) {
		t.Errorf("tools: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, "", "call", "echo", `{"text":"from ./config.hcl"}`)
	if r.code != 0 || r.stdout != "from ./config.hcl\n" {
		t.Errorf("call: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
