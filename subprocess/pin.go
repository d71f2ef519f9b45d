package subprocess

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/toolhost/toolhost/plugin"
)

// pinnedBinary is a plugin executable pinned by sha256. Every start opens the
// file, checks the open descriptor with go-plugin's SecureConfig (unless the
// same inode, unchanged since its last check, was verified already) and
// hands that descriptor to the shim, which execs it: what runs is what was
// hashed, not whatever the path names a moment later.
type pinnedBinary struct {
	path string
	sum  []byte

	mu       sync.Mutex
	verified string // fileKey of the last verified version
}

// open returns the verified executable, or a TOOL_UNAVAILABLE error wrapping
// goplugin.ErrChecksumsDoNotMatch when it no longer matches its pin.
//
// It also returns the file's version key (see fileKey).
func (b *pinnedBinary) open() (*os.File, string, error) {
	f, err := os.Open(b.path)
	if err != nil {
		return nil, "", plugin.Errorf(plugin.CodeToolUnavailable, "plugin binary: %w", err)
	}
	key, err := fileKey(f)
	if err != nil {
		f.Close()
		return nil, "", plugin.Errorf(plugin.CodeToolUnavailable, "plugin binary: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if key == b.verified {
		return f, key, nil
	}
	sc := &goplugin.SecureConfig{Checksum: b.sum, Hash: sha256.New()}
	ok, err := sc.Check(fdPath(f))
	if err != nil {
		f.Close()
		return nil, "", plugin.Errorf(plugin.CodeToolUnavailable, "plugin binary %s: verifying checksum: %w", b.path, err)
	}
	if !ok {
		f.Close()
		return nil, "", plugin.Errorf(plugin.CodeToolUnavailable,
			"plugin binary %s does not match its pinned sha256 %x; refusing to start it: %w",
			b.path, b.sum, goplugin.ErrChecksumsDoNotMatch)
	}
	b.verified = key
	return f, key, nil
}

// fdPath names an open file through /proc, so a check reads the same inode
// that will be exec'd.
func fdPath(f *os.File) string {
	return "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
}

// FileSHA256 returns the hex sha256 of the file at path: the value an
// operator pins a plugin with (source.sha256).
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// parsePin decodes a hex sha256 pin.
func parsePin(s string) ([]byte, error) {
	s = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "sha256:")
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("sha256 %q: want 64 hex digits", s)
	}
	return b, nil
}

// resolvePluginPath resolves a plugin path. With a plugin directory set, a
// relative path is taken inside it, and the final path — after symlinks —
// must stay inside it, so "../" or a symlink cannot escape. Without one the
// path must be absolute.
func resolvePluginPath(dir, path string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("no plugin path")
	}
	if strings.ContainsRune(path, 0) {
		return "", fmt.Errorf("plugin path contains a NUL byte")
	}
	if dir == "" {
		if !filepath.IsAbs(path) {
			return "", fmt.Errorf("plugin path %q must be absolute (or set a plugin directory)", path)
		}
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return "", err
		}
		return real, nil
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("plugin directory: %w", err)
	}
	p := path
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(p))
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", fmt.Errorf("plugin path %q resolves to %s, outside the plugin directory %s", path, real, root)
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("plugin path %q is not a regular file", path)
	}
	return real, nil
}
