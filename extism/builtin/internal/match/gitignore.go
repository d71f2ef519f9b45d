package match

import (
	"strings"
)

// rule is one line of a .gitignore file.
type rule struct {
	glob    *Glob
	negate  bool
	dirOnly bool
}

// Ignore holds the .gitignore rules found while walking a tree. Rules of
// a deeper directory come later and win, as in git.
type Ignore struct {
	sets []ruleSet
}

type ruleSet struct {
	dir   string // relative to the walk's root, "" for the root
	rules []rule
}

// Add parses the .gitignore found in dir (relative to the walk's root, ""
// for the root). Lines that do not parse are skipped, as git does.
func (ig *Ignore) Add(dir, content string) {
	rs := ruleSet{dir: dir}
	for _, line := range strings.Split(content, "\n") {
		line = strings.TrimRight(line, "\r")
		if !strings.HasSuffix(line, "\\ ") {
			line = strings.TrimRight(line, " \t")
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var r rule
		if strings.HasPrefix(line, "!") {
			r.negate, line = true, line[1:]
		} else if strings.HasPrefix(line, `\`) {
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly, line = true, strings.TrimRight(line, "/")
		}
		if line == "" {
			continue
		}
		anchored := strings.Contains(line, "/")
		line = strings.TrimPrefix(line, "/")
		if !anchored {
			line = "**/" + line
		}
		g, err := Compile(line)
		if err != nil {
			continue
		}
		g.baseOnly = false
		r.glob = g
		rs.rules = append(rs.rules, r)
	}
	if len(rs.rules) > 0 {
		ig.sets = append(ig.sets, rs)
	}
}

// Ignored reports whether the path p (relative to the walk's root) is
// excluded. Parents are the caller's business: a walk does not descend
// into an ignored directory.
func (ig *Ignore) Ignored(p string, isDir bool) bool {
	ignored := false
	for _, rs := range ig.sets {
		rel := p
		if rs.dir != "" {
			if !strings.HasPrefix(p, rs.dir+"/") {
				continue
			}
			rel = p[len(rs.dir)+1:]
		}
		for _, r := range rs.rules {
			if r.dirOnly && !isDir {
				continue
			}
			if r.glob.Match(rel) {
				ignored = !r.negate
			}
		}
	}
	return ignored
}

// Len returns the number of rule sets, so that a walk can drop the sets
// of directories it has left (Truncate).
func (ig *Ignore) Len() int { return len(ig.sets) }

// Truncate drops the rule sets added after the first n.
func (ig *Ignore) Truncate(n int) { ig.sets = ig.sets[:n] }
