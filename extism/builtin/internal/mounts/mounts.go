// Package mounts resolves the paths a model passes to the built-in file
// tools against the directories the operator mounted into the guest.
//
// A path is either relative, and then relative to the first mount (the
// workspace), or absolute and inside one of the mounts. Resolution is
// lexical and strict: it refuses what no mount contains, what climbs out
// with "..", NUL bytes, over-long paths and names that are not UTF-8. The
// host's os.Root-backed filesystem is the real boundary (it refuses
// symlinks that lead out); this package makes the refusal early, with an
// error code and a message a model can act on.
//
// The pure resolution logic builds on every platform so that it can be
// tested natively; discovering the mounts of a running guest (WASI
// preopens) is in the wasip1-only part.
package mounts

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"syscall"
	"unicode/utf8"
)

// Stable error codes, as the host's pipeline names them.
const (
	CodeInvalidRequest   = "INVALID_REQUEST"
	CodeFileNotFound     = "FILE_NOT_FOUND"
	CodeFileTooLarge     = "FILE_TOO_LARGE"
	CodePermissionDenied = "PERMISSION_DENIED"
	CodeFailed           = "TOOL_EXECUTION_FAILED"
)

// Limits on what a path may look like.
const (
	MaxPathBytes = 4096
	MaxNameBytes = 255
)

// Error is a failure with one of the pipeline's stable codes.
type Error struct {
	Code string
	Msg  string
}

func (e *Error) Error() string { return e.Code + ": " + e.Msg }

// Errorf returns an *Error.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Set is the mounts one guest instance sees, in the order the operator
// declared them. The first is the workspace that relative paths start
// from.
type Set struct {
	paths []string
	fds   []int32 // WASI preopen of each of paths, -1 if none (wasip1)
}

// New returns a Set of the given guest paths (absolute; cleaned here).
// The per-call /tmp is not a mount the tools offer and is dropped.
func New(guestPaths ...string) Set {
	var s Set
	for _, p := range guestPaths {
		p = cleanMount(p)
		if p == "/tmp" || p == "/" {
			continue
		}
		s.paths = append(s.paths, p)
	}
	return s
}

func cleanMount(p string) string { return path.Clean("/" + p) }

// Paths returns the mount points.
func (s Set) Paths() []string { return append([]string(nil), s.paths...) }

// Empty reports whether nothing is mounted.
func (s Set) Empty() bool { return len(s.paths) == 0 }

// Path is a resolved path.
type Path struct {
	// Abs is the guest path to open.
	Abs string
	// Mount is the mount point that contains it.
	Mount string
	// Display is how to show the path to a model: relative to the
	// workspace when it is inside it, else absolute.
	Display string
}

// CheckName validates one string as a path argument: UTF-8, no NUL, not
// over-long. field names the argument in the message.
func CheckName(field, p string) *Error {
	switch {
	case strings.IndexByte(p, 0) >= 0:
		return Errorf(CodeInvalidRequest, "%s contains a NUL byte", field)
	case !utf8.ValidString(p) || strings.ContainsRune(p, utf8.RuneError):
		return Errorf(CodeInvalidRequest, "%s is not valid UTF-8", field)
	case len(p) > MaxPathBytes:
		return Errorf(CodeInvalidRequest, "%s is %d bytes long; the limit is %d", field, len(p), MaxPathBytes)
	}
	for _, el := range strings.Split(p, "/") {
		if len(el) > MaxNameBytes {
			return Errorf(CodeInvalidRequest, "%s has a name of %d bytes (%.20q…); the limit is %d", field, len(el), el, MaxNameBytes)
		}
	}
	return nil
}

// Resolve resolves p (relative to the workspace, or absolute inside a
// mount). An empty p is the workspace itself.
func (s Set) Resolve(p string) (Path, *Error) {
	if len(s.paths) == 0 {
		return Path{}, Errorf(CodePermissionDenied, "no directory is mounted for this tool; the operator grants one with a mount block")
	}
	if err := CheckName("path", p); err != nil {
		return Path{}, err
	}
	var abs string
	if strings.HasPrefix(p, "/") {
		abs = path.Clean(p)
	} else {
		rel := path.Clean(p)
		if rel == ".." || strings.HasPrefix(rel, "../") {
			return Path{}, Errorf(CodePermissionDenied, "path %q climbs out of the workspace %s with \"..\"; give a path inside it", p, s.paths[0])
		}
		abs = path.Join(s.paths[0], rel)
	}
	m, ok := s.mountOf(abs)
	if !ok {
		return Path{}, Errorf(CodePermissionDenied, "path %q is outside every mounted directory (%s); give a path relative to %s", p, strings.Join(s.paths, ", "), s.paths[0])
	}
	return Path{Abs: abs, Mount: m, Display: s.Display(abs)}, nil
}

// mountOf returns the innermost mount containing abs.
func (s Set) mountOf(abs string) (string, bool) {
	if i := s.mountIndex(abs); i >= 0 {
		return s.paths[i], true
	}
	return "", false
}

// mountIndex returns the index in paths of the innermost mount holding
// abs, or -1.
func (s Set) mountIndex(abs string) int {
	best := -1
	for i, m := range s.paths {
		if within(m, abs) && (best < 0 || len(m) > len(s.paths[best])) {
			best = i
		}
	}
	return best
}

// within reports whether p is dir or lies below it. It allocates nothing:
// a search asks it several times for every file.
func within(dir, p string) bool {
	return p == dir || len(p) > len(dir) && p[len(dir)] == '/' && p[:len(dir)] == dir
}

// Display returns abs as a model should see it: relative to the
// workspace when inside it ("." for the workspace itself), else absolute.
func (s Set) Display(abs string) string {
	if len(s.paths) > 0 && within(s.paths[0], abs) {
		if abs == s.paths[0] {
			return "."
		}
		return abs[len(s.paths[0])+1:]
	}
	return abs
}

// errROFS is what a write to a read-only mount fails with.
var errROFS = syscall.EROFS

// FromOS turns an error from the os package into an *Error with the
// right code; shown is the path as the model gave it.
func FromOS(shown string, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Errorf(CodeFileNotFound, "%s does not exist", shown)
	case errors.Is(err, errROFS):
		return Errorf(CodePermissionDenied, "%s is on a read-only mount", shown)
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.EPERM):
		return Errorf(CodePermissionDenied, "%s cannot be accessed: it is outside the mounted directories (a symbolic link leading out, or no permission)", shown)
	case errors.Is(err, syscall.ENOTDIR):
		return Errorf(CodeFileNotFound, "%s does not exist (a parent is not a directory)", shown)
	case errors.Is(err, syscall.EISDIR):
		return Errorf(CodeInvalidRequest, "%s is a directory", shown)
	case errors.Is(err, syscall.ENAMETOOLONG):
		return Errorf(CodeInvalidRequest, "%s: name too long", shown)
	}
	return Errorf(CodeFailed, "%s: %v", shown, unwrapPath(err))
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ParseSize parses a size written as people write them: "1048576", "64KiB",
// "10MiB", "1GiB", "10MB", "512kB".
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"kB", 1000}, {"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	var n int64
	if t == "" {
		return 0, fmt.Errorf("size %q: no number", s)
	}
	for _, c := range t {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("size %q: want a whole number with an optional unit (KiB, MiB, GiB)", s)
		}
		n = n*10 + int64(c-'0')
		if n > 1<<50 {
			return 0, fmt.Errorf("size %q is too large", s)
		}
	}
	return n * mult, nil
}
