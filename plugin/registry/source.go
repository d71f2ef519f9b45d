package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A registry, directory or HTTPS, has one layout, so that a directory
// written by Publish can be served as it is by any static web server:
//
//	index.json                                  every tool: versions, description
//	<publisher>/<name>/<version>/manifest.json
//	<publisher>/<name>/<version>/manifest.json.minisig
//	<publisher>/<name>/<version>/<artifact>     what the manifest's relative URLs name
//	<publisher>/<name>/<version>/<artifact>.minisig
const (
	indexFile    = "index.json"
	manifestFile = "manifest.json"
	sigSuffix    = ".minisig"
	// maxIndexSize bounds index.json.
	maxIndexSize = 16 << 20
	// maxSigSize bounds a signature file (minisign's are ~300 bytes).
	maxSigSize = 4 << 10
)

// ErrNotFound is wrapped by a source's error for a file it does not have.
var ErrNotFound = errors.New("not found")

// Index lists what a registry offers.
type Index struct {
	IndexVersion int                   `json:"index_version"`
	Tools        map[string]IndexEntry `json:"tools"`
}

// IndexEntry is one tool in the index.
type IndexEntry struct {
	Description string   `json:"description,omitempty"`
	Versions    []string `json:"versions"`
	// Deprecated lists the versions whose manifest is deprecated.
	Deprecated []string `json:"deprecated,omitempty"`
}

// Source is where a registry's files come from.
type Source interface {
	// Name is the registry's name in the configuration.
	Name() string
	// Location is the directory or base URL, for messages.
	Location() string
	// Open returns the file at rel (slash-separated, relative to the
	// registry's root), reading at most max bytes; a missing file is an
	// error wrapping ErrNotFound.
	Open(ctx context.Context, rel string, max int64) (io.ReadCloser, int64, error)
}

// DirSource is a registry in a local directory.
type DirSource struct {
	RegistryName string
	Root         string
}

// Name implements Source.
func (d *DirSource) Name() string { return d.RegistryName }

// Location implements Source.
func (d *DirSource) Location() string { return d.Root }

// Open implements Source. rel never leaves Root: it is checked as a local
// path, and opened through an os.Root.
func (d *DirSource) Open(_ context.Context, rel string, max int64) (io.ReadCloser, int64, error) {
	if !filepath.IsLocal(filepath.FromSlash(rel)) {
		return nil, 0, fmt.Errorf("registry %s: %q is not a path inside the registry", d.RegistryName, rel)
	}
	root, err := os.OpenRoot(d.Root)
	if err != nil {
		return nil, 0, fmt.Errorf("registry %s: %w", d.RegistryName, err)
	}
	defer root.Close()
	f, err := root.Open(filepath.FromSlash(rel))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, fmt.Errorf("registry %s: %s: %w", d.RegistryName, rel, ErrNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("registry %s: %w", d.RegistryName, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("registry %s: %s is not a regular file", d.RegistryName, rel)
	}
	if st.Size() > max {
		f.Close()
		return nil, 0, fmt.Errorf("registry %s: %s is %d bytes, more than the %d expected", d.RegistryName, rel, st.Size(), max)
	}
	return f, st.Size(), nil
}

// HTTPSource is a registry served over HTTPS (plain HTTP only to loopback
// addresses, for tests and local mirrors).
type HTTPSource struct {
	RegistryName string
	Base         *url.URL
	Client       *http.Client // nil: a client with a 30 s header timeout
}

// NewHTTPSource checks base and returns the source.
func NewHTTPSource(name, base string) (*HTTPSource, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("registry %s: %w", name, err)
	}
	if u.User != nil {
		return nil, fmt.Errorf("registry %s: credentials in the URL are not allowed", name)
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && isLoopbackHost(u.Hostname()):
	default:
		return nil, fmt.Errorf("registry %s: %q: a registry URL must be https (http only for localhost)", name, base)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	return &HTTPSource{RegistryName: name, Base: u}, nil
}

func isLoopbackHost(h string) bool {
	return h == "localhost" || h == "127.0.0.1" || h == "::1"
}

// Name implements Source.
func (h *HTTPSource) Name() string { return h.RegistryName }

// Location implements Source.
func (h *HTTPSource) Location() string { return h.Base.String() }

var defaultClient = &http.Client{Transport: &http.Transport{
	Proxy:                 http.ProxyFromEnvironment,
	ResponseHeaderTimeout: 30 * time.Second,
	TLSHandshakeTimeout:   10 * time.Second,
}}

// Open implements Source.
func (h *HTTPSource) Open(ctx context.Context, rel string, max int64) (io.ReadCloser, int64, error) {
	if rel == "" || strings.HasPrefix(rel, "/") || slices.Contains(strings.Split(rel, "/"), "..") {
		return nil, 0, fmt.Errorf("registry %s: %q is not a path inside the registry", h.RegistryName, rel)
	}
	u := h.Base.JoinPath(rel)
	return httpGet(ctx, h.client(), u.String(), h.RegistryName, max)
}

func (h *HTTPSource) client() *http.Client {
	if h.Client != nil {
		return h.Client
	}
	return defaultClient
}

// httpGet fetches u, refusing bodies over max.
func httpGet(ctx context.Context, c *http.Client, u, who string, max int64) (io.ReadCloser, int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("registry %s: %w", who, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		resp.Body.Close()
		return nil, 0, fmt.Errorf("registry %s: %s: %w", who, u, ErrNotFound)
	case resp.StatusCode != http.StatusOK:
		resp.Body.Close()
		return nil, 0, fmt.Errorf("registry %s: %s: %s", who, u, resp.Status)
	case resp.ContentLength > max:
		resp.Body.Close()
		return nil, 0, fmt.Errorf("registry %s: %s is %d bytes, more than the %d expected", who, u, resp.ContentLength, max)
	}
	return resp.Body, resp.ContentLength, nil
}

// readAll reads a whole small file from src, refusing more than max bytes.
func readAll(ctx context.Context, src Source, rel string, max int64) ([]byte, error) {
	rc, _, err := src.Open(ctx, rel, max)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, max+1))
	if err != nil {
		return nil, fmt.Errorf("registry %s: reading %s: %w", src.Name(), rel, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("registry %s: %s is more than %d bytes", src.Name(), rel, max)
	}
	return b, nil
}

// ReadIndex reads a registry's index.json.
func ReadIndex(ctx context.Context, src Source) (*Index, error) {
	b, err := readAll(ctx, src, indexFile, maxIndexSize)
	if err != nil {
		return nil, err
	}
	var ix Index
	if err := json.Unmarshal(b, &ix); err != nil {
		return nil, fmt.Errorf("registry %s: index.json: %w", src.Name(), err)
	}
	if ix.IndexVersion != 1 {
		return nil, fmt.Errorf("registry %s: index.json: index_version %d, this host reads 1", src.Name(), ix.IndexVersion)
	}
	for id, e := range ix.Tools {
		if !idPattern.MatchString(id) {
			return nil, fmt.Errorf("registry %s: index.json: %q is not a tool id", src.Name(), id)
		}
		for _, v := range e.Versions {
			if !versionPattern.MatchString(v) {
				return nil, fmt.Errorf("registry %s: index.json: %s has a bad version %q", src.Name(), id, v)
			}
		}
	}
	return &ix, nil
}

// versionDir is the registry path of one version's directory.
func versionDir(id, version string) string { return path.Join(id, version) }
