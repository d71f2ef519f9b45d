package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/toolhost/toolhost/internal/minisign"
)

// ArtifactType is the OCI artifact type of a tool version.
const ArtifactType = "application/vnd.toolhost.tool.v1"

// fileMediaType is the media type of every layer: a file of the version's
// directory, named by its title annotation.
const fileMediaType = "application/vnd.toolhost.file.v1"

// OCISource is a registry in an OCI distribution registry: each tool id is
// a repository (<host>/<prefix>/<publisher>/<name>), each version a tag,
// and the files of a version's directory (manifest.json, the artifacts and
// their signatures) are the layers of one OCI artifact, each named by its
// org.opencontainers.image.title annotation. oras-go pulls them and checks
// every blob's digest; the manifest's sha256 and the signatures are then
// checked as for any source.
type OCISource struct {
	RegistryName string
	// Host is host[:port]; Prefix the repository path before the tool id.
	Host, Prefix string
	// PlainHTTP talks HTTP instead of HTTPS (loopback hosts only).
	PlainHTTP bool

	mu        sync.Mutex
	manifests map[string]*ocispec.Manifest // "id/version" -> its OCI manifest
}

// NewOCISource reads "oci://host[:port]/prefix".
func NewOCISource(name, ref string) (*OCISource, error) {
	rest, ok := strings.CutPrefix(ref, "oci://")
	if !ok {
		return nil, fmt.Errorf("registry %s: %q: an OCI registry is written oci://host[:port]/prefix", name, ref)
	}
	host, prefix, _ := strings.Cut(rest, "/")
	prefix = strings.Trim(prefix, "/")
	if host == "" || strings.ContainsAny(host, "@?#") {
		return nil, fmt.Errorf("registry %s: %q has no host", name, ref)
	}
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	s := &OCISource{RegistryName: name, Host: host, Prefix: prefix, PlainHTTP: isLoopbackHost(strings.Trim(h, "[]"))}
	if _, err := s.repository("acme/check"); err != nil {
		return nil, fmt.Errorf("registry %s: %q: %w", name, ref, err)
	}
	return s, nil
}

// Name implements Source.
func (s *OCISource) Name() string { return s.RegistryName }

// Location implements Source.
func (s *OCISource) Location() string { return "oci://" + path.Join(s.Host, s.Prefix) }

func (s *OCISource) repoName(id string) string { return path.Join(s.Prefix, id) }

func (s *OCISource) repository(id string) (*remote.Repository, error) {
	r, err := remote.NewRepository(s.Host + "/" + s.repoName(id))
	if err != nil {
		return nil, err
	}
	r.PlainHTTP = s.PlainHTTP
	return r, nil
}

// Versions lists the tags of id's repository that are versions.
func (s *OCISource) Versions(ctx context.Context, id string) ([]string, error) {
	repo, err := s.repository(id)
	if err != nil {
		return nil, err
	}
	var out []string
	err = repo.Tags(ctx, "", func(tags []string) error {
		for _, t := range tags {
			if versionPattern.MatchString(t) {
				out = append(out, t)
			}
		}
		return nil
	})
	if errors.Is(err, errdef.ErrNotFound) || isNameUnknown(err) {
		return nil, fmt.Errorf("registry %s: %s: %w", s.RegistryName, id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("registry %s: %w", s.RegistryName, err)
	}
	return out, nil
}

func isNameUnknown(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "NAME_UNKNOWN") || strings.Contains(err.Error(), "404"))
}

// Open implements Source: index.json is made from the registry's catalog
// (tools only: repositories under the prefix named publisher/name), the
// other files are layers of the version's artifact.
func (s *OCISource) Open(ctx context.Context, rel string, max int64) (io.ReadCloser, int64, error) {
	if rel == indexFile {
		b, err := s.index(ctx)
		if err != nil {
			return nil, 0, err
		}
		if int64(len(b)) > max {
			return nil, 0, fmt.Errorf("registry %s: the index is more than %d bytes", s.RegistryName, max)
		}
		return io.NopCloser(bytes.NewReader(b)), int64(len(b)), nil
	}
	parts := strings.SplitN(rel, "/", 4)
	if len(parts) != 4 || !idPattern.MatchString(parts[0]+"/"+parts[1]) || !versionPattern.MatchString(parts[2]) || parts[3] == "" || slices.Contains(strings.Split(parts[3], "/"), "..") {
		return nil, 0, fmt.Errorf("registry %s: %q is not a file of a tool version", s.RegistryName, rel)
	}
	id, version, file := parts[0]+"/"+parts[1], parts[2], parts[3]
	repo, err := s.repository(id)
	if err != nil {
		return nil, 0, err
	}
	m, err := s.manifest(ctx, repo, id, version)
	if err != nil {
		return nil, 0, err
	}
	i := slices.IndexFunc(m.Layers, func(d ocispec.Descriptor) bool { return d.Annotations[ocispec.AnnotationTitle] == file })
	if i < 0 {
		return nil, 0, fmt.Errorf("registry %s: %s@%s has no file %s: %w", s.RegistryName, id, version, file, ErrNotFound)
	}
	d := m.Layers[i]
	if d.Size > max {
		return nil, 0, fmt.Errorf("registry %s: %s is %d bytes, more than the %d expected", s.RegistryName, rel, d.Size, max)
	}
	rc, err := repo.Fetch(ctx, d)
	if err != nil {
		return nil, 0, fmt.Errorf("registry %s: %s: %w", s.RegistryName, rel, err)
	}
	// The blob's digest is checked as it is read: a mismatch is an error
	// at its end, so a cache never keeps it.
	return &verifyingReader{r: content.NewVerifyReader(rc, d), c: rc}, d.Size, nil
}

type verifyingReader struct {
	r *content.VerifyReader
	c io.Closer
}

func (v *verifyingReader) Read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	if err == io.EOF {
		if verr := v.r.Verify(); verr != nil {
			return n, verr
		}
	}
	return n, err
}

func (v *verifyingReader) Close() error { return v.c.Close() }

// manifest fetches (once) the OCI manifest tagged version in id's
// repository, and checks it is a toolhost tool.
func (s *OCISource) manifest(ctx context.Context, repo *remote.Repository, id, version string) (*ocispec.Manifest, error) {
	key := id + "/" + version
	s.mu.Lock()
	m, ok := s.manifests[key]
	s.mu.Unlock()
	if ok {
		return m, nil
	}
	desc, err := repo.Resolve(ctx, version)
	if errors.Is(err, errdef.ErrNotFound) || isNameUnknown(err) {
		return nil, fmt.Errorf("registry %s: %s@%s: %w", s.RegistryName, id, version, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("registry %s: %s@%s: %w", s.RegistryName, id, version, err)
	}
	if desc.Size > MaxManifestSize {
		return nil, fmt.Errorf("registry %s: %s@%s: the OCI manifest is %d bytes", s.RegistryName, id, version, desc.Size)
	}
	b, err := content.FetchAll(ctx, repo, desc)
	if err != nil {
		return nil, fmt.Errorf("registry %s: %s@%s: %w", s.RegistryName, id, version, err)
	}
	m = new(ocispec.Manifest)
	if err := json.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("registry %s: %s@%s: %w", s.RegistryName, id, version, err)
	}
	if m.ArtifactType != ArtifactType {
		return nil, fmt.Errorf("registry %s: %s@%s is a %q artifact, not a toolhost tool (%s)", s.RegistryName, id, version, m.ArtifactType, ArtifactType)
	}
	s.mu.Lock()
	if s.manifests == nil {
		s.manifests = map[string]*ocispec.Manifest{}
	}
	s.manifests[key] = m
	s.mu.Unlock()
	return m, nil
}

// index builds index.json from the catalog.
func (s *OCISource) index(ctx context.Context) ([]byte, error) {
	reg, err := remote.NewRegistry(s.Host)
	if err != nil {
		return nil, err
	}
	reg.PlainHTTP = s.PlainHTTP
	ix := Index{IndexVersion: 1, Tools: map[string]IndexEntry{}}
	var ids []string
	err = reg.Repositories(ctx, "", func(repos []string) error {
		for _, r := range repos {
			rest, ok := strings.CutPrefix(r, s.Prefix)
			if s.Prefix != "" && (!ok || !strings.HasPrefix(rest, "/")) {
				continue
			}
			if id := strings.TrimPrefix(rest, "/"); idPattern.MatchString(id) {
				ids = append(ids, id)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("registry %s: listing repositories (the registry must serve its catalog): %w", s.RegistryName, err)
	}
	for _, id := range ids {
		vs, err := s.Versions(ctx, id)
		if err != nil || len(vs) == 0 {
			continue
		}
		ix.Tools[id] = IndexEntry{Versions: sortedVersions(vs)}
	}
	return json.Marshal(&ix)
}

// PublishOCI publishes the manifest at manifestPath and its artifacts,
// signed with key, as one OCI artifact tagged with the version in dst's
// repository for the tool. As with Publish, a version never changes:
// pushing an existing tag is refused.
func PublishOCI(ctx context.Context, dst *OCISource, manifestPath string, key minisign.PrivateKey) (*Manifest, error) {
	staging, err := os.MkdirTemp("", "toolhost-publish-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(staging)
	m, err := Publish(staging, manifestPath, key)
	if err != nil {
		return nil, err
	}
	repo, err := dst.repository(m.ID)
	if err != nil {
		return nil, err
	}
	if _, err := repo.Resolve(ctx, m.Version); err == nil {
		return nil, fmt.Errorf("%s is already published in %s; a version never changes once published: publish a new version", m.Ref(), dst.Location())
	}
	dir := filepath.Join(staging, filepath.FromSlash(versionDir(m.ID, m.Version)))
	var layers []ocispec.Descriptor
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		desc := content.NewDescriptorFromBytes(fileMediaType, b)
		desc.Annotations = map[string]string{ocispec.AnnotationTitle: filepath.ToSlash(rel)}
		if err := repo.Push(ctx, desc, bytes.NewReader(b)); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
			return fmt.Errorf("pushing %s: %w", rel, err)
		}
		layers = append(layers, desc)
		return nil
	})
	if err != nil {
		return nil, err
	}
	desc, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, ArtifactType, oras.PackManifestOptions{
		Layers:              layers,
		ManifestAnnotations: map[string]string{ocispec.AnnotationCreated: "1970-01-01T00:00:00Z", "io.toolhost.tool": m.Ref()},
	})
	if err != nil {
		return nil, err
	}
	if err := repo.Tag(ctx, desc, m.Version); err != nil {
		return nil, err
	}
	return m, nil
}
