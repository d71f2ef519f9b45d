//go:build wasip1

package main

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolhost/toolhost/extism/builtin/internal/match"
	"github.com/toolhost/toolhost/extism/builtin/internal/mounts"
	"github.com/toolhost/toolhost/shared/guest"
)

const listSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Directory to list, relative to the workspace or absolute inside a mounted directory. Default: the workspace."},
    "depth": {"type": "integer", "minimum": 1, "maximum": 20, "description": "How many levels to descend. Default 1 (the directory's own entries)."},
    "glob": {"type": "string", "description": "Only show entries matching this glob (\"*.go\", \"docs/**/*.md\", \"*.{yml,yaml}\"); a pattern without / matches the file name."}
  },
  "additionalProperties": false
}`

type listIn struct {
	Path  string `json:"path"`
	Depth int    `json:"depth"`
	Glob  string `json:"glob"`
}

func listTool() guest.Tool {
	return guest.Tool{
		Name:  "filesystem.list",
		Title: "List a directory",
		Description: "List the entries of a directory: type (dir, file, link), size in bytes, modification time (UTC) and path. " +
			"Optionally recursive (depth) and filtered by a glob.",
		InputSchema: []byte(listSchema),
		ReadOnly:    true,
		Handler:     list,
		Args:        listIn{},
	}
}

// displayName quotes a name that is not valid UTF-8, so that the listing
// stays readable and says why such a file cannot be named in a call.
func displayName(p string) (string, bool) {
	if utf8.ValidString(p) {
		return p, true
	}
	q := fmt.Sprintf("%q", p)
	return q[1 : len(q)-1], false
}

func list(c *guest.Call) (*guest.Result, error) {
	var in listIn
	if r := decode(c, &in); r != nil {
		return r, nil
	}
	if in.Depth == 0 {
		in.Depth = 1
	}
	if in.Depth < 0 || in.Depth > 20 {
		return invalid("depth must be between 1 and 20"), nil
	}
	var g *match.Glob
	if in.Glob != "" {
		var err error
		if g, err = match.Compile(in.Glob); err != nil {
			return invalid("%v", err), nil
		}
	}
	maxEntries, r := configInt("max_entries", defaultMaxEntries)
	if r != nil {
		return r, nil
	}
	ms := mounts.Discover()
	p, e := ms.Resolve(in.Path)
	if e != nil {
		return fail(e), nil
	}
	fi, err := os.Lstat(p.Abs)
	if err != nil {
		return fail(mounts.FromOS(p.Display, err)), nil
	}
	var sb strings.Builder
	n := 0
	if !fi.IsDir() {
		writeEntry(&sb, ms.Display(p.Abs), p.Abs, fi)
		return guest.Text(sb.String()), nil
	}
	if _, err := os.ReadDir(p.Abs); err != nil {
		return fail(mounts.FromOS(p.Display, err)), nil
	}
	stopped := false
	var walk func(dir, rel string, depth int)
	walk = func(dir, rel string, depth int) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			fmt.Fprintf(&sb, "error %s: %v\n", ms.Display(dir), mounts.FromOS(ms.Display(dir), err).Msg)
			return
		}
		for _, de := range entries {
			if stopped {
				return
			}
			abs := path.Join(dir, de.Name())
			r := path.Join(rel, de.Name())
			if g == nil || g.Match(r) {
				if n == maxEntries {
					stopped = true
					return
				}
				if info, err := de.Info(); err == nil {
					writeEntry(&sb, ms.Display(abs), abs, info)
				} else {
					writeUnknown(&sb, ms.Display(abs), de)
				}
				n++
			}
			if de.IsDir() && depth > 1 && de.Name() != ".git" {
				walk(abs, r, depth-1)
			}
		}
	}
	walk(p.Abs, "", in.Depth)
	switch {
	case stopped:
		fmt.Fprintf(&sb, "[listing stopped at %d entries; narrow it with a smaller depth or a glob]", maxEntries)
	case n == 0 && g != nil:
		fmt.Fprintf(&sb, "[no entries match %q]", in.Glob)
	case n == 0:
		sb.WriteString("[empty directory]")
	}
	return guest.Text(strings.TrimSuffix(sb.String(), "\n")), nil
}

// writeEntry writes one listing line: type, size, mtime, path.
func writeEntry(sb *strings.Builder, shown, abs string, fi fs.FileInfo) {
	name, ok := displayName(shown)
	kind, size := "file", fmt.Sprint(fi.Size())
	switch {
	case fi.IsDir():
		kind, size, name = "dir", "-", name+"/"
	case fi.Mode()&fs.ModeSymlink != 0:
		kind = "link"
		if t, err := os.Readlink(abs); err == nil {
			name += " -> " + t
		}
	case !fi.Mode().IsRegular():
		kind = "other"
	}
	if !ok {
		name += "  (name is not valid UTF-8; it cannot be passed to a tool)"
	}
	fmt.Fprintf(sb, "%-4s %10s  %s  %s\n", kind, size, fi.ModTime().UTC().Format(time.DateTime), name)
}

// writeUnknown writes the line of an entry that cannot be examined (gone
// since the listing, or a name the filesystem refuses to look up).
func writeUnknown(sb *strings.Builder, shown string, de fs.DirEntry) {
	name, ok := displayName(shown)
	kind := "file"
	switch t := de.Type(); {
	case t.IsDir():
		kind, name = "dir", name+"/"
	case t&fs.ModeSymlink != 0:
		kind = "link"
	case !t.IsRegular():
		kind = "other"
	}
	if !ok {
		name += "  (name is not valid UTF-8; it cannot be passed to a tool)"
	}
	fmt.Fprintf(sb, "%-4s %10s  %19s  %s\n", kind, "?", "?", name)
}
