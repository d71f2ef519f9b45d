package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/atomicfile"
	"github.com/toolhost/toolhost/internal/minisign"
)

// SignFile signs the file name with key and writes name.minisig beside it,
// with a trusted comment naming the file and the time, as minisign does.
func SignFile(name string, key minisign.PrivateKey) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	comment := fmt.Sprintf("timestamp:%d\tfile:%s\thashed", time.Now().Unix(), filepath.Base(name))
	sig, err := key.SignReader(f, comment)
	if err != nil {
		return "", err
	}
	out := name + sigSuffix
	if err := os.WriteFile(out, sig.Marshal(), 0o644); err != nil {
		return "", err
	}
	return out, nil
}

// VerifyFile checks name against name.minisig and returns the key ID of
// the key, trusted by c and not withdrawn, that signed it.
func (c *Client) VerifyFile(name string) (string, error) {
	sigBytes, err := os.ReadFile(name + sigSuffix)
	if err != nil {
		return "", err
	}
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return c.verifyBytes(sigBytes, f)
}

// Publish copies the manifest at manifestPath and the artifacts it names
// (paths relative to it) into the directory registry root, signs each
// with key, and adds the version to the registry's index. A published
// version is immutable: publishing it again with other bytes is refused.
func Publish(root, manifestPath string, key minisign.PrivateKey) (*Manifest, error) {
	raw, err := os.ReadFile(manifestPath)
	if err != nil {
		return nil, err
	}
	m, err := ParseManifest(raw)
	if err != nil {
		return nil, err
	}
	arts := []Artifact{}
	if m.Artifact != nil {
		arts = append(arts, *m.Artifact)
	}
	for _, plat := range slices.Sorted(maps.Keys(m.Artifacts)) {
		arts = append(arts, m.Artifacts[plat])
	}
	srcDir := filepath.Dir(manifestPath)
	for _, a := range arts {
		if strings.Contains(a.URL, "://") {
			return nil, fmt.Errorf("%s: artifact %s is a URL; publish ships artifacts in the registry, so name them by a path relative to the manifest", m.Ref(), a.URL)
		}
		if err := checkLocalArtifact(filepath.Join(srcDir, filepath.FromSlash(a.URL)), a); err != nil {
			return nil, fmt.Errorf("%s: %w", m.Ref(), err)
		}
	}
	dst := filepath.Join(root, filepath.FromSlash(versionDir(m.ID, m.Version)))
	if old, err := os.ReadFile(filepath.Join(dst, manifestFile)); err == nil {
		if !bytes.Equal(old, raw) {
			return nil, fmt.Errorf("%s is already published in %s with another manifest; a version never changes once published: publish a new version", m.Ref(), root)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return nil, err
	}
	for _, a := range arts {
		to := filepath.Join(dst, filepath.FromSlash(a.URL))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return nil, err
		}
		if err := copyFile(filepath.Join(srcDir, filepath.FromSlash(a.URL)), to); err != nil {
			return nil, err
		}
		if _, err := SignFile(to, key); err != nil {
			return nil, err
		}
	}
	mf := filepath.Join(dst, manifestFile)
	if err := os.WriteFile(mf, raw, 0o644); err != nil {
		return nil, err
	}
	if _, err := SignFile(mf, key); err != nil {
		return nil, err
	}
	return m, addToIndex(root, m)
}

// checkLocalArtifact checks a file against the size and digest its
// manifest gives, and says what they should be when they differ.
func checkLocalArtifact(name string, a Artifact) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return err
	}
	got := hex.EncodeToString(h.Sum(nil))
	if n != a.SizeBytes || got != a.SHA256 {
		return fmt.Errorf("%s is %d bytes with sha256 %s; the manifest says %d bytes, sha256 %s", name, n, got, a.SizeBytes, a.SHA256)
	}
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	return atomicfile.Write(to, atomicfile.Options{Perm: 0o644}, func(w io.Writer) error {
		_, err := io.Copy(w, in)
		return err
	})
}

// addToIndex adds m's version to root/index.json.
func addToIndex(root string, m *Manifest) error {
	name := filepath.Join(root, indexFile)
	ix := Index{IndexVersion: 1, Tools: map[string]IndexEntry{}}
	if b, err := os.ReadFile(name); err == nil {
		if err := json.Unmarshal(b, &ix); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if ix.Tools == nil {
			ix.Tools = map[string]IndexEntry{}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	e := ix.Tools[m.ID]
	if !slices.Contains(e.Versions, m.Version) {
		e.Versions = append(e.Versions, m.Version)
	}
	e.Versions = sortedVersions(e.Versions)
	if e.Versions[len(e.Versions)-1] == m.Version {
		e.Description = m.Description
	}
	if m.Deprecated != nil && !slices.Contains(e.Deprecated, m.Version) {
		e.Deprecated = sortedVersions(append(e.Deprecated, m.Version))
	}
	ix.Tools[m.ID] = e
	b, err := json.MarshalIndent(&ix, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(name, append(b, '\n'), atomicfile.Options{Perm: 0o644})
}
