package registry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/minisign"
)

// Client resolves references against registries, verifies what they
// serve and installs artifacts into a cache.
type Client struct {
	// Sources are searched in order: the first registry whose index lists
	// a tool id serves that id (a later registry cannot shadow it).
	Sources []Source
	// Trust are the public keys whose signatures are accepted.
	Trust []minisign.PublicKey
	// Revoked and Expires withdraw trust: a signature by a revoked key is
	// refused, and by a key past its expiry date.
	Revoked []minisign.KeyID
	Expires map[minisign.KeyID]time.Time
	// Now is the clock for expiry; nil: time.Now.
	Now   func() time.Time
	Cache *Cache
	// HTTP fetches artifacts named by an https URL; nil: a default client.
	HTTP *http.Client
	// GOOS and GOARCH pick a subprocess tool's binary; empty: this host's.
	GOOS, GOARCH string
	// Progress, if set, is told of each download: its name and size, then
	// the bytes received as they arrive, then done.
	Progress func(name string, size int64) (received func(int64), done func())
}

// ErrUnsigned is wrapped by the error for a manifest or artifact without
// a valid signature by a trusted key.
var ErrUnsigned = errors.New("not signed by a trusted key")

// Resolved is one version of a tool found in a registry, its manifest
// checked and its signature verified.
type Resolved struct {
	Ref      Ref
	Manifest *Manifest
	// Raw is the manifest as signed.
	Raw    []byte
	Source Source
	// Signer is the ID of the trusted key that signed the manifest; empty
	// when it is unsigned and the operator allowed that (Unsigned says why).
	Signer   string
	Unsigned string
	// Versions are every version the registry lists for the id.
	Versions []string
}

// Options are per-tool choices of the operator.
type Options struct {
	// AllowUnsigned accepts a manifest or artifact that is unsigned or not
	// signed by a trusted key. The caller must say so loudly.
	AllowUnsigned bool
}

// Resolve finds the newest version ref allows in the first registry that
// lists ref's id, and fetches and verifies its manifest.
func (c *Client) Resolve(ctx context.Context, ref Ref, opt Options) (*Resolved, error) {
	if len(c.Sources) == 0 {
		return nil, errors.New("no registry is configured: add a registry \"NAME\" { path = ... } or { url = ... } block")
	}
	var searched []string
	for _, src := range c.Sources {
		versions, err := listVersions(ctx, src, ref.ID)
		if err != nil {
			return nil, err
		}
		if len(versions) == 0 {
			searched = append(searched, src.Name())
			continue
		}
		v, ok := ref.Constraint.Best(versions)
		if !ok {
			return nil, fmt.Errorf("%s: registry %s has no version that %q allows (it has %s)", ref.ID, src.Name(), ref.Constraint.String(), strings.Join(sortedVersions(versions), ", "))
		}
		res, err := c.fetchManifest(ctx, src, ref.ID, v, opt)
		if err != nil {
			return nil, err
		}
		res.Ref, res.Versions = ref, sortedVersions(versions)
		return res, nil
	}
	return nil, fmt.Errorf("%s: no registry lists this tool (searched %s)", ref.ID, strings.Join(searched, ", "))
}

// versionLister is a source that lists an id's versions itself (an OCI
// registry's tags) rather than through index.json.
type versionLister interface {
	Versions(ctx context.Context, id string) ([]string, error)
}

// listVersions returns the versions src has of id; none if it does not
// have the id.
func listVersions(ctx context.Context, src Source, id string) ([]string, error) {
	if vl, ok := src.(versionLister); ok {
		vs, err := vl.Versions(ctx, id)
		if errors.Is(err, ErrNotFound) {
			return nil, nil
		}
		return vs, err
	}
	ix, err := ReadIndex(ctx, src)
	if err != nil {
		return nil, err
	}
	return ix.Tools[id].Versions, nil
}

func sortedVersions(vs []string) []string {
	out := slices.Clone(vs)
	slices.SortFunc(out, func(a, b string) int { return compareVersions(a, b) })
	return out
}

// fetchManifest reads, verifies and parses id@version's manifest.
func (c *Client) fetchManifest(ctx context.Context, src Source, id, version string, opt Options) (*Resolved, error) {
	dir := versionDir(id, version)
	raw, err := readAll(ctx, src, path.Join(dir, manifestFile), MaxManifestSize)
	if err != nil {
		return nil, err
	}
	res := &Resolved{Raw: raw, Source: src}
	signer, err := c.verify(ctx, src, path.Join(dir, manifestFile+sigSuffix), bytes.NewReader(raw))
	switch {
	case err == nil:
		res.Signer = signer
	case opt.AllowUnsigned:
		res.Unsigned = err.Error()
	default:
		return nil, fmt.Errorf("%s@%s from registry %s: the manifest is %w (%v); refusing it (allow_unsigned = true on the tool accepts it)", id, version, src.Name(), ErrUnsigned, err)
	}
	m, err := ParseManifest(raw)
	if err != nil {
		return nil, fmt.Errorf("%s@%s from registry %s: %w", id, version, src.Name(), err)
	}
	if m.ID != id || m.Version != version {
		return nil, fmt.Errorf("registry %s serves %s under %s@%s: refusing it", src.Name(), m.Ref(), id, version)
	}
	res.Manifest = m
	return res, nil
}

// verify checks the signature file at sigPath over data against the
// trusted keys and returns the signer's key ID.
func (c *Client) verify(ctx context.Context, src Source, sigPath string, data io.ReadSeeker) (string, error) {
	sigBytes, err := readAll(ctx, src, sigPath, maxSigSize)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return "", errors.New("there is no signature")
		}
		return "", err
	}
	return c.verifyBytes(sigBytes, data)
}

// Withdrawn says why the key id may no longer be trusted (revoked, or past
// its expiry date), or nil.
func (c *Client) Withdrawn(id minisign.KeyID) error {
	if slices.Contains(c.Revoked, id) {
		return fmt.Errorf("signed by key %s, which is revoked (trust { revoked })", id)
	}
	if exp, ok := c.Expires[id]; ok {
		now := time.Now
		if c.Now != nil {
			now = c.Now
		}
		if !now().Before(exp) {
			return fmt.Errorf("signed by key %s, which expired on %s (trust { expires })", id, exp.Format(time.DateOnly))
		}
	}
	return nil
}

func (c *Client) verifyBytes(sigBytes []byte, data io.ReadSeeker) (string, error) {
	sig, err := minisign.ParseSignature(sigBytes)
	if err != nil {
		return "", err
	}
	if err := c.Withdrawn(sig.KeyID); err != nil {
		return "", err
	}
	if len(c.Trust) == 0 {
		return "", fmt.Errorf("signed by key %s, but no key is trusted (trust { keys = [...] })", sig.KeyID)
	}
	for _, k := range c.Trust {
		if k.ID != sig.KeyID {
			continue
		}
		if _, err := data.Seek(0, io.SeekStart); err != nil {
			return "", err
		}
		if err := k.VerifyReader(data, sig); err != nil {
			return "", fmt.Errorf("the signature by key %s does not verify: %w", sig.KeyID, err)
		}
		return sig.KeyID.String(), nil
	}
	return "", fmt.Errorf("signed by key %s, which is not trusted", sig.KeyID)
}

// Installed is a resolved version whose artifact for this platform is in
// the cache.
type Installed struct {
	*Resolved
	// Platform is os/arch for a subprocess tool's binary, "" for wasm.
	Platform     string
	Artifact     Artifact
	ArtifactPath string
	// ManifestSHA256 is the digest of Raw, kept in the cache too.
	ManifestSHA256 string
	// ArtifactUnsigned says why the artifact's signature was not accepted
	// when the operator allowed that.
	ArtifactUnsigned string
}

// Install puts res's artifact for this platform and its manifest into the
// cache, verifying size, sha256 and signature.
func (c *Client) Install(ctx context.Context, res *Resolved, opt Options) (*Installed, error) {
	goos, goarch := c.GOOS, c.GOARCH
	if goos == "" {
		goos, goarch = runtime.GOOS, runtime.GOARCH
	}
	m := res.Manifest
	art, err := m.ArtifactFor(goos, goarch)
	if err != nil {
		return nil, err
	}
	in := &Installed{Resolved: res, Artifact: art}
	if m.Kind == "subprocess" {
		in.Platform = goos + "/" + goarch
	}
	if !c.Cache.Has(art.SHA256, art.SizeBytes) {
		if err := c.download(ctx, res, art); err != nil {
			return nil, fmt.Errorf("%s: %w", m.Ref(), err)
		}
	}
	in.ArtifactPath = c.Cache.Path(art.SHA256)
	// The manifest pins the artifact's digest and is itself signed; the
	// artifact's own signature is checked too, so that a publisher's key
	// vouches for the bytes directly.
	f, err := os.Open(in.ArtifactPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	signer, err := c.verifyArtifactSig(ctx, res, art, f)
	switch {
	case err == nil:
		_ = signer
	case opt.AllowUnsigned:
		in.ArtifactUnsigned = err.Error()
	default:
		return nil, fmt.Errorf("%s: the artifact %s is %w (%v); refusing it (allow_unsigned = true on the tool accepts it)", m.Ref(), art.URL, ErrUnsigned, err)
	}
	in.ManifestSHA256 = sha256Hex(res.Raw)
	if _, err := c.Cache.Put(bytes.NewReader(res.Raw), in.ManifestSHA256, int64(len(res.Raw)), false, nil); err != nil {
		return nil, err
	}
	return in, nil
}

// artifactReader opens an artifact: a path relative to the manifest, from
// the same registry, or an https URL.
func (c *Client) artifactReader(ctx context.Context, res *Resolved, rawURL string, max int64) (io.ReadCloser, error) {
	if u, err := url.Parse(rawURL); err == nil && u.Scheme != "" {
		hc := c.HTTP
		if hc == nil {
			hc = defaultClient
		}
		rc, _, err := httpGet(ctx, hc, u.String(), res.Source.Name(), max)
		return rc, err
	}
	rel := path.Join(versionDir(res.Manifest.ID, res.Manifest.Version), rawURL)
	rc, _, err := res.Source.Open(ctx, rel, max)
	return rc, err
}

func (c *Client) download(ctx context.Context, res *Resolved, art Artifact) error {
	rc, err := c.artifactReader(ctx, res, art.URL, art.SizeBytes)
	if err != nil {
		return err
	}
	defer rc.Close()
	var received func(int64)
	if c.Progress != nil {
		var done func()
		received, done = c.Progress(path.Base(art.URL), art.SizeBytes)
		defer done()
	}
	_, err = c.Cache.Put(rc, art.SHA256, art.SizeBytes, res.Manifest.Kind == "subprocess", received)
	return err
}

func (c *Client) verifyArtifactSig(ctx context.Context, res *Resolved, art Artifact, data io.ReadSeeker) (string, error) {
	rc, err := c.artifactReader(ctx, res, art.URL+sigSuffix, maxSigSize)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return "", errors.New("there is no signature")
		}
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxSigSize+1))
	if err != nil {
		return "", err
	}
	return c.verifyBytes(b, data)
}
