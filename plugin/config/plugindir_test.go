package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/plugin/config"
)

// TestPluginDir: subprocess plugin paths resolve inside the plugin
// directory and cannot leave it by "../", an absolute path or a symlink.
func TestPluginDir(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"plugins", "elsewhere"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"plugins/good", "elsewhere/bad", "top"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "elsewhere", "bad"), filepath.Join(dir, "plugins", "link")); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(dir, "elsewhere", "bad")
	tests := []struct {
		name, pluginDir, path string
		want                  string // diagnostic summary, "" for none
	}{
		{"inside", "./plugins", "good", ""},
		{"inside, dot-relative", "./plugins", "./good", ""},
		{"absolute inside", "./plugins", filepath.Join(dir, "plugins", "good"), ""},
		{"dot-dot", "./plugins", "../elsewhere/bad", "Plugin outside the plugin directory"},
		{"absolute outside", "./plugins", outside, "Plugin outside the plugin directory"},
		{"symlink out", "./plugins", "link", "Plugin outside the plugin directory"},
		{"default is the config's directory", "", "plugins/good", ""},
		{"default, dot-dot", "", "../" + filepath.Base(dir) + "/top", ""},
		{"default, outside", "", "/bin/sh", "Plugin outside the plugin directory"},
		{"missing plugin directory", "./nope", "good", "Plugin directory not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := ""
			if tt.pluginDir != "" {
				host = "host {\n  plugin_dir = \"" + tt.pluginDir + "\"\n}\n"
			}
			src := host + `grants {
  capabilities = ["tool.exec.subprocess"]
}
tool "p" {
  subprocess {
    path   = "` + tt.path + `"
    sha256 = "` + strings.Repeat("ab", 32) + `"
  }
}
`
			file := filepath.Join(dir, "config.hcl")
			if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, diags := config.Load(file)
			if tt.want == "" {
				if diags.HasErrors() {
					t.Fatal(diags.Error())
				}
				if p := cfg.Tools[0].Source.Path; !strings.HasPrefix(p, dir) {
					t.Errorf("path %s", p)
				}
				return
			}
			found := false
			for _, d := range diags.Errs() {
				found = found || strings.Contains(d.Error(), tt.want)
			}
			if !found {
				t.Fatalf("want a diagnostic %q, got %v", tt.want, diags)
			}
		})
	}
}

// TestShellExecTier: shell.exec's tier cannot be lowered below privileged;
// the configuration check says so at the tier attribute.
func TestShellExecTier(t *testing.T) {
	dir := t.TempDir()
	for tier, bad := range map[string]bool{"": false, `tier = "privileged"`: false, `tier = "read_only"`: true, `tier = "side_effecting"`: true} {
		src := "grants {\n  capabilities = [\"tool.exec.subprocess\"]\n}\ntool \"shell.exec\" {\n  " + tier + "\n  subprocess {\n    builtin = \"shell.exec\"\n  }\n}\n"
		file := filepath.Join(dir, "config.hcl")
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		_, diags := config.Load(file)
		if !bad {
			if diags.HasErrors() {
				t.Errorf("%q: %v", tier, diags)
			}
			continue
		}
		errs := diags.Errs()
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), "Tier too low for shell.exec") || !strings.Contains(errs[0].Error(), "config.hcl:5,") {
			t.Errorf("%q: want one diagnostic at the tier attribute (line 5), got %v", tier, diags)
		}
	}
}
