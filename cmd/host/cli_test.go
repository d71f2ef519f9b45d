package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolhost/toolhost/plugin"
)

var update = flag.Bool("update", false, "rewrite golden files")

// testTools are the in-process tools the CLI tests configure with go {}
// blocks in testdata/cli.hcl.
func testTools(t *testing.T) *plugin.InProcess {
	t.Helper()
	p := plugin.NewInProcess()
	add := func(name string, schema string, fn func(context.Context, *plugin.Request) (*plugin.Result, error)) {
		if err := p.Add(name, plugin.Func(plugin.Descriptor{Name: name, InputSchema: json.RawMessage(schema)}, fn)); err != nil {
			t.Fatal(err)
		}
	}
	add("echo", `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`,
		func(_ context.Context, r *plugin.Request) (*plugin.Result, error) {
			var in struct{ Text string }
			if err := r.DecodeArguments(&in); err != nil {
				return nil, err
			}
			return &plugin.Result{Content: []plugin.Content{plugin.Text(in.Text)}}, nil
		})
	add("danger", `{"type":"object"}`, func(context.Context, *plugin.Request) (*plugin.Result, error) {
		return &plugin.Result{Content: []plugin.Content{plugin.Text("done")}}, nil
	})
	add("ask", `{"type":"object"}`, func(_ context.Context, r *plugin.Request) (*plugin.Result, error) {
		v, ok := r.Answers["color"]
		if !ok {
			return &plugin.Result{NeedsInput: &plugin.Question{ID: "color", Text: "Which color?", Type: plugin.AnswerSelect, Options: []string{"red", "blue"}}}, nil
		}
		return &plugin.Result{Content: []plugin.Content{plugin.Textf("you chose %s", v)}}, nil
	})
	add("big", `{"type":"object"}`, func(context.Context, *plugin.Request) (*plugin.Result, error) {
		var b strings.Builder
		for i := 0; i < 200; i++ {
			b.WriteString("line ")
			b.WriteString(strings.Repeat("x", 20))
			b.WriteByte('\n')
		}
		return &plugin.Result{Content: []plugin.Content{plugin.Text(b.String())}}, nil
	})
	return p
}

type cliResult struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, stdin string, args ...string) cliResult {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, goTools: testTools(t),
		openTTY: func() (io.ReadWriteCloser, error) { return nil, errors.New("no tty in tests") }}
	code := a.run(context.Background(), args)
	return cliResult{code, out.String(), errb.String()}
}

var artifactID = regexp.MustCompile(`art_[0-9a-f]{24}`)

func TestCLIGolden(t *testing.T) {
	cfg := "--config=testdata/cli.hcl"
	t.Cleanup(func() { os.RemoveAll("testdata/.cache") })
	tests := []struct {
		name  string
		stdin string
		args  []string
		code  int
	}{
		{"tools", "", []string{"tools", cfg}, 0},
		{"tools_json", "", []string{"tools", "--json", cfg}, 0},
		{"tools_openai", "", []string{"tools", "--format=openai", cfg}, 0},
		{"tools_anthropic", "", []string{"tools", "--format=anthropic", cfg}, 0},
		{"tools_mcp", "", []string{"tools", "--format=mcp", cfg}, 0},
		{"tools_bad_format", "", []string{"tools", "--format=gemini", cfg}, 2},
		{"call", "", []string{"call", cfg, "echo", `{"text":"hello"}`}, 0},
		{"call_stdin", `{"text":"from stdin"}`, []string{"call", cfg, "echo", "-"}, 0},
		{"call_file", "", []string{"call", cfg, "echo", "@testdata/args.json"}, 0},
		{"call_json", "", []string{"call", cfg, "--json", "echo", `{"text":"hi"}`}, 0},
		{"call_missing_field", "", []string{"call", cfg, "echo", `{}`}, 2},
		{"call_wrong_type", "", []string{"call", cfg, "echo", `{"text":5}`}, 2},
		{"call_extra_field", "", []string{"call", cfg, "echo", `{"text":"a","loud":true}`}, 2},
		{"call_malformed", "", []string{"call", cfg, "echo", `{"text":`}, 2},
		{"call_not_object", "", []string{"call", cfg, "echo", `["text"]`}, 2},
		{"call_unknown", "", []string{"call", cfg, "ecko", `{}`}, 2},
		{"call_wire_name", "", []string{"call", cfg, "--yes", "danger_zone"}, 0},
		{"call_needs_approval", "", []string{"call", cfg, "danger.zone", "-"}, 1},
		{"call_approved", "", []string{"call", cfg, "--yes", "danger.zone"}, 0},
		{"call_needs_input", "", []string{"call", cfg, "ask"}, 3},
		{"call_answered", "", []string{"call", cfg, "ask", "--answer", "color=blue"}, 0},
		{"call_truncated", "", []string{"call", cfg, "big"}, 0},
		{"validate", "", []string{"validate", cfg}, 0},
		{"validate_errors", "", []string{"validate", "--config=../../plugin/config/testdata/errors/sources.hcl"}, 2},
		{"validate_missing", "", []string{"validate", "--config=testdata/nope.hcl"}, 2},
		{"unknown_command", "", []string{"frobnicate"}, 2},
		{"call_no_arguments", "", []string{"call", cfg}, 2},
		{"version_flag", "", []string{"--version"}, 0},
		{"call_disabled", "", []string{"call", cfg, "retired", `{"text":"hi"}`}, 2},
		{"call_tool_help", "", []string{"call", cfg, "echo", "--help"}, 0},
		{"call_unknown_tool_help", "", []string{"call", cfg, "ecko", "--help"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, tt.stdin, tt.args...)
			if r.code != tt.code {
				t.Errorf("exit code = %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, r.stdout, r.stderr)
			}
			got := "$ host " + strings.Join(tt.args, " ") + "\n--- stdout\n" + r.stdout + "--- stderr\n" + r.stderr
			got = artifactID.ReplaceAllString(got, "art_ID")
			got = regexp.MustCompile(`call_[0-9a-f]{16}`).ReplaceAllString(got, "call_ID")
			got = regexp.MustCompile(`"durationNs": \d+`).ReplaceAllString(got, `"durationNs": 0`)
			checkGolden(t, tt.name, got)
		})
	}
}

// checkGolden compares got with testdata/golden/name.txt, or writes it
// there under -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden := filepath.Join("testdata", "golden", name+".txt")
	if *update {
		os.MkdirAll(filepath.Dir(golden), 0o755)
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("output differs from %s (-want +got):\n%s", golden, diff)
	}
}

// The ID printed for a truncated result fetches the whole output.
// TestCLIValidateUnknownImport: a module importing a host function
// toolhost does not provide is refused by validate, at its wasm block,
// naming the import (it used to load, and fail at its first call). Not a
// golden file: the message holds the module's absolute path.
func TestCLIValidateUnknownImport(t *testing.T) {
	r := runCLI(t, "", "validate", "--config=testdata/unknown_import.hcl")
	if r.code != 2 {
		t.Fatalf("exit code %d, want 2\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"Cannot load tool nope", "line 6, column 3", "   6:   wasm {", "extism:host/user.nope", "does not provide"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr does not hold %q:\n%s", want, r.stderr)
		}
	}
}

func TestCLIArtifactRoundTrip(t *testing.T) {
	t.Cleanup(func() { os.RemoveAll("testdata/.cache") })
	r := runCLI(t, "", "call", "--config=testdata/cli.hcl", "big")
	id := artifactID.FindString(r.stderr)
	if id == "" {
		t.Fatalf("no artifact ID in stderr: %q", r.stderr)
	}
	if !strings.Contains(r.stdout, "[... truncated ") {
		t.Errorf("stdout not truncated: %q", r.stdout)
	}
	a := runCLI(t, "", "artifact", "--config=testdata/cli.hcl", id)
	if a.code != 0 {
		t.Fatalf("artifact: exit %d: %s", a.code, a.stderr)
	}
	if want := strings.Repeat("line "+strings.Repeat("x", 20)+"\n", 200); a.stdout != want {
		t.Errorf("artifact is %d bytes, want the full %d", len(a.stdout), len(want))
	}
	bad := runCLI(t, "", "artifact", "--config=testdata/cli.hcl", "../../etc/passwd")
	if bad.code == 0 || !strings.Contains(bad.stderr, "not an artifact ID") {
		t.Errorf("path-like artifact ID: exit %d, stderr %q", bad.code, bad.stderr)
	}
}

// fakeTTY is a terminal whose user types answer.
type fakeTTY struct {
	io.Reader
	prompt bytes.Buffer
}

func (f *fakeTTY) Write(p []byte) (int, error) { return f.prompt.Write(p) }
func (f *fakeTTY) Close() error                { return nil }

// A privileged call asks on the terminal and obeys the answer.
func TestCLIApprovalPrompt(t *testing.T) {
	t.Cleanup(func() { os.RemoveAll("testdata/.cache") })
	for _, tt := range []struct {
		answer string
		code   int
		out    string
	}{
		{"y\n", 0, "done\n"},
		{"yes\n", 0, "done\n"},
		{"n\n", 1, ""},
		{"\n", 1, ""},
	} {
		var out, errb bytes.Buffer
		tty := &fakeTTY{Reader: strings.NewReader(tt.answer)}
		a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, goTools: testTools(t),
			openTTY: func() (io.ReadWriteCloser, error) { return tty, nil }}
		code := a.run(context.Background(), []string{"call", "--config=testdata/cli.hcl", "danger.zone", `{"why":"test"}`})
		if code != tt.code || out.String() != tt.out {
			t.Errorf("answer %q: exit %d, stdout %q, stderr %q", tt.answer, code, out.String(), errb.String())
		}
		if !strings.Contains(tty.prompt.String(), `Tool "danger.zone" (privileged) wants to run with arguments:`) ||
			!strings.Contains(tty.prompt.String(), `{"why":"test"}`) {
			t.Errorf("prompt = %q", tty.prompt.String())
		}
		if tt.code != 0 && !strings.Contains(errb.String(), "APPROVAL_DENIED") {
			t.Errorf("answer %q: stderr %q, want APPROVAL_DENIED", tt.answer, errb.String())
		}
	}
}

// host doctor reports what is in force, for people and as JSON.
func TestCLIDoctor(t *testing.T) {
	r := runCLI(t, "", "doctor")
	if r.code != 0 || !strings.Contains(r.stdout, "subprocess tier:") || !strings.Contains(r.stdout, "seccomp filter") {
		t.Fatalf("doctor: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	j := runCLI(t, "", "doctor", "--json")
	var v struct {
		Version    string `json:"version"`
		Subprocess struct {
			OS        string
			Supported bool
		} `json:"subprocess"`
	}
	if err := json.Unmarshal([]byte(j.stdout), &v); err != nil || v.Version == "" || v.Subprocess.OS == "" {
		t.Fatalf("doctor --json: %v\n%s", err, j.stdout)
	}
}
