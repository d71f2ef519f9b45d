//go:build wasip1

// Command textstats is an example toolhost plugin built on shared/guest. It
// offers two tools from one module:
//
//   - text_stats counts the lines, words and bytes of a text;
//   - grep_file returns the lines of a file under /workspace that contain a
//     string (the operator mounts a directory there, read-only).
package main

import (
	"bufio"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/toolhost/toolhost/shared/guest"
)

type statsIn struct {
	Text string `json:"text"`
}

type statsOut struct {
	Lines int `json:"lines"`
	Words int `json:"words"`
	Bytes int `json:"bytes"`
}

const statsSchema = `{
  "type": "object",
  "properties": {"text": {"type": "string", "description": "The text to measure."}},
  "required": ["text"],
  "additionalProperties": false
}`

type grepIn struct {
	Path     string `json:"path"`
	Contains string `json:"contains"`
	Max      int    `json:"max"`
}

type grepOut struct {
	Matches []string `json:"matches"`
	Scanned int      `json:"scanned"`
}

const grepSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path relative to /workspace."},
    "contains": {"type": "string", "description": "Substring to look for."},
    "max": {"type": "integer", "minimum": 1, "description": "Most matches to return (default 100)."}
  },
  "required": ["path", "contains"],
  "additionalProperties": false
}`

func stats(in statsIn) (statsOut, error) {
	out := statsOut{Bytes: len(in.Text), Words: len(strings.Fields(in.Text))}
	if in.Text != "" {
		out.Lines = strings.Count(in.Text, "\n")
		if !strings.HasSuffix(in.Text, "\n") {
			out.Lines++
		}
	}
	return out, nil
}

func grep(in grepIn) (grepOut, error) {
	if in.Max <= 0 {
		in.Max = 100
	}
	f, err := os.Open(path.Join("/workspace", path.Clean("/"+in.Path)))
	if err != nil {
		return grepOut{}, fmt.Errorf("open %s: %w", in.Path, err)
	}
	defer f.Close()
	out := grepOut{Matches: []string{}}
	sc := bufio.NewScanner(f)
	for sc.Scan() && len(out.Matches) < in.Max {
		out.Scanned++
		if strings.Contains(sc.Text(), in.Contains) {
			out.Matches = append(out.Matches, sc.Text())
		}
	}
	return out, sc.Err()
}

func init() {
	t := guest.Func("text_stats", "Counts the lines, words and bytes of a text.", statsSchema, stats)
	t.ReadOnly = true
	g := guest.Func("grep_file", "Returns the lines of a file under /workspace that contain a string.", grepSchema, grep)
	g.ReadOnly = true
	guest.Register(t, g)
}

func main() {}
