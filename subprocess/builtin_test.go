package subprocess

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/plugin"
)

// builtinTool loads a built-in with a read-write workspace mount and the
// test binary's directory (for test processes started from the shell)
// mounted read-only.
func builtinTool(t *testing.T, a *Adapter, name string, mod func(*plugin.Spec)) (plugin.Tool, string) {
	t.Helper()
	ws := sandboxDir(t)
	exe, _ := os.Executable()
	var spec plugin.Spec
	for _, s := range BuiltinSpecs() {
		if s.Name == name {
			spec = s
		}
	}
	spec.Capabilities.Mounts = []plugin.Mount{
		{HostPath: ws, GuestPath: "/workspace"},
		{HostPath: filepath.Dir(exe), GuestPath: "/bin-test", ReadOnly: true},
	}
	if mod != nil {
		mod(&spec)
	}
	return load(t, a, &spec), ws
}

func shellCall(t *testing.T, tool plugin.Tool, args map[string]any) (*plugin.Result, error) {
	t.Helper()
	b, _ := json.Marshal(args)
	return call(t, tool, string(b), 30*time.Second)
}

func TestShellExec(t *testing.T) {
	a := newTestAdapter(t, nil)
	tool, ws := builtinTool(t, a, BuiltinShellExec, nil)
	if d := tool.Descriptor(); d.Name != "shell.exec" || !strings.Contains(string(d.InputSchema), `"maximum": 600`) {
		t.Fatalf("descriptor %+v", d)
	}
	exe, _ := os.Executable()
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"stdout", map[string]any{"command": "echo hello"}, "Exit code: 0\n--- stdout ---\nhello\n--- stderr ---\n"},
		{"stderr and exit code", map[string]any{"command": "echo oops >&2; exit 3"}, "Exit code: 3\n--- stdout ---\n--- stderr ---\noops\n"},
		{"stdin", map[string]any{"command": "tr a-z A-Z", "stdin": "abc"}, "Exit code: 0\n--- stdout ---\nABC\n--- stderr ---\n"},
		{"cwd default is the workspace", map[string]any{"command": "pwd"}, "Exit code: 0\n--- stdout ---\n" + ws + "\n--- stderr ---\n"},
		{"writes in the workspace", map[string]any{"command": "mkdir -p d && echo x > d/f && cat d/f", "cwd": "."}, "Exit code: 0\n--- stdout ---\nx\n--- stderr ---\n"},
		{"relative cwd", map[string]any{"command": "pwd", "cwd": "d"}, "Exit code: 0\n--- stdout ---\n" + ws + "/d\n--- stderr ---\n"},
		{"environment is not inherited", map[string]any{"command": "env | cut -d= -f1 | sort | tr '\\n' ' '"}, "Exit code: 0\n--- stdout ---\nHOME LANG PATH PWD TMPDIR \n--- stderr ---\n"},
	}
	t.Setenv("TOOLHOST_TEST_SECRET", "s3cret")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := shellCall(t, tool, tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.TextContent(); got != tc.want {
				t.Fatalf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}

	t.Run("refusals", func(t *testing.T) {
		for _, tc := range []struct {
			args map[string]any
			code plugin.Code
		}{
			{map[string]any{"command": "pwd", "cwd": "/etc"}, plugin.CodePermissionDenied},
			{map[string]any{"command": "pwd", "cwd": "../.."}, plugin.CodePermissionDenied},
			{map[string]any{"command": "pwd", "cwd": "nope"}, plugin.CodeFileNotFound},
			{map[string]any{"command": "pwd", "timeout": 601}, plugin.CodeInvalidRequest},
			{map[string]any{"command": "pwd", "timeout": 0}, plugin.CodeInvalidRequest},
			{map[string]any{"command": "  "}, plugin.CodeInvalidRequest},
		} {
			_, err := shellCall(t, tool, tc.args)
			wantCode(t, err, tc.code, "")
		}
	})

	t.Run("writes outside the mounts fail", func(t *testing.T) {
		if !a.hard.Landlock {
			t.Skip("no Landlock")
		}
		outside := filepath.Join(t.TempDir(), "f")
		res, err := shellCall(t, tool, map[string]any{"command": "echo x > " + outside})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(res.TextContent(), "Exit code: 2") || !strings.Contains(res.TextContent(), "Permission denied") {
			t.Fatalf("got %q", res.TextContent())
		}
		if _, err := os.Stat(outside); err == nil {
			t.Fatal("written outside the sandbox")
		}
	})

	t.Run("timeout kills the whole tree", func(t *testing.T) {
		mark := newMark(t)
		start := time.Now()
		_, err := shellCall(t, tool, map[string]any{"timeout": 1,
			"command": exe + " " + testPluginArg + " sleeper " + mark + " & " + exe + " " + testPluginArg + " sleeper " + mark})
		wantCode(t, err, plugin.CodeToolExecutionTimeout, "")
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("timeout after %s", d)
		}
		assertNoneLeft(t, mark, 2*time.Second)
	})

	t.Run("background children do not outlive the command", func(t *testing.T) {
		mark := newMark(t)
		res, err := shellCall(t, tool, map[string]any{
			"command": "(" + exe + " " + testPluginArg + " sleeper " + mark + " &) ; echo started"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.TextContent(), "started") {
			t.Fatalf("got %q", res.TextContent())
		}
		assertNoneLeft(t, mark, 2*time.Second)
	})

	t.Run("output is capped", func(t *testing.T) {
		capped, _ := builtinTool(t, a, BuiltinShellExec, func(s *plugin.Spec) { s.Limits.Output = 1 << 20 })
		res, err := shellCall(t, capped, map[string]any{"command": "head -c 3000000 /dev/zero | tr '\\0' a"})
		if err != nil {
			t.Fatal(err)
		}
		got := res.TextContent()
		if len(got) > 1<<20+200 || !strings.Contains(got, "[stdout capped at 1MiB: 1951424 more bytes dropped]") {
			t.Fatalf("len %d, tail %q", len(got), got[len(got)-100:])
		}
	})
}

func TestShellExecHostile(t *testing.T) {
	t.Run("fork bomb", func(t *testing.T) {
		a := newTestAdapter(t, func(c *Config) { c.MaxProcesses = 16 })
		if !a.Hardening().PIDsCgroup {
			// Without the kernel's cap, an exponential bomb on two cores
			// starves the watchdog for seconds (doctor lists it as
			// missing); TestHostileForkBomb checks the sampling alone.
			t.Skip("no pids cgroup: a shell fork bomb is bounded only by sampling")
		}
		tool, _ := builtinTool(t, a, BuiltinShellExec, nil)
		mark := newMark(t)
		_, err := shellCall(t, tool, map[string]any{"timeout": 20, "command": "b(){ b | b & }; b; sleep 10 # " + mark})
		wantCode(t, err, plugin.CodeLimitExceeded, "processes")
		assertNoneLeft(t, mark, 3*time.Second)
		res, err := shellCall(t, tool, map[string]any{"command": "echo ok"})
		if err != nil || !strings.Contains(res.TextContent(), "ok") {
			t.Fatalf("after the bomb: %v %v", res, err)
		}
	})
	t.Run("fills the disk", func(t *testing.T) {
		a := newTestAdapter(t, func(c *Config) { c.MaxFileSize = 2 << 20 })
		tool, ws := builtinTool(t, a, BuiltinShellExec, nil)
		res, err := shellCall(t, tool, map[string]any{"command": "dd if=/dev/zero of=big bs=1M count=50"})
		if err != nil {
			t.Fatal(err)
		}
		// dd is killed by SIGXFSZ: 128+25.
		if !strings.HasPrefix(res.TextContent(), "Exit code: 153") {
			t.Fatalf("got %q", res.TextContent())
		}
		st, err := os.Stat(filepath.Join(ws, "big"))
		if err != nil || st.Size() > 2<<20 {
			t.Fatalf("big: %v, %v", st, err)
		}
	})
}

func TestBashReadOnly(t *testing.T) {
	t.Parallel() // mostly waits (helper_test.go)
	a := newTestAdapter(t, nil)
	tool, ws := builtinTool(t, a, BuiltinBashReadOnly, nil)
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("alpha\nbeta\ngamma\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := shellCall(t, tool, map[string]any{"command": "cat notes.txt | grep -v beta | wc -l"})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.TextContent(); got != "Exit code: 0\n--- stdout ---\n2\n--- stderr ---\n" {
		t.Fatalf("got %q", got)
	}
	for _, cmd := range []string{"rm notes.txt", "cat notes.txt > copy", "ls; rm notes.txt", "echo $(rm notes.txt)", "find . -delete"} {
		_, err := shellCall(t, tool, map[string]any{"command": cmd})
		wantCode(t, err, plugin.CodePermissionDenied, "")
		if !strings.Contains(err.Error(), "nothing was run") {
			t.Errorf("%s: %v", cmd, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(ws, "notes.txt")); err != nil || len(b) != 17 {
		t.Fatal("notes.txt changed")
	}
	if _, err := os.Stat(filepath.Join(ws, "copy")); err == nil {
		t.Fatal("copy written")
	}
	// A file name that looks like an option never reaches a program
	// through a glob (cat would read "-n" as its option and number the
	// lines); it stays reachable by a path.
	if err := os.WriteFile(filepath.Join(ws, "-n"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for cmd, want := range map[string]string{"cat *": "alpha\nbeta\ngamma\n", "ls ./-n": "./-n\n", "echo '$HOME'": "$HOME\n",
		// Bash runs the words the check read (readOnlyLine): an empty
		// argument stays one, a quoted glob stays literal.
		`grep -c "" notes.txt`: "3\n", "cat note[s].txt": "alpha\nbeta\ngamma\n", `echo '*' "a  b"`: "* a  b\n"} {
		res, err := shellCall(t, tool, map[string]any{"command": cmd})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.TextContent(); got != "Exit code: 0\n--- stdout ---\n"+want+"--- stderr ---\n" {
			t.Errorf("%s: got %q", cmd, got)
		}
	}
}

func TestCheckReadOnly(t *testing.T) {
	allowed := []string{
		"ls -la", "cat a.txt", "grep -rn 'foo; bar' .", "find . -name '*.go' -type f", "wc -l *.go",
		"head -n 5 f", "tail -f=x f", "cat f | grep x | sort | head", "grep x f 2>/dev/null",
		"grep x f 2>&1 | head", "ls > /dev/null", "cat < input.txt", `grep "a|b" f`, `echo '$HOME'`,
		`find . \( -name a -o -name b \)`, "sort -n f", `ls "a{b,c}"`, `grep 'x{2}' f`,
		"sort --numeric-sort --unique f", "sort -rn -k2 f", "grep -o x f", "tree -a -L 2", "file -b f", "sort -- f",
	}
	for _, c := range allowed {
		if err := checkReadOnly(c); err != nil {
			t.Errorf("%q refused: %v", c, err)
		}
	}
	refused := map[string]string{
		"rm -rf /":              `the program "rm"`,
		"ls; rm x":              "';'",
		"ls && rm x":            "'&&'",
		"ls || rm x":            "'||'",
		"ls &":                  "'&'",
		"cat f | sh":            `the program "sh"`,
		"cat f | /bin/cat":      `the program "/bin/cat"`,
		"echo $(rm x)":          "command substitution",
		"echo `rm x`":           "command substitution",
		`echo "$(rm x)"`:        "command substitution",
		"cat f > out":           "redirection that writes",
		"cat f >> out":          "redirection that writes",
		"cat f 2> err":          "redirection that writes",
		"cat f &> out":          "'&'",
		"cat <(ls)":             "process substitution",
		"cat <<EOF":             "heredocs",
		"(ls)":                  "subshells",
		"{ ls; }":               "command groups",
		"find . -exec rm x \\;": "-exec",
		"find . -delete":        "-delete",
		"sort -o out f":         "-o",
		"sort --output=out f":   "--output",
		// GNU long-option abbreviations and short-option clusters
		"sort --out=F f":             "--output",
		"sort --outp F f":            "--output",
		"sort --compress=sh -S 1K f": "--compress-program",
		"sort -uo F f":               "-o",
		"sort -uoF f":                "-o",
		"tree -ao F":                 "-o",
		"file -bC":                   "-C",
		"file --comp":                "--compile",
		"tree -R":                    "-R",
		// expansions happen after the check: no '$', no braces
		"find . ${X:--exec} sh -c id \\;": "expansions",
		"find . $'-exec' sh -c id \\;":    "expansions",
		`sort $"-o" out in`:               "expansions",
		`echo "$HOME"`:                    "expansions",
		"echo ${HOME}":                    "expansions",
		`sort ""{-o,out} in`:              "brace expansion",
		"ls a{b,c}":                       "brace expansion",
		"LD_PRELOAD=x.so cat f":           "environment assignment",
		"ls\nrm x":                        "newline",
		"cat 'unterminated":               "unterminated quote",
		"":                                "empty command",
		"ls |":                            "empty pipeline stage",
		"xargs rm":                        `the program "xargs"`,
		"env rm x":                        `the program "env"`,
	}
	for c, want := range refused {
		err := checkReadOnly(c)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want it to mention %s", c, err, want)
		}
	}
}

var _ = strconv.Itoa

// TestBuiltinTier: a spec that names no tier gets the built-in's, so
// shell.exec needs approval whatever the configuration forgot to say, and
// its tier cannot be lowered.
func TestBuiltinTier(t *testing.T) {
	ws := sandboxDir(t)
	grants := plugin.Capabilities{Subprocess: true, Mounts: []plugin.Mount{{HostPath: ws, GuestPath: "/workspace"}}}
	h, err := plugin.NewHost(plugin.Options{Grants: grants, Adapters: []plugin.Adapter{newTestAdapter(t, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	spec := func(name string, tier plugin.Tier) plugin.Spec {
		return plugin.Spec{Name: name, Tier: tier, Source: plugin.Source{Kind: Kind, Builtin: name}, Capabilities: grants}
	}
	for _, s := range []plugin.Spec{spec(BuiltinShellExec, 0), spec(BuiltinBashReadOnly, 0)} {
		if err := h.Load(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
	if ti, _ := h.Tool(BuiltinShellExec); ti.Tier != plugin.TierPrivileged {
		t.Errorf("shell.exec tier %s, want privileged", ti.Tier)
	}
	if ti, _ := h.Tool(BuiltinBashReadOnly); ti.Tier != plugin.TierReadOnly || !ti.Descriptor.Annotations.ReadOnlyHint {
		t.Errorf("bash.read-only tier %s, annotations %+v", ti.Tier, ti.Descriptor.Annotations)
	}
	_, err = h.Invoke(t.Context(), plugin.Call{Name: BuiltinShellExec, Arguments: json.RawMessage(`{"command":"touch ran"}`)})
	if plugin.CodeOf(err) != plugin.CodeApprovalRequired {
		t.Fatalf("shell.exec without an approver: err = %v, want APPROVAL_REQUIRED", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Fatal("the command ran without approval")
	}

	for _, tier := range []plugin.Tier{plugin.TierReadOnly, plugin.TierSideEffecting} {
		s := spec(BuiltinShellExec, tier)
		s.Name = "shell-" + tier.String()
		err := h.Load(t.Context(), s)
		if plugin.CodeOf(err) != plugin.CodeCapabilityDenied || !strings.Contains(err.Error(), "cannot be lowered") {
			t.Errorf("shell.exec at tier %s: err = %v, want CAPABILITY_DENIED, cannot be lowered", tier, err)
		}
	}
	s := spec(BuiltinBashReadOnly, plugin.TierSideEffecting) // raising is the operator's right
	s.Name = "ro-raised"
	if err := h.Load(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	if ti, _ := h.Tool("ro-raised"); ti.Tier != plugin.TierSideEffecting {
		t.Errorf("raised tier %s", ti.Tier)
	}
}

// TestReadOnlyLine: bash gets the words the check read, each quoted but
// for unquoted glob characters, with the allowed redirections.
func TestReadOnlyLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`ls -la`, `'ls' '-la'`},
		{`cat *.go | wc -l`, `'cat' *'.go' | 'wc' '-l'`},
		{`grep -rn 'a b' "c d" e\ f`, `'grep' '-rn' 'a b' 'c d' 'e f'`},
		{`grep "it's"`, `'grep' 'it'\''s'`},
		{`grep "a\"b" 'x*'`, `'grep' 'a"b' 'x*'`},
		{`ls src/[a-c]?.txt`, `'ls' 'src/'['a-c']?'.txt'`},
		{`cat < in.txt 2>/dev/null`, `'cat' < 'in.txt' 2>/dev/null`},
		{`find . -name x 2>&1 | head >/dev/null`, `'find' '.' '-name' 'x' 2>&1 | 'head' >/dev/null`},
		{`echo ~ '#' a#b`, `'echo' '~' '#' 'a#b'`},
		{`echo !x`, `'echo' '!x'`},
		{`echo "a\$b" "c\` + "`" + `d" "e\-f" "g\` + "\n" + `h"`, `'echo' 'a$b' 'c` + "`" + `d' 'e\-f' 'gh'`},
	} {
		got, err := readOnlyLine(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}
