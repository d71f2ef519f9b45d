package registry

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/toolhost/toolhost/plugin"
)

//go:embed manifest.schema.json
var manifestSchemaJSON []byte

// ManifestSchema is the JSON Schema every manifest must meet.
func ManifestSchema() []byte { return manifestSchemaJSON }

var manifestSchema = sync.OnceValues(func() (*plugin.Schema, error) {
	return plugin.CompileSchema(manifestSchemaJSON)
})

// MaxManifestSize is the largest manifest read.
const MaxManifestSize = 1 << 20

// ErrInvalidManifest is wrapped by every error about a manifest's content.
var ErrInvalidManifest = errors.New("invalid tool manifest")

// Manifest is one version of one tool. Field names follow the JSON.
type Manifest struct {
	ManifestVersion int                 `json:"manifest_version"`
	ID              string              `json:"id"`
	Version         string              `json:"version"`
	DisplayName     string              `json:"displayName,omitempty"`
	Description     string              `json:"description"`
	License         string              `json:"license"`
	Kind            string              `json:"kind"` // "wasm" or "subprocess"
	Tool            string              `json:"tool,omitempty"`
	Export          string              `json:"export,omitempty"`
	Artifact        *Artifact           `json:"artifact,omitempty"`
	Artifacts       map[string]Artifact `json:"artifacts,omitempty"`
	Requires        Requirements        `json:"capability_requirements"`
	WASIImports     []string            `json:"wasi_imports,omitempty"`
	Limits          ManifestLimits      `json:"limits"`
	InputSchema     json.RawMessage     `json:"input_schema,omitempty"`
	OutputSchema    json.RawMessage     `json:"output_schema,omitempty"`
	Models          []ModelDependency   `json:"model_dependencies,omitempty"`
	ValidatedAt     string              `json:"validated_at,omitempty"`
	ValidatedBy     string              `json:"validated_by,omitempty"`
	Deprecated      *Deprecation        `json:"deprecated,omitempty"`
}

// Artifact is a file the manifest names: a path relative to the manifest
// or an https URL, with its size and sha256 (lower-case hex).
type Artifact struct {
	URL       string `json:"url"`
	SHA256    string `json:"sha256"`
	SizeBytes int64  `json:"size_bytes"`
}

// Requirements are the capabilities a tool asks for; a host grants them
// or narrows them before the tool loads (the composition rule).
type Requirements struct {
	Mounts     []MountRequirement `json:"mounts,omitempty"`
	Hosts      []string           `json:"hosts,omitempty"`
	Secrets    []string           `json:"secrets,omitempty"`
	Invoke     []string           `json:"invoke,omitempty"`
	Subprocess bool               `json:"subprocess,omitempty"`
}

// MountRequirement is a directory the tool expects at GuestPath.
type MountRequirement struct {
	GuestPath string `json:"guest_path"`
	ReadOnly  bool   `json:"read_only,omitempty"`
}

// ManifestLimits are the limits the tool needs, written as in HCL.
type ManifestLimits struct {
	Memory  string `json:"memory,omitempty"`
	Timeout string `json:"timeout,omitempty"`
	Fuel    uint64 `json:"fuel,omitempty"`
	Output  string `json:"output,omitempty"`
}

// ModelDependency is a model the tool needs, pinned by hash.
type ModelDependency struct {
	ID        string `json:"id"`
	URL       string `json:"url,omitempty"`
	SHA256    string `json:"sha256"`
	SizeBytes int64  `json:"size_bytes,omitempty"`
}

// Deprecation says a version should no longer be used, and what to use.
type Deprecation struct {
	Message   string `json:"message"`
	Successor string `json:"successor,omitempty"`
}

// ParseManifest reads and checks a manifest: against its JSON Schema, then
// the rules a schema cannot say (artifact kinds, safe relative paths, host
// rules, limits, the tool's own schemas). Every problem is reported, each
// naming its field.
func ParseManifest(data []byte) (*Manifest, error) {
	if len(data) > MaxManifestSize {
		return nil, fmt.Errorf("%w: %d bytes, more than the %d a manifest may have", ErrInvalidManifest, len(data), MaxManifestSize)
	}
	schema, err := manifestSchema()
	if err != nil {
		panic(fmt.Sprintf("registry: the embedded manifest schema does not compile: %v", err))
	}
	if err := schema.ValidateJSON(data); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	if problems := m.check(); len(problems) > 0 {
		return nil, fmt.Errorf("%w %s@%s: %s", ErrInvalidManifest, m.ID, m.Version, strings.Join(problems, "; "))
	}
	return &m, nil
}

// Ref is the manifest's exact reference, id@version.
func (m *Manifest) Ref() string { return m.ID + "@" + m.Version }

func (m *Manifest) check() []string {
	var p []string
	add := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }
	switch m.Kind {
	case "wasm":
		if m.Artifact == nil {
			add("kind wasm needs artifact (one module for every platform)")
		}
		if m.Artifacts != nil {
			add("kind wasm takes artifact, not artifacts (per-platform binaries are for kind subprocess)")
		}
	case "subprocess":
		if m.Artifacts == nil {
			add("kind subprocess needs artifacts, one per os/arch (for example \"linux/amd64\")")
		}
		if m.Artifact != nil {
			add("kind subprocess takes artifacts per os/arch, not artifact")
		}
		if m.Export != "" {
			add("export is for kind wasm (raw mode)")
		}
	}
	if m.Export != "" && len(m.InputSchema) == 0 {
		add("export (raw mode) needs input_schema: the module cannot describe itself")
	}
	if m.Artifact != nil {
		if err := checkURL(m.Artifact.URL); err != nil {
			add("artifact.url: %v", err)
		}
	}
	for _, plat := range slices.Sorted(maps.Keys(m.Artifacts)) {
		if err := checkURL(m.Artifacts[plat].URL); err != nil {
			add("artifacts[%q].url: %v", plat, err)
		}
	}
	for i, d := range m.Models {
		if d.URL != "" {
			if err := checkURL(d.URL); err != nil {
				add("model_dependencies[%d].url: %v", i, err)
			}
		}
	}
	for i, h := range m.Requires.Hosts {
		if _, err := plugin.ParseHostRule(h); err != nil {
			add("capability_requirements.hosts[%d]: %v", i, err)
		}
	}
	for i, mt := range m.Requires.Mounts {
		if c := path.Clean(mt.GuestPath); c != mt.GuestPath || c == "/" || c == "/tmp" {
			add("capability_requirements.mounts[%d].guest_path %q: want a clean absolute path other than / and /tmp", i, mt.GuestPath)
		}
	}
	if m.Limits.Memory != "" {
		if _, err := plugin.ParseSize(m.Limits.Memory); err != nil {
			add("limits.memory: %v", err)
		}
	}
	if m.Limits.Output != "" {
		if _, err := plugin.ParseSize(m.Limits.Output); err != nil {
			add("limits.output: %v", err)
		}
	}
	if m.Limits.Timeout != "" {
		if d, err := time.ParseDuration(m.Limits.Timeout); err != nil || d <= 0 {
			add("limits.timeout %q: want a positive duration such as \"30s\"", m.Limits.Timeout)
		}
	}
	for name, s := range map[string]json.RawMessage{"input_schema": m.InputSchema, "output_schema": m.OutputSchema} {
		if len(s) > 0 {
			if _, err := plugin.CompileSchema(s); err != nil {
				add("%s: %v", name, err)
			}
		}
	}
	if d := m.Deprecated; d != nil && d.Successor != "" {
		if _, err := ParseRef(d.Successor); err != nil {
			add("deprecated.successor: %v", err)
		}
	}
	sort.Strings(p)
	return p
}

// checkURL accepts an https URL, or a path relative to the manifest that
// stays beside it (no "..", no absolute path, no backslash, no scheme).
func checkURL(s string) error {
	if strings.ContainsAny(s, "\\\x00") {
		return fmt.Errorf("%q: backslashes and NUL are not allowed", s)
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q: %v", s, err)
	}
	if u.Scheme != "" || u.Host != "" {
		if u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("%q: want an https URL or a relative path", s)
		}
		if u.User != nil {
			return fmt.Errorf("%q: credentials in URLs are not allowed", u.Redacted())
		}
		return nil
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q: a relative path takes no query or fragment", s)
	}
	p := u.Path
	if strings.HasPrefix(p, "/") {
		return fmt.Errorf("%q: an absolute path; want a path relative to the manifest", s)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return fmt.Errorf("%q: \"..\" would leave the registry", s)
		}
	}
	if c := path.Clean(p); c == "." || c != p {
		return fmt.Errorf("%q: want a clean relative path (%q)", s, c)
	}
	return nil
}

// ArtifactFor returns the artifact a host on goos/goarch installs: the
// module for a wasm tool, the platform's binary for a subprocess tool.
func (m *Manifest) ArtifactFor(goos, goarch string) (Artifact, error) {
	if m.Artifact != nil {
		return *m.Artifact, nil
	}
	plat := goos + "/" + goarch
	if a, ok := m.Artifacts[plat]; ok {
		return a, nil
	}
	return Artifact{}, fmt.Errorf("%s has no binary for %s; it is built for %s", m.Ref(), plat, strings.Join(slices.Sorted(maps.Keys(m.Artifacts)), ", "))
}
