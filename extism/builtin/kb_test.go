package builtin_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolhost/toolhost/extism"
	"github.com/toolhost/toolhost/plugin"
)

func kbSpec(name, dir string, config map[string]string) plugin.Spec {
	return plugin.Spec{
		Name:   name,
		Tier:   plugin.TierReadOnly,
		Source: plugin.Source{Kind: extism.Kind, Builtin: "kb", Tool: "kb.learn", Config: config},
		Capabilities: plugin.Capabilities{Mounts: []plugin.Mount{
			{HostPath: dir, GuestPath: "/kb", ReadOnly: true},
		}},
	}
}

func TestKBLearn(t *testing.T) {
	root := t.TempDir()
	kb := filepath.Join(root, "kb")
	writeFiles(t, kb, map[string]string{
		"go/testing.md":      "# Testing in Go\n\nUse table tests.\n",
		"go/errors.md":       "\ufeff# Errors\n\nWrap with %w.\n",
		"deploy.md":          "# Deploying\n\nRun make deploy.\n",
		"deploy-staging.md":  "# Staging\n\nSame, on staging.\n",
		"internal/secret.md": "# Internal\n\nDisabled by the operator.\n",
		".hidden.md":         "# Hidden\n",
		".private/notes.md":  "# Private\n",
		"big.md":             string(make([]byte, 4096)),
		"notes.txt":          "not a subject",
	})
	writeFiles(t, root, map[string]string{"outside.md": "# Outside\n"})
	if err := os.Symlink(filepath.Join(root, "outside.md"), filepath.Join(kb, "link.md")); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]string{"disabled": "internal/*, nothing", "max_file_size": "1KiB"}
	h := newHost(t, kbSpec("kb.learn", kb, cfg), kbSpec("kb.empty", t.TempDir(), nil))
	probe := check{tool: "kb.learn", args: `{}`, want: []string{"go/testing"}}
	cases := []check{
		{name: "list", tool: "kb.learn", args: `{}`,
			want:    []string{"5 subjects; load them with", "- deploy — Deploying\n", "- deploy-staging — Staging\n", "- go/errors — Errors\n", "- go/testing — Testing in Go", "- big"},
			notWant: []string{"hidden", "Hidden", "private", "internal", "notes", "link", "Outside"}},
		{name: "one by name", tool: "kb.learn", args: `{"subjects":"go/testing"}`, want: []string{"# Subject: go/testing\n\n# Testing in Go\n\nUse table tests."}, notWant: []string{"Errors"}},
		{name: "base name", tool: "kb.learn", args: `{"subjects":"errors"}`, want: []string{"# Subject: go/errors\n\n# Errors"}, notWant: []string{"\ufeff"}},
		{name: "glob", tool: "kb.learn", args: `{"subjects":"deploy*"}`, want: []string{"# Subject: deploy\n", "---", "# Subject: deploy-staging\n"}},
		{name: "list of patterns, deduplicated", tool: "kb.learn", args: `{"subjects":["go/*","go/testing","nope"]}`,
			want: []string{"# Subject: go/errors", "# Subject: go/testing", `[no subject matches "nope"]`}},
		{name: "with extension", tool: "kb.learn", args: `{"subjects":"deploy.md"}`, want: []string{"# Subject: deploy\n"}},
		{name: "over the size limit", tool: "kb.learn", args: `{"subjects":"big"}`, want: []string{"over the 1024-byte limit"}},
		{name: "disabled stays hidden", tool: "kb.learn", args: `{"subjects":"internal/secret"}`, code: plugin.CodeFileNotFound, want: []string{"the subjects are: big, deploy"}},
		{name: "dot-prefixed stays hidden", tool: "kb.learn", args: `{"subjects":".hidden"}`, code: plugin.CodeFileNotFound},
		{name: "symlink not followed", tool: "kb.learn", args: `{"subjects":"link"}`, code: plugin.CodeFileNotFound},
		{name: "no match", tool: "kb.learn", args: `{"subjects":"rust*"}`, code: plugin.CodeFileNotFound},
		{name: "path climbing", tool: "kb.learn", args: `{"subjects":"../outside"}`, code: plugin.CodeInvalidRequest},
		{name: "absolute path", tool: "kb.learn", args: `{"subjects":"/etc/passwd"}`, code: plugin.CodeInvalidRequest},
		{name: "null byte", tool: "kb.learn", args: `{"subjects":"go\u0000"}`, code: plugin.CodeInvalidRequest},
		{name: "bad glob", tool: "kb.learn", args: `{"subjects":"[x"}`, code: plugin.CodeInvalidRequest},
		{name: "wrong type", tool: "kb.learn", args: `{"subjects":7}`, code: plugin.CodeInvalidRequest},
		{name: "empty list", tool: "kb.learn", args: `{"subjects":[]}`, code: plugin.CodeInvalidRequest},
		{name: "empty knowledge base", tool: "kb.empty", args: `{}`, want: []string{"no subjects"}},
	}
	runChecks(t, h, probe, cases)
}
