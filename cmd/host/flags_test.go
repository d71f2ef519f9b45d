package main

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/toolhost/toolhost"
)

// host version prints "toolhost VERSION" and nothing else.
func TestVersion(t *testing.T) {
	r := runCLI(t, "", "version")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("version: exit %d, stderr %q", r.code, r.stderr)
	}
	if want := "toolhost " + toolhost.Version + "\n"; r.stdout != want {
		t.Errorf("version = %q, want %q", r.stdout, want)
	}
	// A semantic version, as -ldflags "-X ...Version=v1.2.3" sets it.
	if !regexp.MustCompile(`^toolhost v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?\n$`).MatchString(r.stdout) {
		t.Errorf("version %q is not \"toolhost vMAJOR.MINOR.PATCH[-pre]\"", r.stdout)
	}
	// It needs no configuration.
	if r := runCLI(t, "", "version", "--config=testdata/nope.hcl"); r.code != 0 {
		t.Errorf("version with a missing config: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := runCLI(t, "", "version", "extra"); r.code != exitUsage || !strings.Contains(r.stderr, "unknown command") && !strings.Contains(r.stderr, "accepts 0 arg") {
		t.Errorf("version extra: exit %d, stderr %q", r.code, r.stderr)
	}
}

// --log-level overrides the configuration's log_level (testdata/cli.hcl
// says off); logs go to stderr, never stdout.
func TestLogLevel(t *testing.T) {
	t.Cleanup(func() { os.RemoveAll("testdata/.cache") })
	cfg := "--config=testdata/cli.hcl"
	debugLine := regexp.MustCompile(`(?m)^\S+ \[DEBUG\] host: configuration loaded: config=testdata/cli.hcl tools=4$`)

	r := runCLI(t, "", "call", cfg, "echo", `{"text":"hi"}`)
	if r.code != 0 || r.stdout != "hi\n" || r.stderr != "" {
		t.Errorf("log_level off: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, "", "call", cfg, "--log-level=debug", "echo", `{"text":"hi"}`)
	if r.code != 0 || r.stdout != "hi\n" || !debugLine.MatchString(r.stderr) {
		t.Errorf("--log-level=debug: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, "", "call", cfg, "--log-level=WARN", "echo", `{"text":"hi"}`)
	if r.code != 0 || strings.Contains(r.stderr, "[DEBUG]") {
		t.Errorf("--log-level=WARN: exit %d, stderr %q", r.code, r.stderr)
	}

	r = runCLI(t, "", "tools", cfg, "--log-level=loud")
	if r.code != exitUsage || r.stdout != "" ||
		r.stderr != "Error: --log-level \"loud\": want one of trace, debug, info, warn, error, off\n" {
		t.Errorf("--log-level=loud: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// --log-json writes one JSON object per line, with hclog's @level,
// @message, @module and @timestamp keys and the fields as keys.
func TestLogJSON(t *testing.T) {
	t.Cleanup(func() { os.RemoveAll("testdata/.cache") })
	r := runCLI(t, "", "tools", "--config=testdata/cli.hcl", "--log-level=debug", "--log-json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.HasPrefix(r.stdout, "NAME ") {
		t.Errorf("stdout is not the tools table: %q", r.stdout)
	}
	lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
	found := false
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stderr line is not JSON: %q (%v)", l, err)
		}
		for _, k := range []string{"@level", "@message", "@module", "@timestamp"} {
			if _, ok := m[k]; !ok {
				t.Errorf("line %q lacks %s", l, k)
			}
		}
		if m["@message"] == "configuration loaded" {
			found = true
			if m["@level"] != "debug" || m["@module"] != "host" || m["config"] != "testdata/cli.hcl" || m["tools"] != 4.0 {
				t.Errorf("configuration loaded line = %v", m)
			}
		}
	}
	if !found {
		t.Errorf("no \"configuration loaded\" line in:\n%s", r.stderr)
	}
}
