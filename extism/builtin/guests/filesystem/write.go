//go:build wasip1

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/toolhost/toolhost/extism/builtin/internal/mounts"
	"github.com/toolhost/toolhost/extism/builtin/internal/textdiff"
	"github.com/toolhost/toolhost/shared/guest"
)

const writeSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File to write, relative to the workspace or absolute inside a mounted directory."},
    "content": {"type": "string", "description": "The file's new content, in full."},
    "create_directories": {"type": "boolean", "description": "Create missing parent directories. Default true."}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`

const editSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File to edit, relative to the workspace or absolute inside a mounted directory."},
    "old": {"type": "string", "minLength": 1, "description": "The exact text to replace, including whitespace; it must occur exactly once in the file."},
    "new": {"type": "string", "description": "The text to put in its place."}
  },
  "required": ["path", "old", "new"],
  "additionalProperties": false
}`

const deleteSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File to delete (not a directory), relative to the workspace or absolute inside a mounted directory."}
  },
  "required": ["path"],
  "additionalProperties": false
}`

func writeTool() guest.Tool {
	return guest.Tool{
		Name:  "filesystem.write",
		Title: "Write a file",
		Description: "Create or overwrite a file with the given content, atomically (a temporary file renamed into place). " +
			"Returns the bytes written; the unified diff against the previous content is kept as an artifact.",
		InputSchema: []byte(writeSchema),
		Handler:     write,
		Args:        writeIn{},
	}
}

func editTool() guest.Tool {
	return guest.Tool{
		Name:  "filesystem.edit",
		Title: "Edit a file",
		Description: "Replace one exact snippet of a text file (old → new). old must occur exactly once: " +
			"if it occurs zero or several times nothing changes and the error says how often and on which lines. Returns the unified diff.",
		InputSchema: []byte(editSchema),
		Handler:     edit,
		Args:        editIn{},
	}
}

func deleteTool() guest.Tool {
	return guest.Tool{
		Name:        "filesystem.delete",
		Title:       "Delete a file",
		Description: "Delete one file (or symbolic link). Directories are refused.",
		InputSchema: []byte(deleteSchema),
		Handler:     remove,
		Args:        deleteIn{},
	}
}

type writeIn struct {
	Path              string `json:"path"`
	Content           string `json:"content"`
	CreateDirectories *bool  `json:"create_directories"`
}

func write(c *guest.Call) (*guest.Result, error) {
	var in writeIn
	if r := decode(c, &in); r != nil {
		return r, nil
	}
	p, r := resolve(in.Path)
	if r != nil {
		return r, nil
	}
	if p.Abs == p.Mount {
		return invalid("%s is a mounted directory, not a file", p.Display), nil
	}
	dir := path.Dir(p.Abs)
	if in.CreateDirectories == nil || *in.CreateDirectories {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			if _, serr := os.Stat(dir); errors.Is(err, fs.ErrExist) && serr != nil {
				err = serr // a link leading out of the mount "exists" but cannot be followed
			}
			return fail(mounts.FromOS(path.Dir(p.Display), err)), nil
		}
	} else if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return guest.ErrorCode(mounts.CodeFileNotFound, "the directory %s does not exist; set create_directories to true to create it", path.Dir(p.Display)), nil
	}
	old, existed, r := previous(p)
	if r != nil {
		return r, nil
	}
	if err := atomicWrite(p.Abs, in.Content); err != nil {
		return fail(mounts.FromOS(p.Display, err)), nil
	}
	msg := fmt.Sprintf("Wrote %d bytes to %s", len(in.Content), p.Display)
	res := guest.Text(msg)
	switch {
	case !existed:
		msg += " (new file)"
	case old == in.Content:
		msg += " (content unchanged)"
	}
	if d, st := diffOf(p.Display, old, in.Content, existed); d != "" {
		if existed {
			msg += fmt.Sprintf(" (+%d -%d lines; the diff is kept as an artifact)", st.Added, st.Removed)
		}
		res.Content = append(res.Content, guest.Artifact(diffName(p.Display), "text/x-diff", d))
	}
	res.Content[0].Text = msg
	return res, nil
}

// previous reads the file's current content, for the diff.
func previous(p mounts.Path) (string, bool, *guest.Result) {
	fi, err := os.Lstat(p.Abs)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fail(mounts.FromOS(p.Display, err))
	}
	if fi.IsDir() {
		return "", false, invalid("%s is a directory", p.Display)
	}
	if r := notLink(p, fi); r != nil {
		return "", false, r
	}
	if !fi.Mode().IsRegular() {
		return "", false, invalid("%s is not a regular file", p.Display)
	}
	b, err := os.ReadFile(p.Abs)
	if err != nil {
		return "", false, fail(mounts.FromOS(p.Display, err))
	}
	return string(b), true, nil
}

// diffOf returns the unified diff old → new, or "" when there is nothing
// useful to show (no change, binary content).
func diffOf(shown, old, new string, existed bool) (string, textdiff.Stats) {
	if isBinary([]byte(old)) || isBinary([]byte(new)) {
		return "", textdiff.Stats{}
	}
	from := "a/" + shown
	if !existed {
		from = "/dev/null"
	}
	return textdiff.Unified(from, "b/"+shown, old, new, 3)
}

func diffName(shown string) string {
	return strings.ReplaceAll(strings.TrimPrefix(shown, "/"), "/", "_") + ".diff"
}

// atomicWrite writes content to a temporary file next to target and
// renames it into place, so that readers see the old file or the new one,
// never half of one.
func atomicWrite(target, content string) error {
	dir, base := path.Split(target)
	var tmp string
	var f *os.File
	var err error
	for range 5 {
		tmp = path.Join(dir, fmt.Sprintf(".%s.%08x.toolhost-tmp", base, rand.Uint32()))
		f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	_, err = f.WriteString(content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, target)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

type editIn struct {
	Path string `json:"path"`
	Old  string `json:"old"`
	New  string `json:"new"`
}

func edit(c *guest.Call) (*guest.Result, error) {
	var in editIn
	if r := decode(c, &in); r != nil {
		return r, nil
	}
	if in.Old == "" {
		return invalid("old must not be empty"), nil
	}
	if in.Old == in.New {
		return invalid("old and new are the same; nothing to change"), nil
	}
	max, r := configSize("max_file_size", defaultMaxFileSize)
	if r != nil {
		return r, nil
	}
	p, r := resolve(in.Path)
	if r != nil {
		return r, nil
	}
	fi, err := os.Lstat(p.Abs)
	if err != nil {
		return fail(mounts.FromOS(p.Display, err)), nil
	}
	if r := notLink(p, fi); r != nil {
		return r, nil
	}
	if fi.IsDir() {
		return invalid("%s is a directory", p.Display), nil
	}
	if fi.Size() > max {
		return tooLarge(p.Display, fi.Size(), max), nil
	}
	b, err := os.ReadFile(p.Abs)
	if err != nil {
		return fail(mounts.FromOS(p.Display, err)), nil
	}
	text := string(b)
	if isBinary(b) {
		return invalid("%s is a binary file; filesystem.edit changes text files", p.Display), nil
	}
	if !utf8.ValidString(text) {
		return invalid("%s is not valid UTF-8; rewrite it with filesystem.write instead", p.Display), nil
	}
	switch n := strings.Count(text, in.Old); n {
	case 0:
		hint := ""
		if strings.Contains(strings.Join(strings.Fields(text), " "), strings.Join(strings.Fields(in.Old), " ")) {
			hint = " (it does occur with different whitespace or line breaks: copy old exactly from the file)"
		}
		return invalid("old was not found in %s: 0 matches%s", p.Display, hint), nil
	case 1:
	default:
		return invalid("old occurs %d times in %s, at lines %s; include more of the surrounding text so that it occurs exactly once",
			n, p.Display, matchLines(text, in.Old)), nil
	}
	updated := strings.Replace(text, in.Old, in.New, 1)
	if err := atomicWrite(p.Abs, updated); err != nil {
		return fail(mounts.FromOS(p.Display, err)), nil
	}
	d, st := diffOf(p.Display, text, updated, true)
	res := guest.Text(fmt.Sprintf("Edited %s (+%d -%d lines)\n\n%s", p.Display, st.Added, st.Removed, d))
	res.Content = append(res.Content, guest.Artifact(diffName(p.Display), "text/x-diff", d))
	return res, nil
}

// matchLines lists the lines where each occurrence of old starts.
func matchLines(text, old string) string {
	var lines []string
	line, from := 1, 0
	for {
		i := strings.Index(text[from:], old)
		if i < 0 || len(lines) == 20 {
			break
		}
		line += strings.Count(text[from:from+i], "\n")
		lines = append(lines, fmt.Sprint(line))
		line += strings.Count(old, "\n")
		from += i + len(old)
	}
	return strings.Join(lines, ", ")
}

type deleteIn struct {
	Path string `json:"path"`
}

func remove(c *guest.Call) (*guest.Result, error) {
	var in deleteIn
	if r := decode(c, &in); r != nil {
		return r, nil
	}
	p, r := resolve(in.Path)
	if r != nil {
		return r, nil
	}
	fi, err := os.Lstat(p.Abs)
	if err != nil {
		return fail(mounts.FromOS(p.Display, err)), nil
	}
	if fi.IsDir() {
		return invalid("%s is a directory; filesystem.delete removes files only", p.Display), nil
	}
	if err := os.Remove(p.Abs); err != nil {
		return fail(mounts.FromOS(p.Display, err)), nil
	}
	return guest.Text("Deleted " + p.Display), nil
}

// notLink refuses to write through a symbolic link: replacing the file
// would replace the link, and its target may be outside every mount (then
// the answer is PERMISSION_DENIED). The model is told the target instead.
func notLink(p mounts.Path, fi fs.FileInfo) *guest.Result {
	if fi.Mode()&fs.ModeSymlink == 0 {
		return nil
	}
	if _, err := os.Stat(p.Abs); err != nil {
		return fail(mounts.FromOS(p.Display, err))
	}
	target, _ := os.Readlink(p.Abs)
	return invalid("%s is a symbolic link (to %s); write to the file it points at instead", p.Display, target)
}
