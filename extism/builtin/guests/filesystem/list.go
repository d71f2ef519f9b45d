//go:build wasip1

package main

import (
	"fmt"
	"os"
	"strconv"
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
	fi, err := ms.Lstat(p.Abs)
	if err != nil {
		return fail(mounts.FromOS(p.Display, err)), nil
	}
	if !fi.IsDir() {
		return guest.Text(string(appendEntry(nil, ms.Display(p.Abs), p.Abs, fi))), nil
	}
	// The listing is built with appends rather than fmt and time.Format:
	// in a wasm guest those cost more than the host's work for an entry.
	var dirBuf []byte
	out := make([]byte, 0, 4096) // a line is about 50 bytes
	n := 0
	stopped := false
	var batch mounts.Batch
	var walk func(dir, rel string, depth int) error
	walk = func(dir, rel string, depth int) error {
		entries, buf, err := ms.ReadDir(dir, dirBuf)
		dirBuf = buf
		if err != nil {
			return err
		}
		mounts.SortEntries(entries)
		infos := statAll(&batch, dir, rel, entries, g, maxEntries-n)
		shown := 0 // entries listed so far, the index in infos
		for _, de := range entries {
			if stopped {
				return nil
			}
			abs := joinPath(dir, de.Name)
			r := joinPath(rel, de.Name)
			if g == nil || g.Match(r) {
				if n == maxEntries {
					stopped = true
					return nil
				}
				var info mounts.Info
				var err error
				if shown < len(infos) {
					info, err = infos[shown].Info, infos[shown].Err
				} else {
					info, err = ms.Lstat(abs)
				}
				shown++
				if err == nil {
					out = appendEntry(out, ms.Display(abs), abs, info)
				} else {
					out = appendUnknown(out, ms.Display(abs), de)
				}
				n++
			}
			if de.IsDir() && depth > 1 && de.Name != ".git" {
				if err := walk(abs, r, depth-1); err != nil {
					out = fmt.Appendf(out, "error %s: %v\n", ms.Display(abs), mounts.FromOS(ms.Display(abs), err).Msg)
				}
			}
		}
		return nil
	}
	if err := walk(p.Abs, "", in.Depth); err != nil {
		return fail(mounts.FromOS(p.Display, err)), nil
	}
	switch {
	case stopped:
		out = fmt.Appendf(out, "[listing stopped at %d entries; narrow it with a smaller depth or a glob]", maxEntries)
	case n == 0 && g != nil:
		out = fmt.Appendf(out, "[no entries match %q]", in.Glob)
	case n == 0:
		out = append(out, "[empty directory]"...)
	}
	return guest.Text(strings.TrimSuffix(string(out), "\n")), nil
}

// statAll examines, in one host call, the entries of dir (at rel) that a
// listing shows, at most max of them, in order; what it returns is shorter
// (empty) when the host does not examine files in batches, and the
// listing examines the rest itself.
func statAll(b *mounts.Batch, dir, rel string, entries []mounts.Entry, g *match.Glob, max int) []mounts.Read {
	var names []string
	for _, de := range entries {
		if len(names) == min(max, mounts.BatchMaxQueued) {
			break
		}
		if g == nil || g.Match(joinPath(rel, de.Name)) {
			names = append(names, de.Name)
		}
	}
	if len(names) < 2 || b.SubmitStat(dir, names) != nil {
		return nil // one entry costs a WASI call either way
	}
	out := make([]mounts.Read, 0, len(names))
	for range names {
		rd, ok := b.Next(true)
		if !ok {
			break
		}
		out = append(out, rd)
	}
	return out
}

// joinPath joins a directory and an entry's name ("" is the search root).
func joinPath(dir, name string) string {
	switch {
	case dir == "":
		return name
	case strings.HasSuffix(dir, "/"):
		return dir + name
	}
	return dir + "/" + name
}

const notUTF8 = "  (name is not valid UTF-8; it cannot be passed to a tool)"

// appendEntry appends one listing line: type, size, mtime (UTC), path.
func appendEntry(b []byte, shown, abs string, fi mounts.Info) []byte {
	name, ok := displayName(shown)
	kind, size := "file", ""
	switch {
	case fi.IsDir():
		kind, size, name = "dir", "-", name+"/"
	case fi.IsSymlink():
		kind = "link"
		if t, err := os.Readlink(abs); err == nil {
			name += " -> " + t
		}
	case !fi.IsRegular():
		kind = "other"
	}
	if !ok {
		name += notUTF8
	}
	if size == "" {
		size = strconv.FormatInt(fi.Size, 10)
	}
	b = appendPadded(b, kind, -4)
	b = append(b, ' ')
	b = appendPadded(b, size, 10)
	b = append(b, "  "...)
	b = appendDateTime(b, time.Unix(0, fi.Mtime).UTC())
	b = append(b, "  "...)
	b = append(b, name...)
	return append(b, '\n')
}

// appendUnknown appends the line of an entry that cannot be examined (gone
// since the listing, or a name the filesystem refuses to look up).
func appendUnknown(b []byte, shown string, de mounts.Entry) []byte {
	name, ok := displayName(shown)
	kind := "other"
	switch {
	case de.IsDir():
		kind, name = "dir", name+"/"
	case de.IsSymlink():
		kind = "link"
	case de.IsRegular():
		kind = "file"
	}
	if !ok {
		name += notUTF8
	}
	b = appendPadded(b, kind, -4)
	b = append(b, ' ')
	b = appendPadded(b, "?", 10)
	b = append(b, "  "...)
	b = appendPadded(b, "?", 19)
	b = append(b, "  "...)
	b = append(b, name...)
	return append(b, '\n')
}

// appendPadded appends s padded with spaces to width runes: on the left
// for a positive width, on the right for a negative one (fmt's %10s and
// %-4s).
func appendPadded(b []byte, s string, width int) []byte {
	left := width > 0
	if width < 0 {
		width = -width
	}
	pad := width - utf8.RuneCountInString(s)
	if left {
		for ; pad > 0; pad-- {
			b = append(b, ' ')
		}
	}
	b = append(b, s...)
	for ; pad > 0; pad-- {
		b = append(b, ' ')
	}
	return b
}

// appendDateTime appends t as time.DateTime ("2006-01-02 15:04:05").
func appendDateTime(b []byte, t time.Time) []byte {
	y, mo, d := t.Date()
	if y < 1000 || y > 9999 {
		return t.AppendFormat(b, time.DateTime)
	}
	h, mi, s := t.Clock()
	b = appendDigits(b, y, 4)
	b = append(b, '-')
	b = appendDigits(b, int(mo), 2)
	b = append(b, '-')
	b = appendDigits(b, d, 2)
	b = append(b, ' ')
	b = appendDigits(b, h, 2)
	b = append(b, ':')
	b = appendDigits(b, mi, 2)
	b = append(b, ':')
	return appendDigits(b, s, 2)
}

// appendDigits appends the non-negative v in exactly n digits (n is 2 or
// 4).
func appendDigits(b []byte, v, n int) []byte {
	if n == 4 {
		b = append(b, byte('0'+v/1000%10), byte('0'+v/100%10))
	}
	return append(b, byte('0'+v/10%10), byte('0'+v%10))
}
