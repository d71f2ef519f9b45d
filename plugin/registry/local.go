package registry

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Local is a tool shipped beside an application rather than in a
// registry: an artifact named by path in the configuration, with a
// manifest file that describes it. Both follow a registry's rules: signed
// by a trusted key (a .minisig beside each), the artifact the manifest
// names with its size and sha256.
type Local struct {
	Manifest *Manifest
	// Artifact is the manifest's artifact for this platform, and Path the
	// file it names.
	Artifact Artifact
	Path     string
	// Signer is the trusted key that signed both; empty when the operator
	// allowed them unsigned, and Unsigned then says why.
	Signer, Unsigned string
}

// OpenLocal reads the manifest at manifestPath and checks it and the
// artifact it names for goos/goarch (a path relative to the manifest) as
// a registry's: parsed against the schema, signatures by a trusted key
// (unless opt allows unsigned), size and sha256.
func (c *Client) OpenLocal(manifestPath, goos, goarch string, opt Options) (*Local, error) {
	raw, err := readSmallFile(manifestPath, MaxManifestSize)
	if err != nil {
		return nil, err
	}
	m, err := ParseManifest(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", manifestPath, err)
	}
	l := &Local{Manifest: m}
	unsigned := func(what string, err error) error {
		if opt.AllowUnsigned {
			l.Unsigned += what + ": " + err.Error() + "; "
			return nil
		}
		return fmt.Errorf("%s: the %s is %w (%v); refusing it (allow_unsigned = true on the tool accepts it)", manifestPath, what, ErrUnsigned, err)
	}
	signer, err := c.verifyFile(manifestPath, raw)
	if err != nil {
		if err := unsigned("manifest", err); err != nil {
			return nil, err
		}
	}
	art, err := m.ArtifactFor(goos, goarch)
	if err != nil {
		return nil, err
	}
	if filepath.IsAbs(art.URL) || !filepath.IsLocal(filepath.FromSlash(art.URL)) {
		return nil, fmt.Errorf("%s: a local tool's artifact is a path beside its manifest, not %s", manifestPath, art.URL)
	}
	l.Artifact, l.Path = art, filepath.Join(filepath.Dir(manifestPath), filepath.FromSlash(art.URL))
	if err := checkLocalArtifact(l.Path, art); err != nil {
		return nil, fmt.Errorf("%s: %w", manifestPath, err)
	}
	b, err := os.ReadFile(l.Path)
	if err != nil {
		return nil, err
	}
	if _, err := c.verifyFile(l.Path, b); err != nil {
		if err := unsigned("artifact", err); err != nil {
			return nil, err
		}
		signer = ""
	}
	l.Signer = signer
	if signer == "" && l.Unsigned == "" {
		l.Unsigned = "not signed"
	}
	return l, nil
}

// verifyFile checks name's .minisig over data.
func (c *Client) verifyFile(name string, data []byte) (string, error) {
	sig, err := readSmallFile(name+sigSuffix, maxSigSize)
	if errors.Is(err, fs.ErrNotExist) {
		return "", errors.New("there is no signature")
	}
	if err != nil {
		return "", err
	}
	return c.verifyBytes(sig, bytes.NewReader(data))
}

func readSmallFile(name string, max int64) ([]byte, error) {
	st, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if st.Size() > max {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d expected", name, st.Size(), max)
	}
	return os.ReadFile(name)
}
