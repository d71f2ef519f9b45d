// Package declared holds what an operator declares for a host to serve
// besides tools: prompts, fixed resources and resource templates. The
// configuration decoder (plugin/config) builds these values, checking every
// mistake at its line; the MCP server (mcp) serves them. Both import this
// package and neither imports the other.
//
// Text that takes arguments is parsed once, when it is built, into a Text:
// {{name}} places an argument. Expanding a Text is one pass over its parts,
// so an argument value that itself contains {{...}} is inserted as it is and
// never expanded again.
//
// Values are immutable once built and safe to share between goroutines.
package declared

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"unicode/utf8"
)

// MaxFileBytes caps a file a declaration names: an image or embedded
// resource of a prompt (read once, when the configuration loads) and a
// path-backed resource (checked at load and again at every read). Content
// this large belongs in a tool's output, not in a prompt.
const MaxFileBytes = 10 << 20

// Sentinel errors of reading a declared file.
var (
	// ErrTooLarge is returned for a file over its cap.
	ErrTooLarge = errors.New("file too large")
	// ErrOutside is returned for a path that leaves the directory it must
	// stay in (through "..", an absolute path, or a symlink).
	ErrOutside = errors.New("path leaves its directory")
)

// Prompt is a prompt template: messages whose text takes arguments.
type Prompt struct {
	Name, Title, Description string
	Arguments                []Argument
	Messages                 []Message
}

// Argument is one argument of a prompt.
type Argument struct {
	Name, Title, Description string
	// Required arguments must be given to get the prompt; a missing
	// optional one expands to "".
	Required bool
	// Completions are the values offered to clients that complete the
	// argument (values starting with what the user typed).
	Completions []string
}

// Argument returns the prompt's argument of that name.
func (p *Prompt) Argument(name string) (Argument, bool) {
	for _, a := range p.Arguments {
		if a.Name == name {
			return a, true
		}
	}
	return Argument{}, false
}

// Role is who speaks a message: "user" or "assistant".
type Role string

// The roles of MCP messages.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one message of a prompt. Exactly one of Text, Image and
// Resource is set.
type Message struct {
	Role     Role
	Text     *Text
	Image    *Image
	Resource *EmbeddedResource
}

// Image is an image a prompt shows, read when the configuration loads.
type Image struct {
	MIMEType string
	Data     []byte
}

// EmbeddedResource is a resource a prompt carries inline. Its URI and
// Text take arguments; Blob (from a file not read as text) does not.
type EmbeddedResource struct {
	URI      Text
	MIMEType string
	Text     *Text
	Blob     []byte
}

// Resource is a fixed resource: its Text, or the content of the file at
// Path, read afresh at every read (so that a change to it reaches clients
// that subscribed).
type Resource struct {
	URI, Name, Title, Description, MIMEType string
	// Text is the content of a resource without a Path.
	Text string
	// Path is the file of a path-backed resource. It is read through Root,
	// the directory it must stay in: a symlink swapped in after loading
	// that points elsewhere is refused at read time, not followed.
	Path, Root string
}

// Changes reports whether the resource's content can change while the
// host runs (it is read from a file).
func (r *Resource) Changes() bool { return r.Path != "" }

// Read returns the resource's content: its text, or its file's bytes.
func (r *Resource) Read() ([]byte, error) {
	if r.Path == "" {
		return []byte(r.Text), nil
	}
	return ReadFile(r.Root, r.Path, MaxFileBytes)
}

// Stamp returns what changes when the resource's file does (size,
// modification time and, on Linux, status change time and inode), for
// watching it.
func (r *Resource) Stamp() (string, error) {
	if r.Path == "" {
		return "", nil
	}
	root, rel, err := openRoot(r.Root, r.Path)
	if err != nil {
		return "", err
	}
	defer root.Close()
	fi, err := root.Stat(rel)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d/%d", fi.Size(), fi.ModTime().UnixNano()) + changeStamp(fi), nil
}

// Template is a resource template: a URI template whose variables are
// substituted into Text.
type Template struct {
	URITemplate                        URITemplate
	Name, Title, Description, MIMEType string
	Text                               Text
	// Completions maps a variable to the values offered to clients that
	// complete it.
	Completions map[string][]string
}

// ReadFile reads the file at path, which must lie inside root (after
// resolving symlinks: it is opened through an os.Root) and be a regular
// file, refusing more than max bytes.
func ReadFile(root, path string, max int64) ([]byte, error) {
	f, err := openFile(root, path, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The file may grow between Stat and Read.
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s is over the %d bytes allowed: %w", path, max, ErrTooLarge)
	}
	return data, nil
}

// FileType refuses what ReadFile refuses, and returns what MIMEType says
// of the file, reading no more of it than that takes: none when its
// extension tells, else the first 512 bytes (all http.DetectContentType
// looks at). A path-backed resource is checked so when the configuration
// loads, and read whole only when a client reads it.
func FileType(root, path string, max int64) (string, error) {
	f, err := openFile(root, path, max)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if t := mime.TypeByExtension(filepath.Ext(path)); t != "" {
		return t, nil
	}
	head := make([]byte, 512)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return "", err
	}
	return http.DetectContentType(head[:n]), nil
}

// openFile opens the file at path, inside root, for reading: a regular
// file of at most max bytes when opened.
func openFile(root, path string, max int64) (*os.File, error) {
	r, rel, err := openRoot(root, path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	f, err := r.OpenFile(rel, readFlags(), 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
	case fi.IsDir():
		err = fmt.Errorf("%s is a directory", path)
	case !fi.Mode().IsRegular():
		// A FIFO would block the read until someone writes to it, a
		// device could read without end: neither is a file to serve.
		err = fmt.Errorf("%s is not a regular file", path)
	case fi.Size() > max:
		err = fmt.Errorf("%s is %d bytes, over the %d allowed: %w", path, fi.Size(), max, ErrTooLarge)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// readFlags opens a file for reading without blocking: opening a FIFO
// blocks until someone opens it for writing, so a FIFO put where a
// declared file was would hang the configuration's loading, or every
// read of the resource, before the check that refuses it
// (extism/internal/hostfs opens guests' files the same way).
func readFlags() int {
	if runtime.GOOS == "windows" {
		return os.O_RDONLY
	}
	return os.O_RDONLY | syscall.O_NONBLOCK
}

// openRoot opens root and returns path relative to it, refusing a path
// that is lexically outside it; os.Root refuses symlinks that lead out.
func openRoot(root, path string) (*os.Root, string, error) {
	rel, err := filepath.Rel(root, path)
	if err != nil || !filepath.IsLocal(rel) {
		return nil, "", fmt.Errorf("%s is not inside %s: %w", path, root, ErrOutside)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, "", err
	}
	return r, rel, nil
}

// MIMEType guesses the media type of a file from its extension, else from
// its first bytes.
func MIMEType(path string, data []byte) string {
	if t := mime.TypeByExtension(filepath.Ext(path)); t != "" {
		return t
	}
	return http.DetectContentType(data)
}

// isText reports whether content of the given media type is sent as text
// (when it is valid UTF-8) rather than base64.
func isText(mimeType string) bool {
	t, _, _ := strings.Cut(mimeType, ";")
	t = strings.TrimSpace(strings.ToLower(t))
	switch {
	case t == "", strings.HasPrefix(t, "text/"):
		return true
	case t == "application/json", t == "application/xml", t == "application/yaml",
		t == "application/toml", t == "application/javascript", t == "image/svg+xml",
		strings.HasSuffix(t, "+json"), strings.HasSuffix(t, "+xml"):
		return true
	}
	return false
}

// TextOrBlob splits content into text (for a text media type and valid
// UTF-8) or a blob.
func TextOrBlob(mimeType string, data []byte) (text string, blob []byte) {
	if isText(mimeType) && utf8.Valid(data) {
		return string(data), nil
	}
	return "", data
}
