package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Cache is a content-addressed store of artifacts and manifests: a file is
// kept under its own sha256, written to a temporary file first, checked
// (size and digest) and only then renamed into place, so a partial or
// interrupted download never becomes a cached file, and two installs of
// the same artifact at once each write their own temporary file and the
// second rename replaces identical bytes.
type Cache struct {
	Dir string
}

// ErrDigestMismatch is wrapped by the error for bytes whose sha256 is not
// the one expected.
var ErrDigestMismatch = errors.New("sha256 mismatch")

// Path is where the file with sha256 digest (lower-case hex) is kept.
func (c *Cache) Path(digest string) string {
	return filepath.Join(c.Dir, "sha256", digest)
}

// Has reports whether the file with digest is in the cache, with the
// right size (its content is checked by whoever runs it: adapters pin
// the sha256).
func (c *Cache) Has(digest string, size int64) bool {
	st, err := os.Stat(c.Path(digest))
	return err == nil && st.Mode().IsRegular() && (size < 0 || st.Size() == size)
}

// Put copies r into the cache as the file with digest and size (size < 0:
// any), and returns its path. progress, if not nil, is called with the
// bytes copied so far. exec makes the file executable (a plugin binary).
func (c *Cache) Put(r io.Reader, digest string, size int64, exec bool, progress func(int64)) (string, error) {
	if len(digest) != 64 || strings.Trim(digest, "0123456789abcdef") != "" {
		return "", fmt.Errorf("cache: %q is not a sha256 in lower-case hex", digest)
	}
	final := c.Path(digest)
	tmpDir := filepath.Join(c.Dir, "tmp")
	for _, d := range []string{filepath.Dir(final), tmpDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", fmt.Errorf("cache: %w", err)
		}
	}
	f, err := os.CreateTemp(tmpDir, digest[:12]+"-*")
	if err != nil {
		return "", fmt.Errorf("cache: %w", err)
	}
	defer os.Remove(f.Name()) // after a successful rename, a no-op
	h := sha256.New()
	limit := size + 1
	if size < 0 {
		limit = 1 << 40
	}
	w := io.MultiWriter(f, h)
	if progress != nil {
		w = io.MultiWriter(w, progressWriter(progress))
	}
	n, err := io.Copy(w, io.LimitReader(r, limit))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		return "", fmt.Errorf("download interrupted after %d bytes: %w", n, err)
	case size >= 0 && n != size:
		if n > size {
			return "", fmt.Errorf("the artifact is larger than the %d bytes its manifest says", size)
		}
		return "", fmt.Errorf("the artifact is %d bytes, its manifest says %d", n, size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != digest {
		return "", fmt.Errorf("%w: the manifest says %s, the bytes are %s", ErrDigestMismatch, digest, got)
	}
	mode := fs.FileMode(0o444)
	if exec {
		mode = 0o555
	}
	if err := os.Chmod(f.Name(), mode); err != nil {
		return "", fmt.Errorf("cache: %w", err)
	}
	if err := os.Rename(f.Name(), final); err != nil {
		return "", fmt.Errorf("cache: %w", err)
	}
	return final, nil
}

type progressWriter func(int64)

func (p progressWriter) Write(b []byte) (int, error) {
	p(int64(len(b)))
	return len(b), nil
}

// Verify checks that the cached file with digest still has those bytes.
func (c *Cache) Verify(digest string) error {
	f, err := os.Open(c.Path(digest))
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != digest {
		return fmt.Errorf("%w: %s holds bytes with sha256 %s", ErrDigestMismatch, c.Path(digest), got)
	}
	return nil
}

// Size returns the bytes the cache holds, and the number of files.
func (c *Cache) Size() (int64, int, error) {
	var total int64
	var n int
	err := filepath.WalkDir(filepath.Join(c.Dir, "sha256"), func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			total += info.Size()
			n++
		}
		return nil
	})
	return total, n, err
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
