package subprocess

import (
	"fmt"
	"slices"
	"strings"
)

// readOnlyCommands are the programs bash.read-only runs, each with the
// options that would make it write, delete or run another program.
var readOnlyCommands = map[string][]string{
	"ls": nil, "cat": nil, "grep": nil, "egrep": nil, "fgrep": nil,
	"find": {"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"},
	"wc":   nil, "head": nil, "tail": nil, "stat": nil, "du": nil, "pwd": nil, "echo": nil,
	"sort": {"-o", "--output", "--compress-program"},
	"cut":  nil, "tr": nil, "diff": nil, "cmp": nil, "basename": nil, "dirname": nil,
	"realpath": nil, "readlink": nil, "sha256sum": nil, "md5sum": nil, "nl": nil,
	"file": {"-C", "--compile"},
	"tree": {"-o", "-R"}, // -R writes 00Tree.html files, through system() in older versions
	"true": nil, "false": nil,
}

func readOnlyCommandNames() []string {
	names := make([]string, 0, len(readOnlyCommands))
	for n := range readOnlyCommands {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// checkReadOnly accepts a command line only if it is a pipeline of
// allowlisted programs with plain arguments: no ';', '&', '&&', '||',
// newlines, command or process substitution, subshells or groups,
// environment assignments, heredocs, or output redirections other than to
// /dev/null and 2>&1. The error says what was refused, for the model to
// correct its call. It is a policy check, not the containment: Landlock still
// makes every mounted directory read-only.
func checkReadOnly(line string) error {
	_, _, err := parseReadOnly(line)
	return err
}

// readOnlyLine checks line as checkReadOnly does and returns the line bash
// runs: the words the check read, each single-quoted except for the glob
// characters that were unquoted in line, joined by '|' and the allowed
// redirections. Bash then reinterprets nothing: whatever the check may have
// read differently from bash, bash runs the check's reading, and only
// expands globs (which skip names starting with '-' or '.', GLOBIGNORE).
func readOnlyLine(line string) (string, error) {
	_, canon, err := parseReadOnly(line)
	return canon, err
}

// parseReadOnly returns the pipeline's stages as the check read them (each
// a program and its arguments, '<' standing for an input redirection) and
// the line for bash (readOnlyLine).
func parseReadOnly(line string) ([][]string, string, error) {
	var (
		segments [][]string
		words    []string
		word     strings.Builder
		inWord   bool
		canon    []string        // the current segment as bash gets it
		canonSeg []string        // the segments as bash gets them
		cw       strings.Builder // the current word as bash gets it
		lit      []rune          // literal characters not yet quoted into cw
	)
	quoteLit := func() {
		if len(lit) > 0 {
			cw.WriteString(shellQuote(string(lit)))
			lit = lit[:0]
		}
	}
	literal := func(r ...rune) { lit = append(lit, r...) }
	flush := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			quoteLit()
			if cw.Len() == 0 {
				cw.WriteString("''") // an empty argument ("")
			}
			canon = append(canon, cw.String())
			cw.Reset()
			inWord = false
		}
	}
	refuse := func(what string) ([][]string, string, error) {
		return nil, "", fmt.Errorf("bash.read-only refuses %s: only allowlisted read-only programs (%s), optionally piped into each other, may run",
			what, strings.Join(readOnlyCommandNames(), ", "))
	}
	if strings.IndexByte(line, 0) >= 0 {
		return refuse("a NUL byte")
	}
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		next := func(k int) rune {
			if i+k < len(rs) {
				return rs[i+k]
			}
			return 0
		}
		switch c {
		case '\\':
			if i+1 < len(rs) {
				if rs[i+1] == '\n' {
					return refuse("a line continuation")
				}
				word.WriteRune(rs[i+1])
				literal(rs[i+1])
				inWord = true
				i++
			}
		case '\'':
			j := i + 1
			for j < len(rs) && rs[j] != '\'' {
				j++
			}
			if j >= len(rs) {
				return refuse("an unterminated quote")
			}
			word.WriteString(string(rs[i+1 : j]))
			literal(rs[i+1 : j]...)
			inWord = true
			i = j
		case '"':
			j := i + 1
			for ; j < len(rs) && rs[j] != '"'; j++ {
				switch {
				case rs[j] == '\\' && j+1 < len(rs):
					j++
				case rs[j] == '`':
					return refuse("command substitution (`...`)")
				case rs[j] == '$' && j+1 < len(rs) && rs[j+1] == '(':
					return refuse("command substitution ($(...))")
				case rs[j] == '$':
					return refuse("expansions ('$'): write the value out, or put a literal '$' in single quotes")
				}
			}
			if j >= len(rs) {
				return refuse("an unterminated quote")
			}
			// What bash makes of it: a backslash before $ ` " \ is
			// removed, and one before a newline goes with it; any other
			// stays.
			for k := i + 1; k < j; k++ {
				if rs[k] == '\\' && k+1 < j {
					switch rs[k+1] {
					case '$', '`', '"', '\\':
						k++
					case '\n':
						k++
						continue
					}
				}
				word.WriteRune(rs[k])
				literal(rs[k])
			}
			inWord = true
			i = j
		case ' ', '\t':
			flush()
		case '\n', '\r':
			return refuse("a newline (several commands)")
		case ';':
			return refuse("';' (several commands)")
		case '&':
			if next(1) == '&' {
				return refuse("'&&' (several commands)")
			}
			return refuse("'&' (background jobs or redirection)")
		case '|':
			if next(1) == '|' {
				return refuse("'||' (several commands)")
			}
			if next(1) == '&' {
				return refuse("'|&'")
			}
			flush()
			if len(words) == 0 {
				return refuse("an empty pipeline stage")
			}
			segments = append(segments, words)
			canonSeg = append(canonSeg, strings.Join(canon, " "))
			words, canon = nil, nil
		case '`':
			return refuse("command substitution (`...`)")
		case '$':
			// Parameter, arithmetic and $'...' expansions happen after
			// this check: "${X:--exec}" would become an option it never
			// saw.
			if next(1) == '(' {
				return refuse("command substitution ($(...))")
			}
			return refuse("expansions ('$'): write the value out, or put a literal '$' in single quotes")
		case '(', ')':
			return refuse(fmt.Sprintf("'%c' (subshells)", c))
		case '{', '}':
			// A group, or brace expansion, which could make an option of
			// its words (""{-o,out}): quote braces meant literally.
			return refuse(fmt.Sprintf("'%c' (command groups and brace expansion; quote a literal brace)", c))
		case '<':
			if next(1) == '(' {
				return refuse("process substitution (<(...))")
			}
			if next(1) == '<' {
				return refuse("heredocs (<<)")
			}
			flush()
			words = append(words, "<")
			canon = append(canon, "<")
		case '>':
			// Allowed: 2>&1, >/dev/null, 2>/dev/null (optionally spaced).
			fd := ""
			if inWord && (word.String() == "1" || word.String() == "2") {
				fd = word.String()
				word.Reset()
				cw.Reset()
				lit = lit[:0]
				inWord = false
			}
			if next(1) == '(' {
				return refuse("process substitution (>(...))")
			}
			if next(1) == '&' && next(2) == '1' && fd == "2" {
				flush()
				canon = append(canon, "2>&1")
				i += 2
				continue
			}
			if next(1) == '>' || next(1) == '|' || next(1) == '&' {
				return refuse("a redirection that writes ('>')")
			}
			j := i + 1
			for j < len(rs) && rs[j] == ' ' {
				j++
			}
			k := j
			for k < len(rs) && !strings.ContainsRune(" \t|;&<>", rs[k]) {
				k++
			}
			if string(rs[j:k]) != "/dev/null" {
				return refuse("a redirection that writes ('>' to a file)")
			}
			flush()
			canon = append(canon, fd+">/dev/null")
			i = k - 1
		default:
			word.WriteRune(c)
			if strings.ContainsRune("*?[]", c) {
				// A glob character bash is to expand.
				quoteLit()
				cw.WriteRune(c)
			} else {
				literal(c)
			}
			inWord = true
		}
	}
	flush()
	if len(words) == 0 {
		if len(segments) > 0 {
			return refuse("an empty pipeline stage")
		}
		return refuse("an empty command")
	}
	segments = append(segments, words)
	canonSeg = append(canonSeg, strings.Join(canon, " "))
	for _, seg := range segments {
		args := slices.DeleteFunc(slices.Clone(seg), func(w string) bool { return w == "<" })
		if len(args) == 0 {
			return refuse("a redirection without a command")
		}
		name := args[0]
		if i := strings.IndexByte(name, '='); i > 0 && !strings.ContainsAny(name[:i], "/-") {
			return refuse(fmt.Sprintf("the environment assignment %q", name))
		}
		denied, ok := readOnlyCommands[name]
		if !ok {
			return refuse(fmt.Sprintf("the program %q", name))
		}
		for _, a := range args[1:] {
			if d := deniedOption(a, denied); d != "" {
				return refuse(fmt.Sprintf("%s's option %s (it writes or runs other programs), given as %q", name, d, a))
			}
		}
	}
	return segments, strings.Join(canonSeg, " | "), nil
}

// shellQuote quotes s for a POSIX shell, as one word with no expansion.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// deniedOption returns the denied option that the argument a gives, or "".
// It reads a as the programs' option parsers would:
//
//   - "--name" or "--name=value": GNU getopt_long also accepts any
//     unambiguous prefix, so "--out=F" is sort's --output; a prefix of a
//     denied long option is refused even when it might be ambiguous.
//   - "-xyz": a cluster of short options, so "-uo F" gives -o; a denied
//     short option's letter anywhere in the cluster is refused (an attached
//     value that happens to contain it is refused too: spell it apart).
//   - "-name" for find's single-dash primaries: exact only.
func deniedOption(a string, denied []string) string {
	if len(a) < 2 || a[0] != '-' {
		return ""
	}
	for _, d := range denied {
		switch {
		case strings.HasPrefix(d, "--"):
			if !strings.HasPrefix(a, "--") {
				continue
			}
			name, _, _ := strings.Cut(a[2:], "=")
			if name != "" && strings.HasPrefix(d[2:], name) {
				return d
			}
		case len(d) == 2:
			if !strings.HasPrefix(a, "--") && strings.IndexByte(a[1:], d[1]) >= 0 {
				return d
			}
		default:
			if a == d {
				return d
			}
		}
	}
	return ""
}
