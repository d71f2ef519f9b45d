package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The subprocess tier end to end through the CLI: the built-in shell tools
// run under the sandbox shim (the test binary, see TestMain).
func TestCLISubprocessTools(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the subprocess tier's hardening is Linux-only")
	}
	// The configuration and its workspace are copied to a directory that
	// subprocess tools — which a root host runs as 65534:65534 — can reach
	// wherever the repository was checked out.
	dir := t.TempDir()
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"subprocess.hcl", "ws/note.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := "--config=" + filepath.Join(dir, "subprocess.hcl")
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"shell exec with exit code and both streams", []string{"call", cfg, "--yes", "shell.exec", `{"command":"cat note.txt; echo oops >&2; exit 3"}`},
			0, "Exit code: 3\n--- stdout ---\nhello from the workspace\n--- stderr ---\noops\n", ""},
		{"shell exec needs approval", []string{"call", cfg, "shell.exec", `{"command":"true"}`},
			1, "", "Error [APPROVAL_REQUIRED]"},
		{"shell exec timeout kills the tree", []string{"call", cfg, "--yes", "shell.exec", `{"command":"sleep 60 & sleep 60","timeout":1}`},
			1, "", "Error [TOOL_EXECUTION_TIMEOUT]"},
		{"shell exec timeout out of range", []string{"call", cfg, "--yes", "shell.exec", `{"command":"true","timeout":601}`},
			2, "", "Error [INVALID_REQUEST]"},
		{"read-only command runs", []string{"call", cfg, "bash.read-only", `{"command":"wc -l note.txt"}`},
			0, "1 note.txt", ""},
		{"read-only refuses a writer", []string{"call", cfg, "bash.read-only", `{"command":"rm note.txt"}`},
			1, "", "Error [PERMISSION_DENIED]"},
		{"read-only refuses command substitution", []string{"call", cfg, "bash.read-only", `{"command":"cat $(echo note.txt)"}`},
			1, "", "Error [PERMISSION_DENIED]"},
		{"read-only refuses a redirection that writes", []string{"call", cfg, "bash.read-only", `{"command":"cat note.txt > copy.txt"}`},
			1, "", "Error [PERMISSION_DENIED]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, "", tt.args...)
			if r.code != tt.code || !strings.Contains(r.stdout, tt.stdout) || !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("exit %d (want %d)\nstdout: %q (want %q)\nstderr: %q (want %q)", r.code, tt.code, r.stdout, tt.stdout, r.stderr, tt.stderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "ws/copy.txt")); err == nil {
		t.Errorf("bash.read-only wrote a file")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "ws/note.txt")); string(b) != "hello from the workspace\n" {
		t.Errorf("note.txt changed: %q", b)
	}
}
