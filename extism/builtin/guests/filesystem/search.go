//go:build wasip1

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/toolhost/toolhost/extism/builtin/internal/match"
	"github.com/toolhost/toolhost/extism/builtin/internal/mounts"
	"github.com/toolhost/toolhost/extism/builtin/internal/scan"
	"github.com/toolhost/toolhost/extism/internal/fold"
	"github.com/toolhost/toolhost/shared/guest"
)

const searchSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Directory (or file) to search, relative to the workspace or absolute inside a mounted directory. Default: the workspace."},
    "name": {"type": "string", "description": "Only files whose name matches this glob (\"*.go\", \"src/**/*_test.go\", \"*.{md,txt}\"); a pattern without / matches the file name."},
    "pattern": {"type": "string", "minLength": 1, "description": "Text to find in file contents: a literal string, or a Go regular expression (RE2 syntax) when regex is true."},
    "regex": {"type": "boolean", "description": "Treat pattern as a regular expression. Default false."},
    "case_sensitive": {"type": "boolean", "description": "Default true."},
    "max_results": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Most results to return. Default 100."}
  },
  "anyOf": [{"required": ["name"]}, {"required": ["pattern"]}],
  "additionalProperties": false
}`

type searchIn struct {
	Path          string `json:"path"`
	Name          string `json:"name"`
	Pattern       string `json:"pattern"`
	Regex         bool   `json:"regex"`
	CaseSensitive *bool  `json:"case_sensitive"`
	MaxResults    int    `json:"max_results"`
}

func searchTool() guest.Tool {
	return guest.Tool{
		Name:  "filesystem.search",
		Title: "Search files",
		Description: "Find files by name (glob) and/or by content (literal text or regular expression). " +
			"Content matches are reported as path:line:column: line. Binary files, .git and what .gitignore excludes are skipped.",
		InputSchema: []byte(searchSchema),
		ReadOnly:    true,
		Handler:     search,
		Args:        searchIn{},
	}
}

// setFilter makes lit, which every match holds, the host's filter; fold:
// it matches in either case. A literal too long is cut (what every match
// holds, a part of it does too); one the host cannot fold is no filter.
func (s *searcher) setFilter(lit string, fold bool) {
	if fold {
		lit = strings.ToLower(lit)
		if !isASCII(lit) {
			return
		}
	}
	if len(lit) > maxFilter {
		lit = lit[:maxFilter]
	}
	if lit != "" {
		s.filter, s.fold = []byte(lit), fold
		s.filterFinder = scan.NewFinder(s.filter)
	}
}

// mayHold reports whether data may hold the filter (true without one).
func (s *searcher) mayHold(data []byte) bool {
	switch {
	case s.filter == nil:
		return true
	case !s.fold:
		return s.filterFinder.Index(data) >= 0
	case fold.BeyondASCII(data, s.filter):
		return true
	}
	s.low = fold.Lower(s.low, data)
	return s.filterFinder.Index(s.low) >= 0
}

// maxFilter is the longest filter the host takes.
const maxFilter = 4 << 10

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// maxShownLine bounds how much of a matching line is shown.
const maxShownLine = 240

// searcher holds one search's state.
type searcher struct {
	ms      mounts.Set
	name    *match.Glob
	literal *scan.Finder
	filter  []byte // what the host may look for in files before they come (literal)
	fold    bool   // filter is matched in either case
	// The guest's own look for filter, in files the host did not filter
	// (too large for a batch, or no batches): a file without it has no
	// match, and the expression, slow on every byte, need not run.
	// caseless finds a case-insensitive pattern itself: the expression
	// is only needed for a file holding KELVIN SIGN or LONG S.
	filterFinder *scan.Finder
	caseless     *scan.Finder
	low          []byte // scratch: a file in lower case
	re           *regexp.Regexp
	content      bool
	max          int
	maxSize      int64

	ig     match.Ignore
	buf    []byte
	dirBuf []byte

	// Files named to the host for reading (flush), searched from head
	// on; their directories, and the names not yet named.
	batch     *mounts.Batch
	queue     []queued
	head      int // next to search
	submitted int // queue[:submitted] are named to the host
	dirs      []string
	names     []string

	out     strings.Builder
	results int
	files   int // files whose content was searched
	skipped struct{ binary, large, badName int }
	done    bool
}

func search(c *guest.Call) (*guest.Result, error) {
	var in searchIn
	if r := decode(c, &in); r != nil {
		return r, nil
	}
	if in.Name == "" && in.Pattern == "" {
		return invalid("give name (a glob for file names), pattern (text to find in files), or both"), nil
	}
	s := &searcher{max: in.MaxResults, ms: mounts.Discover()}
	if s.max == 0 {
		s.max = 100
	}
	if s.max < 0 || s.max > 1000 {
		return invalid("max_results must be between 1 and 1000"), nil
	}
	var r *guest.Result
	if s.maxSize, r = configSize("max_file_size", defaultMaxFileSize); r != nil {
		return r, nil
	}
	if in.Name != "" {
		g, err := match.Compile(in.Name)
		if err != nil {
			return invalid("name: %v", err), nil
		}
		s.name = g
	}
	if in.Pattern != "" {
		if strings.IndexByte(in.Pattern, 0) >= 0 {
			return invalid("pattern contains a NUL byte"), nil
		}
		s.content = true
		caseSensitive := in.CaseSensitive == nil || *in.CaseSensitive
		switch {
		case in.Regex:
			expr := "(?m)" + in.Pattern
			if !caseSensitive {
				expr = "(?i)" + expr
			}
			re, err := regexp.Compile(expr)
			if err != nil {
				return invalid("pattern is not a valid regular expression: %v", err), nil
			}
			s.re = re
			// The host drops the files without a literal that every
			// match holds; the expression, slow on every byte, runs on
			// the rest.
			s.setFilter(scan.RequiredLiteral(expr))
		case caseSensitive:
			s.literal = scan.NewFinder([]byte(in.Pattern))
			s.setFilter(in.Pattern, false)
		default:
			s.re = regexp.MustCompile("(?i)" + regexp.QuoteMeta(in.Pattern))
			s.setFilter(in.Pattern, true)
			if s.fold && len(s.filter) == len(in.Pattern) {
				s.caseless = s.filterFinder // the whole pattern, ASCII
			}
		}
	}
	p, e := s.ms.Resolve(in.Path)
	if e != nil {
		return fail(e), nil
	}
	fi, err := os.Stat(p.Abs)
	if err != nil {
		return fail(mounts.FromOS(p.Display, err)), nil
	}
	s.buf = make([]byte, 256<<10)
	if s.content {
		s.batch = new(mounts.Batch)
	}
	if fi.IsDir() {
		if _, _, err := s.ms.ReadDir(p.Abs, nil); err != nil {
			return fail(mounts.FromOS(p.Display, err)), nil
		}
		s.walk(p.Abs, "")
		if s.batch != nil {
			s.drain(true)
		}
	} else {
		if s.name == nil || s.name.Match(path.Base(p.Abs)) {
			s.file(p.Abs)
		}
	}
	return guest.Text(s.summary(in)), nil
}

// walk searches the directory dir, whose path relative to the search root
// is rel. Entry types come from the directory listing itself, so the walk
// makes no stat calls. The files whose content is searched are named to
// the host in runs (queue), which reads them while the walk goes on; they
// are searched in the order of the walk all the same.
func (s *searcher) walk(dir, rel string) {
	entries, buf, err := s.ms.ReadDir(dir, s.dirBuf)
	s.dirBuf = buf
	if err != nil {
		return
	}
	mounts.SortEntries(entries)
	mark := s.ig.Len()
	defer s.ig.Truncate(mark)
	for _, de := range entries {
		if de.Name == ".gitignore" && de.IsRegular() {
			if b, err := os.ReadFile(path.Join(dir, ".gitignore")); err == nil {
				s.ig.Add(rel, string(b))
			}
			break
		}
	}
	// The path relative to the root is needed for every file only when
	// there are ignore rules, or a glob of more than the file name.
	perFileRel := s.ig.Len() > 0 || s.name != nil && !s.name.BaseOnly()
	_, dirShown := displayName(s.ms.Display(dir))
	d := -1 // dir's index in s.dirs, once a file of it is queued
	for _, de := range entries {
		if s.done {
			return
		}
		name := de.Name
		switch {
		case de.IsDir():
			r := name
			if rel != "" {
				r = rel + "/" + name
			}
			if name == ".git" || s.ig.Ignored(r, true) {
				continue
			}
			s.flush() // files before this directory are searched before it
			s.walk(dir+"/"+name, r)
		case de.IsRegular():
			r := name
			if perFileRel && rel != "" {
				r = rel + "/" + name
			}
			if s.ig.Ignored(r, false) || s.name != nil && !s.name.Match(r) {
				continue
			}
			if !s.content || s.batch == nil {
				s.file(dir + "/" + name)
				continue
			}
			if !dirShown || !utf8.ValidString(name) {
				s.skipped.badName++
				continue
			}
			if d < 0 {
				d = len(s.dirs)
				s.dirs = append(s.dirs, dir)
			}
			s.names = append(s.names, name)
			s.queue = append(s.queue, queued{dir: d, name: name})
		}
	}
	s.flush()
}

// queued is a file named to the host for reading: a name in s.dirs[dir].
type queued struct {
	dir  int
	name string
}

// flush names the files collected in s.names (all in the directory of the
// last queued) to the host, then searches those already read. When the
// host does not read in batches, the files are read one by one.
func (s *searcher) flush() {
	for len(s.names) > 0 && !s.done {
		n := min(len(s.names), batchRun)
		if s.batch.Pending()+n > mounts.BatchMaxQueued {
			s.drain(true)
		}
		if s.done {
			break
		}
		dir := s.dirs[s.queue[s.submitted].dir]
		err := s.batch.Submit(dir, s.names[:n], s.maxSize, s.filter, s.fold)
		if errors.Is(err, syscall.EAGAIN) {
			// The host holds as many files or directories as it will:
			// take them all, then ask again.
			s.drain(true)
			if s.done {
				break
			}
			err = s.batch.Submit(dir, s.names[:n], s.maxSize, s.filter, s.fold)
		}
		if err != nil {
			// Not read by the host: what is queued before them first,
			// then these, file by file.
			later := slices.Clone(s.queue[s.submitted:])
			s.queue = s.queue[:s.submitted]
			s.drain(true)
			if errors.Is(err, mounts.ErrNoBatch) {
				s.batch = nil
			}
			for _, q := range later {
				if s.done {
					break
				}
				abs := s.dirs[q.dir] + "/" + q.name
				shown, _ := displayName(s.ms.Display(abs))
				s.content1(abs, shown)
			}
			s.names = s.names[:0]
			return
		}
		s.submitted += n
		s.names = s.names[n:]
		s.drain(false)
	}
	s.names = s.names[:0]
}

// batchRun is the most files named to the host at once.
const batchRun = 1024

// drain searches the queued files the host has read, in order; with wait,
// all of them, waiting for the host.
func (s *searcher) drain(wait bool) {
	for s.head < s.submitted && !s.done {
		rd, ok := s.batch.Next(wait)
		if !ok {
			if wait {
				s.head = s.submitted // the host lost them (it should not)
			}
			break
		}
		q := s.queue[s.head]
		s.head++
		switch {
		case rd.Err == nil:
			s.search(rd.Data, "", q)
		case rd.Err == mounts.ErrNoMatch:
			s.files++
		case rd.Err == mounts.ErrBinary:
			s.skipped.binary++
		case errors.Is(rd.Err, syscall.EFBIG) && rd.Size <= s.maxSize:
			// Over what the host reads in a batch, not over the limit.
			abs := s.dirs[q.dir] + "/" + q.name
			s.content1(abs, s.ms.Display(abs))
		case errors.Is(rd.Err, syscall.EFBIG):
			s.skipped.large++
		case rd.Err == syscall.ENOENT, rd.Err == syscall.ELOOP, rd.Err == syscall.EISDIR,
			rd.Err == syscall.EINVAL, rd.Err == syscall.ENXIO:
			// Gone, or no longer a regular file, since the listing.
		default:
			// Out of descriptors, memory or luck: the guest tries itself.
			abs := s.dirs[q.dir] + "/" + q.name
			s.content1(abs, s.ms.Display(abs))
		}
	}
	if s.head == len(s.queue) {
		s.queue, s.head, s.submitted = s.queue[:0], 0, 0
	}
}

// file checks one regular file (its name matched).
func (s *searcher) file(abs string) {
	shown, ok := displayName(s.ms.Display(abs))
	if !ok {
		s.skipped.badName++
		if s.content {
			return
		}
	}
	if !s.content {
		s.add(shown + "\n")
		return
	}
	s.content1(abs, shown)
}

// content1 reads one file and searches it.
func (s *searcher) content1(abs, shown string) {
	data, ok := s.read(abs)
	if !ok {
		return
	}
	s.search(data, shown, queued{})
}

// search searches the content of one file, unless it is binary. It is
// shown as shown, or if that is empty, as the queued file q: most files
// have no match, and need no name.
func (s *searcher) search(data []byte, shown string, q queued) {
	first := -1
	if s.literal != nil {
		at, binary := s.literal.IndexOrNUL(data, binaryPrefix)
		if binary {
			s.skipped.binary++
			return
		}
		s.files++
		if at < 0 {
			return
		}
		first = at
	} else {
		if isBinary(data) {
			s.skipped.binary++
			return
		}
		s.files++
		if !s.mayHold(data) {
			return
		}
	}
	s.scan(data, first, shown, q)
}

// read reads a whole file into the reusable buffer; false if it could not
// be read or is over the size limit.
func (s *searcher) read(abs string) ([]byte, bool) {
	data, ok, err := s.ms.ReadFile(abs, s.buf, s.maxSize)
	if err != nil {
		return nil, false
	}
	if !ok {
		s.skipped.large++
		return nil, false
	}
	s.buf = data[:cap(data)]
	return data, true
}

// scan reports every line of data with a match, once, at the column of
// its first match; first is where the first match is, if known (else -1).
// The file is shown as search says.
func (s *searcher) scan(data []byte, first int, shown string, q queued) {
	line, lineStart, counted := 1, 0, 0
	pos := 0
	var low []byte // data in lower case, for caseless
	if s.caseless != nil && !fold.BeyondASCII(data, s.filter) {
		s.low = fold.Lower(s.low, data)
		low = s.low
	}
	for pos <= len(data) && !s.done {
		var at int
		if first >= 0 {
			at, first = first, -1
		} else if low != nil {
			i := s.caseless.Index(low[pos:])
			if i < 0 {
				return
			}
			at = pos + i
		} else if s.literal != nil {
			i := s.literal.Index(data[pos:])
			if i < 0 {
				return
			}
			at = pos + i
		} else {
			loc := s.re.FindIndex(data[pos:])
			if loc == nil {
				return
			}
			at = pos + loc[0]
		}
		line += bytes.Count(data[counted:at], []byte{'\n'})
		counted = at
		if i := bytes.LastIndexByte(data[:at], '\n'); i >= 0 {
			lineStart = i + 1
		} else {
			lineStart = 0
		}
		end := bytes.IndexByte(data[at:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += at
		}
		col := utf8.RuneCount(data[lineStart:at]) + 1
		text := data[lineStart:end]
		text = bytes.TrimRight(text, "\r")
		if len(text) > maxShownLine {
			cut := maxShownLine
			for cut > 0 && !utf8.RuneStart(text[cut]) {
				cut--
			}
			text = append(text[:cut:cut], "…"...)
		}
		if shown == "" {
			shown = s.ms.Display(s.dirs[q.dir] + "/" + q.name)
		}
		s.add(fmt.Sprintf("%s:%d:%d: %s\n", shown, line, col, text))
		pos = end + 1
	}
}

func (s *searcher) add(line string) {
	s.out.WriteString(line)
	s.results++
	if s.results >= s.max {
		s.done = true
	}
}

func (s *searcher) summary(in searchIn) string {
	var notes []string
	what := "files"
	if s.content {
		what = "matching lines"
	}
	switch {
	case s.results == 0:
		notes = append(notes, "no matches")
	case s.done:
		notes = append(notes, fmt.Sprintf("stopped after %d %s (max_results); narrow the search to see the rest", s.results, what))
	default:
		notes = append(notes, fmt.Sprintf("%d %s", s.results, what))
	}
	if s.content {
		notes = append(notes, fmt.Sprintf("%d files searched", s.files))
	}
	if s.skipped.binary > 0 {
		notes = append(notes, fmt.Sprintf("%d binary files skipped", s.skipped.binary))
	}
	if s.skipped.large > 0 {
		notes = append(notes, fmt.Sprintf("%d files over %d bytes (max_file_size) skipped", s.skipped.large, s.maxSize))
	}
	if s.skipped.badName > 0 {
		notes = append(notes, fmt.Sprintf("%d files with names that are not UTF-8", s.skipped.badName))
	}
	return s.out.String() + "[" + strings.Join(notes, "; ") + "]"
}
