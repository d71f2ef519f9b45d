package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/plugin/config"
	"github.com/toolhost/toolhost/plugin/declared"
)

// Prompts, resources and templates decode into what the MCP server
// serves: arguments, every kind of message, files read and typed, paths
// made absolute. (Each mistake is in testdata/errors/declared.hcl.)
func TestDeclared(t *testing.T) {
	cfg, diags := config.Load("testdata/declared/declared.hcl")
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if len(cfg.Prompts) != 1 || len(cfg.Resources) != 3 || len(cfg.ResourceTemplates) != 1 {
		t.Fatalf("got %d prompts, %d resources, %d templates", len(cfg.Prompts), len(cfg.Resources), len(cfg.ResourceTemplates))
	}
	p := cfg.Prompts[0]
	if p.Title != "Code review" || len(p.Arguments) != 2 || !p.Arguments[0].Required || p.Arguments[1].Required ||
		strings.Join(p.Arguments[1].Completions, ",") != "go,google,uber" {
		t.Errorf("prompt: %+v", p)
	}
	args := map[string]string{"diff": "D{{style}}", "style": "go"}
	if got, want := p.Messages[0].Text.Expand(args), "Review D{{style}} against the go style. Literal: {{ not a placeholder }}"; got != want {
		t.Errorf("text expands to %q, want %q", got, want)
	}
	if img := p.Messages[1].Image; p.Messages[1].Role != declared.RoleAssistant || img == nil || img.MIMEType != "image/png" || len(img.Data) != 69 {
		t.Errorf("image message: %+v", p.Messages[1])
	}
	if r := p.Messages[2].Resource; r == nil || r.URI.Expand(args) != "notes://go" || r.Text.Expand(args) != "Style go." || r.MIMEType != "text/plain" {
		t.Errorf("embedded text resource: %+v", r)
	}
	// A file's text is taken as it is, placeholders and all.
	if r := p.Messages[3].Resource; r == nil || r.Text == nil || !strings.Contains(r.Text.Expand(args), "{{not_a_placeholder}}") || !strings.HasPrefix(r.MIMEType, "text/plain") {
		t.Errorf("embedded file resource: %+v", r)
	}
	if r := p.Messages[4].Resource; r == nil || r.Text != nil || len(r.Blob) != 256 {
		t.Errorf("embedded binary resource: %+v", r)
	}

	readme, notes, data := cfg.Resources[0], cfg.Resources[1], cfg.Resources[2]
	if readme.Name != "readme" || readme.MIMEType != "text/plain" || readme.Changes() {
		t.Errorf("text resource: %+v", readme)
	}
	dir, _ := filepath.Abs("testdata/declared")
	if notes.Name != "docs://notes" || notes.Path != filepath.Join(dir, "notes.txt") || notes.Root != dir || !notes.Changes() || !strings.HasPrefix(notes.MIMEType, "text/plain") {
		t.Errorf("path resource: %+v", notes)
	}
	if b, err := data.Read(); err != nil || len(b) != 256 || data.MIMEType != "application/octet-stream" {
		t.Errorf("binary resource: %v, %d bytes, %q", err, len(b), data.MIMEType)
	}

	tm := cfg.ResourceTemplates[0]
	vars, ok := tm.URITemplate.Match("docs://issue/42/title")
	if !ok || tm.Text.Expand(vars) != "Issue 42, title." || tm.MIMEType != "text/plain" || len(tm.Completions["part"]) != 2 {
		t.Errorf("template: %v %v %+v", vars, ok, tm)
	}
}

// A file a declaration names must be under the configuration's directory
// and at most declared.MaxFileBytes: a symlink out, a "..", an absolute
// path elsewhere and a huge file are each refused at the path, when the
// configuration loads.
func TestDeclaredHostilePaths(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(secret, filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	huge, err := os.Create(filepath.Join(dir, "huge.bin"))
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: the size is what is checked, before anything is read.
	if err := huge.Truncate(declared.MaxFileBytes + 1); err != nil {
		t.Fatal(err)
	}
	huge.Close()
	for _, tc := range []struct{ name, path, summary string }{
		{"symlink", "./link.txt", "Path outside the configuration directory"},
		{"dotdot", "../" + filepath.Base(outside) + "/secret.txt", "Path outside the configuration directory"},
		{"absolute", secret, "Path outside the configuration directory"},
		{"huge", "./huge.bin", "File too large"},
		{"directory", ".", "Cannot read file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, block := range []string{
				`resource "test://r" { path = %q }`,
				"prompt \"p\" {\n  message {\n    role = \"user\"\n    resource {\n      uri = \"test://r\"\n      path = %q\n    }\n  }\n}\n",
			} {
				src := strings.Replace(block, "%q", `"`+tc.path+`"`, 1)
				name := filepath.Join(dir, "config.hcl")
				_, diags := config.NewParser().Parse([]byte(src), name)
				if len(diags) != 1 || diags[0].Summary != tc.summary || diags[0].Subject == nil {
					t.Fatalf("%s: got %v, want one %q", src, diags, tc.summary)
				}
				if got := string(src[diags[0].Subject.Start.Byte:diags[0].Subject.End.Byte]); got != `"`+tc.path+`"` {
					t.Errorf("the diagnostic points at %q, not the path", got)
				}
			}
		})
	}
}
