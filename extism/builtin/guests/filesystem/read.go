//go:build wasip1

package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/toolhost/toolhost/extism/builtin/internal/mounts"
	"github.com/toolhost/toolhost/shared/guest"
)

const readSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File to read: relative to the workspace, or absolute inside a mounted directory."},
    "offset": {"type": "integer", "minimum": 1, "description": "First line to return (1-based). Default 1."},
    "limit": {"type": "integer", "minimum": 1, "description": "Most lines to return. Default: all."},
    "encoding": {"type": "string", "enum": ["utf-8", "latin-1"], "description": "Text encoding. Default utf-8, falling back to latin-1 when the bytes are not valid UTF-8."}
  },
  "required": ["path"],
  "additionalProperties": false
}`

type readIn struct {
	Path     string `json:"path"`
	Offset   int    `json:"offset"`
	Limit    int    `json:"limit"`
	Encoding string `json:"encoding"`
}

func readTool() guest.Tool {
	return guest.Tool{
		Name:  "filesystem.read",
		Title: "Read a file",
		Description: "Read a text file. Returns its lines, optionally a window of them (offset, limit). " +
			"A binary file returns \"Binary file, N bytes\"; a file over the size limit fails with FILE_TOO_LARGE.",
		InputSchema: []byte(readSchema),
		ReadOnly:    true,
		Handler:     read,
		Args:        readIn{},
	}
}

func read(c *guest.Call) (*guest.Result, error) {
	var in readIn
	if r := decode(c, &in); r != nil {
		return r, nil
	}
	if in.Offset < 0 || in.Limit < 0 {
		return invalid("offset and limit must be positive"), nil
	}
	switch strings.ToLower(in.Encoding) {
	case "", "utf-8", "utf8":
		in.Encoding = "utf-8"
	case "latin-1", "latin1", "iso-8859-1":
		in.Encoding = "latin-1"
	default:
		return invalid("encoding %q is not supported: use utf-8 or latin-1", in.Encoding), nil
	}
	max, r := configSize("max_file_size", defaultMaxFileSize)
	if r != nil {
		return r, nil
	}
	p, r := resolve(in.Path)
	if r != nil {
		return r, nil
	}
	f, err := os.Open(p.Abs)
	if err != nil {
		return fail(mounts.FromOS(p.Display, err)), nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fail(mounts.FromOS(p.Display, err)), nil
	}
	if fi.IsDir() {
		return invalid("%s is a directory; use filesystem.list to see what it holds", p.Display), nil
	}
	if !fi.Mode().IsRegular() {
		return invalid("%s is not a regular file", p.Display), nil
	}
	if fi.Size() > max {
		return tooLarge(p.Display, fi.Size(), max), nil
	}
	// Read one byte more than the limit, in case the file grew since Stat.
	data := make([]byte, 0, fi.Size()+1)
	for int64(len(data)) <= max {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err != nil {
			break
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
	if int64(len(data)) > max {
		return tooLarge(p.Display, int64(len(data)), max), nil
	}
	if isBinary(data) {
		return guest.Text(fmt.Sprintf("Binary file, %d bytes", len(data))), nil
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var text string
	var notes []string
	switch {
	case in.Encoding == "latin-1":
		text = latin1(data)
	case utf8.Valid(data):
		text = string(data)
	default:
		text = latin1(data)
		notes = append(notes, "the file is not valid UTF-8; it was decoded as latin-1")
	}
	text, note := window(text, in.Offset, in.Limit)
	if note != "" {
		notes = append(notes, note)
	}
	if len(notes) > 0 {
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += "[" + strings.Join(notes, "; ") + "]"
	}
	return guest.Text(text), nil
}

func tooLarge(shown string, size, max int64) *guest.Result {
	return guest.ErrorCode(mounts.CodeFileTooLarge, "%s is %d bytes, over the %d-byte limit for reading (max_file_size)", shown, size, max)
}

// latin1 decodes ISO-8859-1: every byte is the code point of the same value.
func latin1(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b) + len(b)/8)
	for _, c := range b {
		sb.WriteRune(rune(c))
	}
	return sb.String()
}

// window returns lines offset.. (1-based) of text, at most limit of them
// (0: all), and a note saying what was left out, if anything.
func window(text string, offset, limit int) (string, string) {
	if offset <= 1 && limit == 0 {
		return text, ""
	}
	if offset < 1 {
		offset = 1
	}
	total := strings.Count(text, "\n")
	if text != "" && !strings.HasSuffix(text, "\n") {
		total++
	}
	if offset > total {
		return "", fmt.Sprintf("offset %d is past the end: the file has %d lines", offset, total)
	}
	start := 0
	for line := 1; line < offset; line++ {
		start += strings.IndexByte(text[start:], '\n') + 1
	}
	end, last := len(text), total
	if limit > 0 && offset+limit-1 < total {
		last = offset + limit - 1
		end = start
		for line := offset; line <= last; line++ {
			end += strings.IndexByte(text[end:], '\n') + 1
		}
	}
	note := ""
	if offset > 1 || last < total {
		note = fmt.Sprintf("lines %d-%d of %d", offset, last, total)
		if last < total {
			note += fmt.Sprintf("; call again with offset=%d for more", last+1)
		}
	}
	return text[start:end], note
}
