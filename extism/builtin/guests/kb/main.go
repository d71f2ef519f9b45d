//go:build wasip1

// Command kb is toolhost's built-in knowledge-base plugin: kb.learn lists
// and loads the "subjects" (Markdown files) of a directory the operator
// mounts read-only (docs/tools.md). Subjects whose name has an element
// starting with a dot, and those the operator disables, stay hidden.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/toolhost/toolhost/extism/builtin/internal/hostcfg"
	"github.com/toolhost/toolhost/extism/builtin/internal/match"
	"github.com/toolhost/toolhost/extism/builtin/internal/mounts"
	"github.com/toolhost/toolhost/shared/guest"
)

func main() {}

func init() {
	guest.Register(guest.Tool{
		Name:  "kb.learn",
		Title: "Learn from the knowledge base",
		Description: "List the subjects of the knowledge base (call without arguments), or load subjects by name or glob " +
			"(\"go/testing\", \"deploy*\", [\"a\", \"b\"]) to read their Markdown.",
		InputSchema: []byte(schema),
		ReadOnly:    true,
		Handler:     learn,
		Args:        learnIn{},
	})
}

const schema = `{
  "type": "object",
  "properties": {
    "subjects": {
      "description": "Subjects to load: a name or glob, or a list of them. Omit to list the subjects.",
      "oneOf": [
        {"type": "string", "minLength": 1},
        {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1, "maxItems": 50}
      ]
    }
  },
  "additionalProperties": false
}`

const (
	codeInvalid  = "INVALID_REQUEST"
	codeNotFound = "FILE_NOT_FOUND"
	// defaultMaxSubject bounds one subject file (config max_file_size).
	defaultMaxSubject = 1 << 20
)

type learnIn struct {
	Subjects json.RawMessage `json:"subjects"`
}

type subject struct {
	name string // path without .md, relative to the knowledge base
	abs  string
}

func learn(c *guest.Call) (*guest.Result, error) {
	var in learnIn
	if err := c.Bind(&in); err != nil {
		return guest.ErrorCode(codeInvalid, "invalid arguments: %v", err), nil
	}
	var patterns []string
	if len(in.Subjects) > 0 && string(in.Subjects) != "null" {
		var one string
		if err := json.Unmarshal(in.Subjects, &one); err == nil {
			patterns = []string{one}
		} else if err := json.Unmarshal(in.Subjects, &patterns); err != nil {
			return guest.ErrorCode(codeInvalid, "subjects must be a string or a list of strings"), nil
		}
	}
	root, r := baseDir()
	if r != nil {
		return r, nil
	}
	disabled, r := disabledGlobs()
	if r != nil {
		return r, nil
	}
	all, err := subjects(root, disabled)
	if err != nil {
		return guest.ErrorCode(mounts.FromOS("the knowledge base", err).Code, "cannot read the knowledge base: %v", err), nil
	}
	if len(patterns) == 0 {
		return guest.Text(listing(all)), nil
	}
	return load(all, patterns), nil
}

// baseDir is the knowledge base: config dir, or the first mount.
func baseDir() (string, *guest.Result) {
	ms := mounts.Discover()
	if d, ok := hostcfg.Get("dir"); ok && d != "" {
		p, err := ms.Resolve(d)
		if err != nil {
			return "", guest.ErrorCode(err.Code, "the operator's config dir = %q: %s", d, err.Msg)
		}
		return p.Abs, nil
	}
	if ms.Empty() {
		return "", guest.ErrorCode("PERMISSION_DENIED", "no knowledge base is mounted: the operator mounts one read-only with a mount block")
	}
	return ms.Paths()[0], nil
}

// disabledGlobs reads config disabled: subject names or globs, separated by
// commas.
func disabledGlobs() ([]*match.Glob, *guest.Result) {
	v, _ := hostcfg.Get("disabled")
	var out []*match.Glob
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		g, err := match.Compile(strings.TrimSuffix(s, ".md"))
		if err != nil {
			return nil, guest.Errorf("the operator's config disabled: %v", err)
		}
		out = append(out, g)
	}
	return out, nil
}

// subjects walks the knowledge base for visible .md files, sorted by name.
// Symbolic links are not followed; names that are not UTF-8 are skipped.
func subjects(root string, disabled []*match.Glob) ([]subject, error) {
	var out []subject
	var walk func(dir, rel string) error
	walk = func(dir, rel string) error {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, de := range entries {
			name := de.Name()
			if strings.HasPrefix(name, ".") || !utf8.ValidString(name) {
				continue
			}
			r := path.Join(rel, name)
			switch t := de.Type(); {
			case t.IsDir():
				if err := walk(path.Join(dir, name), r); err != nil {
					return err
				}
			case t.IsRegular() && strings.HasSuffix(name, ".md"):
				s := subject{name: strings.TrimSuffix(r, ".md"), abs: path.Join(dir, name)}
				if !slices.ContainsFunc(disabled, func(g *match.Glob) bool { return g.Match(s.name) }) {
					out = append(out, s)
				}
			}
		}
		return nil
	}
	err := walk(root, "")
	slices.SortFunc(out, func(a, b subject) int { return strings.Compare(a.name, b.name) })
	return out, err
}

// listing names every subject with its first heading (or line).
func listing(all []subject) string {
	if len(all) == 0 {
		return "The knowledge base has no subjects."
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d subjects; load them with {\"subjects\": [\"name\", \"glob*\"]}:\n", len(all))
	for _, s := range all {
		sb.WriteString("- " + s.name)
		if h := summary(s.abs); h != "" {
			sb.WriteString(" — " + h)
		}
		sb.WriteString("\n")
	}
	return strings.TrimSuffix(sb.String(), "\n")
}

// summary is the first non-empty line of a subject, without heading marks.
func summary(abs string) string {
	f, err := os.Open(abs)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 512)
	n, _ := f.Read(buf)
	head := bytes.TrimPrefix(buf[:n], []byte("\xef\xbb\xbf"))
	if bytes.IndexByte(head, 0) >= 0 {
		return "" // binary
	}
	for _, line := range strings.Split(string(head), "\n") {
		line = strings.TrimSpace(strings.TrimLeft(line, "#"))
		if line != "" && utf8.ValidString(line) {
			if len(line) > 100 {
				line = line[:100] + "…"
			}
			return line
		}
	}
	return ""
}

// load reads the subjects the patterns match, each once, in name order.
func load(all []subject, patterns []string) *guest.Result {
	var globs []*match.Glob
	for _, p := range patterns {
		if strings.IndexByte(p, 0) >= 0 || !utf8.ValidString(p) || len(p) > 256 {
			return guest.ErrorCode(codeInvalid, "subject pattern %q is not a valid name", p)
		}
		if strings.HasPrefix(p, "/") || slices.Contains(strings.Split(p, "/"), "..") {
			return guest.ErrorCode(codeInvalid, "subject pattern %q: subjects are names like \"go/testing\", not paths", p)
		}
		g, err := match.Compile(strings.TrimSuffix(p, ".md"))
		if err != nil {
			return guest.ErrorCode(codeInvalid, "subject pattern %q: %v", p, err)
		}
		globs = append(globs, g)
	}
	max := int64(defaultMaxSubject)
	if v, ok := hostcfg.Get("max_file_size"); ok && v != "" {
		n, err := mounts.ParseSize(v)
		if err != nil {
			return guest.Errorf("the operator's config max_file_size: %v", err)
		}
		max = n
	}
	var parts, unmatched []string
	seen := map[string]bool{}
	for i, g := range globs {
		found := false
		for _, s := range all {
			if !g.Match(s.name) {
				continue
			}
			found = true
			if seen[s.name] {
				continue
			}
			seen[s.name] = true
			body, err := readSubject(s.abs, max)
			if err != nil {
				body = "(" + err.Error() + ")"
			}
			parts = append(parts, "# Subject: "+s.name+"\n\n"+strings.TrimSpace(body))
		}
		if !found {
			unmatched = append(unmatched, patterns[i])
		}
	}
	if len(parts) == 0 {
		names := make([]string, len(all))
		for i, s := range all {
			names[i] = s.name
		}
		return guest.ErrorCode(codeNotFound, "no subject matches %s; the subjects are: %s", strings.Join(quote(unmatched), ", "), strings.Join(names, ", "))
	}
	out := strings.Join(parts, "\n\n---\n\n")
	if len(unmatched) > 0 {
		out += "\n\n[no subject matches " + strings.Join(quote(unmatched), ", ") + "]"
	}
	return guest.Text(out)
}

func readSubject(abs string, max int64) (string, error) {
	fi, err := os.Stat(abs)
	if err != nil {
		return "", err
	}
	if fi.Size() > max {
		return "", fmt.Errorf("not loaded: %d bytes, over the %d-byte limit (max_file_size)", fi.Size(), max)
	}
	b, err := os.ReadFile(abs)
	if err != nil {
		return "", err
	}
	return string(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))), nil
}

func quote(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}
