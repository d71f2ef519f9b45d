// Package config decodes toolhost's HCL configuration into plugin specs.
//
// Every mistake in a configuration — an unknown block or attribute, a size
// or duration that does not parse, a tool asking for more than the host
// grants, a duplicate name, a missing file — is an hcl.Diagnostic with the
// file, line and column of the offending expression, and Load reports all of
// them at once. Print them with Parser.WriteDiagnostics.
//
// Relative paths in a file are relative to the directory of that file.
// docs/configuration.md is the reference for every block and attribute.
package config

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/toolhost/toolhost/internal/minisign"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/plugin/declared"
	"github.com/toolhost/toolhost/plugin/registry"
)

// Config is a decoded configuration.
type Config struct {
	// Filename is the file the configuration came from.
	Filename string
	Host     Host
	// Grants are the capabilities the operator lets the host hand out.
	Grants plugin.Capabilities
	// Secrets says where each named secret's value comes from.
	Secrets plugin.StaticSecrets
	// Tools are the tool specs, in file order, disabled ones included
	// (Spec.Disabled).
	Tools []plugin.Spec
	// MCPServers are the remote MCP servers whose tools become tools.
	MCPServers []MCPServer

	// Registries are where tool references are resolved, in order.
	Registries []Registry
	// Trust are the public keys whose signatures on registry manifests and
	// artifacts are accepted.
	Trust []minisign.PublicKey
	// Revoked keys are never trusted; a key in Expires is not trusted from
	// that date on (both at install and at start).
	Revoked []minisign.KeyID
	Expires map[minisign.KeyID]time.Time
	// ToolRefs are the tools named by registry reference, resolved through
	// the lockfile by ResolveToolRefs.
	ToolRefs []ToolRef
	// LocalTools are tools named by path with a manifest beside them,
	// checked by CheckLocalTools.
	LocalTools []LocalTool
	// LockFile is toolhost.lock beside the configuration file.
	LockFile string

	// Prompts, Resources and ResourceTemplates are what the MCP server
	// offers besides tools (prompt, resource and resource_template
	// blocks), in file order.
	Prompts           []declared.Prompt
	Resources         []declared.Resource
	ResourceTemplates []declared.Template

	// ranges locate each tool's and server's block for diagnostics about
	// problems found after decoding (an adapter failing to load a tool).
	ranges map[string]hcl.Range
	// sources locate each tool's source block (wasm, subprocess): an
	// adapter's refusal is about the artifact it names.
	sources map[string]hcl.Range
	// serverTools maps an MCP server to its tools = [...] attribute.
	serverTools map[string]hcl.Range
}

// Registry is one registry block: a directory, an HTTPS base URL, or an
// OCI registry (oci://host/prefix).
type Registry struct {
	Name string
	Path string
	URL  string
}

// Source returns the registry's source.
func (r Registry) Source() (registry.Source, error) {
	if strings.HasPrefix(r.URL, "oci://") {
		return registry.NewOCISource(r.Name, r.URL)
	}
	if r.URL != "" {
		return registry.NewHTTPSource(r.Name, r.URL)
	}
	return &registry.DirSource{RegistryName: r.Name, Root: r.Path}, nil
}

// ToolRef is a tool whose artifact is named by a registry reference
// (tool_ref in its wasm or subprocess block).
type ToolRef struct {
	Tool string
	Ref  registry.Ref
	// Kind is the source block's kind: wasm or subprocess.
	Kind          string
	AllowUnsigned bool
	Range         hcl.Range
}

// LocalTool is a tool whose artifact is named by path, with a manifest
// (manifest in its wasm or subprocess block).
type LocalTool struct {
	Tool          string
	Manifest      string
	Kind          string
	AllowUnsigned bool
	Range         hcl.Range
}

// CheckLocalTools holds tools named by path with a manifest to a
// registry's rules: the manifest and the artifact signed by a trusted key
// (or allow_unsigned), the artifact the one the block names with the
// manifest's size and sha256 (which then pins it), the kind the block's,
// and every capability the manifest asks for granted on the tool.
func (c *Config) CheckLocalTools(goos, goarch string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	fail := func(lt LocalTool, summary, format string, args ...any) {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary,
			Detail: fmt.Sprintf(format, args...), Subject: lt.Range.Ptr()})
	}
	client := c.RegistryClient(nil)
	for _, lt := range c.LocalTools {
		i := slices.IndexFunc(c.Tools, func(s plugin.Spec) bool { return s.Name == lt.Tool })
		if i < 0 {
			continue
		}
		spec := &c.Tools[i]
		l, err := client.OpenLocal(lt.Manifest, goos, goarch, registry.Options{AllowUnsigned: lt.AllowUnsigned})
		if err != nil {
			fail(lt, "Tool manifest refused", "%v.", err)
			continue
		}
		m := l.Manifest
		switch {
		case m.Kind != lt.Kind:
			fail(lt, "Wrong kind of tool", "%s describes a %s tool; this is a %s block.", lt.Manifest, m.Kind, lt.Kind)
			continue
		case filepath.Clean(l.Path) != filepath.Clean(spec.Source.Path):
			fail(lt, "Manifest of another artifact", "%s names %s; the block's path is %s.", lt.Manifest, l.Path, spec.Source.Path)
			continue
		case spec.Source.SHA256 != "" && spec.Source.SHA256 != l.Artifact.SHA256:
			fail(lt, "Two pins disagree", "sha256 is %s; the manifest says %s.", spec.Source.SHA256, l.Artifact.SHA256)
			continue
		}
		if missing := m.Ungranted(spec.Capabilities); len(missing) > 0 {
			fail(lt, "Capabilities not granted", "%s asks for capabilities this tool is not granted: %s. Grant them on the tool (and in grants), or narrow them; until then it does not load.", m.Ref(), strings.Join(missing, ", "))
			continue
		}
		spec.Source.SHA256 = l.Artifact.SHA256
		if spec.Source.Tool == "" && spec.Source.Export == "" {
			spec.Source.Tool, spec.Source.Export = m.Tool, m.Export
		}
		if len(spec.InputSchema) == 0 && len(m.InputSchema) > 0 {
			spec.InputSchema = m.InputSchema
		}
		if len(spec.OutputSchema) == 0 && len(m.OutputSchema) > 0 {
			spec.OutputSchema = m.OutputSchema
		}
	}
	return diags
}

// RegistryClient returns a client for the configuration's registries,
// trust and cache; sources are built from Registries unless given.
func (c *Config) RegistryClient(sources []registry.Source) *registry.Client {
	return &registry.Client{Sources: sources, Trust: c.Trust, Revoked: c.Revoked, Expires: c.Expires, Cache: c.RegistryCache()}
}

// RegistryCache is the registry's content-addressed cache in the host's
// cache directory.
func (c *Config) RegistryCache() *registry.Cache {
	return &registry.Cache{Dir: filepath.Join(c.Host.CacheDir, "registry")}
}

// ResolveToolRefs resolves every tool_ref offline, through the lock and
// the cache: the pinned version must be one the reference allows, its
// cached manifest and artifact must have the pinned digests, its signer
// must still be trusted (or the tool allow unsigned artifacts), its kind
// must match the block, and every capability its manifest asks for must
// be granted on the tool (or narrowed). Each resolved tool's source then
// names the cached artifact, pinned by sha256. Problems are diagnostics at
// the tool_ref attribute.
func (c *Config) ResolveToolRefs(lock *registry.Lock, goos, goarch string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	fail := func(tr ToolRef, summary, format string, args ...any) {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary,
			Detail: fmt.Sprintf(format, args...), Subject: tr.Range.Ptr()})
	}
	cache := c.RegistryCache()
	for _, tr := range c.ToolRefs {
		i := slices.IndexFunc(c.Tools, func(s plugin.Spec) bool { return s.Name == tr.Tool })
		if i < 0 {
			continue // a duplicate block, reported already
		}
		spec := &c.Tools[i]
		l, err := lock.Lookup(tr.Ref, cache, goos, goarch)
		if err != nil {
			fail(tr, "Tool reference not installed", "%v.", err)
			continue
		}
		m := l.Manifest
		if m.Kind != tr.Kind {
			fail(tr, "Wrong kind of tool", "%s@%s is a %s tool; name it in a %s { tool_ref = ... } block.", m.ID, m.Version, m.Kind, m.Kind)
			continue
		}
		switch {
		case l.Unsigned && !tr.AllowUnsigned:
			fail(tr, "Unsigned tool", "%s pins %s@%s as unsigned; set allow_unsigned = true on the tool to run it anyway, or install a signed version.", registry.LockFileName, m.ID, m.Version)
			continue
		case !l.Unsigned && !slices.ContainsFunc(c.Trust, func(k minisign.PublicKey) bool { return k.ID.String() == l.Signer }):
			if !tr.AllowUnsigned {
				fail(tr, "Signer not trusted", "%s@%s was installed signed by key %s, which trust { keys } no longer lists.", m.ID, m.Version, l.Signer)
				continue
			}
		case !l.Unsigned && !tr.AllowUnsigned:
			id, _ := minisign.ParseKeyID(l.Signer)
			if err := c.RegistryClient(nil).Withdrawn(id); err != nil {
				fail(tr, "Signer no longer trusted", "%s@%s was installed %v; install a version signed by a current key.", m.ID, m.Version, err)
				continue
			}
		}
		if missing := m.Ungranted(spec.Capabilities); len(missing) > 0 {
			fail(tr, "Capabilities not granted", "%s@%s asks for capabilities this tool is not granted: %s. Grant them on the tool (and in grants), or narrow them (a narrower host, a read-only mount); until then it does not load.", m.ID, m.Version, strings.Join(missing, ", "))
			continue
		}
		spec.Source.Path, spec.Source.SHA256 = l.ArtifactPath, l.SHA256
		if spec.Source.Tool == "" && spec.Source.Export == "" {
			spec.Source.Tool, spec.Source.Export = m.Tool, m.Export
		}
		if len(spec.InputSchema) == 0 && len(m.InputSchema) > 0 {
			spec.InputSchema = m.InputSchema
		}
		if len(spec.OutputSchema) == 0 && len(m.OutputSchema) > 0 {
			spec.OutputSchema = m.OutputSchema
		}
		if spec.Description == "" {
			spec.Description = m.Description
		}
	}
	return diags
}

// Host holds the host {} settings, with paths made absolute.
type Host struct {
	Workspace    string
	CacheDir     string
	ArtifactsDir string
	AuditLog     string
	LogLevel     string
	MaxDepth     int
	// PluginDir holds the subprocess plugin binaries: a relative plugin
	// path is taken inside it, and no plugin path may leave it (through
	// "../", an absolute path or a symlink). Default: the configuration
	// file's directory.
	PluginDir string
	// SubprocessUser is the uid and gid subprocess tools run as when the
	// host runs as root; nil: the adapter's default, 65534:65534.
	SubprocessUser *[2]uint32
	// Defaults are the limits of tools that do not set their own.
	Defaults plugin.Limits
}

// MCPServer is one mcp_server block.
type MCPServer struct {
	Name    string
	URL     string
	Headers map[string]string
	Secrets []string
	// Tools is the allowlist of the server's tools to expose, as name/tool.
	Tools   []string
	Tier    plugin.Tier
	Timeout time.Duration
	Limits  plugin.Limits
	// Sampling and Elicitation: the server may ask the caller's MCP
	// client, while its tools run, for a completion from its LLM or for
	// its user's input (capabilities = ["client.sampling",
	// "client.elicitation"], granted by the operator).
	Sampling, Elicitation bool
	// OAuth is the oauth block: the host obtains the server's token.
	OAuth *plugin.MCPOAuth
}

// Range returns the range of the block that defined a tool or MCP server,
// so that a later failure (an adapter refusing to load it) can be reported
// as a diagnostic at the right line.
func (c *Config) Range(name string) (hcl.Range, bool) {
	r, ok := c.ranges[name]
	return r, ok
}

// ServerToolsDiagnostic returns an error diagnostic about an MCP server's
// tools = [...] list (a listed tool the server does not offer), pointing at
// the attribute.
func (c *Config) ServerToolsDiagnostic(server, summary, detail string) *hcl.Diagnostic {
	if r, ok := c.serverTools[server]; ok {
		return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: r.Ptr()}
	}
	return c.Diagnostic(server, summary, detail)
}

// SourceDiagnostic returns an error diagnostic about the named tool's
// artifact, pointing at its source block (wasm { ... }, subprocess
// { ... }), or at the tool's block if it has none.
func (c *Config) SourceDiagnostic(name, summary, detail string) *hcl.Diagnostic {
	if r, ok := c.sources[name]; ok {
		return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: r.Ptr()}
	}
	return c.Diagnostic(name, summary, detail)
}

// Diagnostic returns an error diagnostic about the named tool or server,
// pointing at its block.
func (c *Config) Diagnostic(name, summary, detail string) *hcl.Diagnostic {
	d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail}
	if r, ok := c.ranges[name]; ok {
		d.Subject = r.Ptr()
	}
	return d
}

// Parser reads configuration files and keeps their source so that
// diagnostics can be printed with the offending line.
type Parser struct {
	p       *hclparse.Parser
	catalog *Catalog
}

// NewParser returns a Parser.
func NewParser() *Parser { return &Parser{p: hclparse.NewParser()} }

// Catalog names the built-in plugins and tools a host offers, so that a
// configuration naming one that does not exist is told so at the
// attribute, with a suggestion, in the same pass as every other mistake.
type Catalog struct {
	// Wasm maps each built-in wasm plugin to the tools it offers.
	Wasm map[string][]string
	// Subprocess lists the built-in subprocess tools.
	Subprocess []string
}

// WithCatalog makes p check built-in names against c.
func (p *Parser) WithCatalog(c *Catalog) *Parser {
	p.catalog = c
	return p
}

// Files returns the source of every file parsed so far, for
// Parser.WriteDiagnostics.
func (p *Parser) Files() map[string]*hcl.File { return p.p.Files() }

// LoadFile reads and decodes a configuration file.
func (p *Parser) LoadFile(filename string) (*Config, hcl.Diagnostics) {
	src, err := os.ReadFile(filename)
	if err != nil {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read configuration",
			Detail:   fmt.Sprintf("Reading %s: %v.", filename, err),
		}}
	}
	return p.Parse(src, filename)
}

// Parse decodes configuration source. filename names it in diagnostics and
// anchors relative paths (a relative filename is taken relative to the
// working directory).
func (p *Parser) Parse(src []byte, filename string) (*Config, hcl.Diagnostics) {
	f, diags := p.p.ParseHCL(src, filename)
	if diags.HasErrors() {
		return nil, diags
	}
	abs, err := filepath.Abs(filename)
	if err != nil {
		abs = filename
	}
	d := &decoder{dir: filepath.Dir(abs), catalog: p.catalog}
	var raw rawFile
	// Structural mistakes (an unknown attribute) do not stop the semantic
	// checks: gohcl decodes what it can, and the operator gets every problem
	// in one pass.
	diags = append(diags, gohcl.DecodeBody(f.Body, d.evalContext(), &raw)...)
	cfg := d.decode(&raw)
	cfg.Filename = filename
	diags = append(diags, d.diags...)
	sortDiagnostics(diags)
	if diags.HasErrors() {
		return nil, diags
	}
	return cfg, diags
}

// Load is NewParser().LoadFile(filename), for callers that print
// diagnostics without source snippets.
func Load(filename string) (*Config, hcl.Diagnostics) { return NewParser().LoadFile(filename) }

type decoder struct {
	catalog   *Catalog
	dir       string
	pluginDir string // Host.PluginDir, once the host block is decoded
	diags     hcl.Diagnostics
}

func (d *decoder) errorf(rng hcl.Range, summary, format string, args ...any) {
	d.diags = append(d.diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf(format, args...),
		Subject:  rng.Ptr(),
	})
}

func (d *decoder) warnf(rng hcl.Range, summary, format string, args ...any) {
	d.diags = append(d.diags, &hcl.Diagnostic{
		Severity: hcl.DiagWarning,
		Summary:  summary,
		Detail:   fmt.Sprintf(format, args...),
		Subject:  rng.Ptr(),
	})
}

// evalContext offers file(path), relative to the configuration's
// directory, and jsonencode(value), so that schemas can be written inline
// or kept in their own files. There is deliberately no env(): secrets go
// through secret blocks so that their values never sit in the config.
func (d *decoder) evalContext() *hcl.EvalContext {
	return &hcl.EvalContext{Functions: map[string]function.Function{
		"jsonencode": stdlib.JSONEncodeFunc,
		"file": function.New(&function.Spec{
			Params: []function.Parameter{{Name: "path", Type: cty.String}},
			Type:   function.StaticReturnType(cty.String),
			Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
				p := d.path(args[0].AsString())
				b, err := os.ReadFile(p)
				if err != nil {
					return cty.NilVal, fmt.Errorf("reading %s: %v", p, err)
				}
				return cty.StringVal(string(b)), nil
			},
		}),
	}}
}

// path makes p absolute relative to the configuration's directory,
// expanding a leading "~/".
func (d *decoder) path(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(d.dir, p)
}

func (d *decoder) decode(raw *rawFile) *Config {
	cfg := &Config{Secrets: plugin.StaticSecrets{}, ranges: map[string]hcl.Range{}, sources: map[string]hcl.Range{}, serverTools: map[string]hcl.Range{}}
	d.decodeHost(raw.Host, cfg)
	d.decodeSecrets(raw.Secrets, cfg)
	if len(raw.Grants) > 1 {
		// One mistake, one error: the grants of every block are used for
		// the rest of the checks, so that the tools they cover do not each
		// report a capability as not granted.
		for _, g := range raw.Grants[1:] {
			d.errorf(g.DefRange, "Duplicate grants block", "Give every grant in one grants block; the first is at %s.", raw.Grants[0].DefRange)
		}
	}
	for _, g := range raw.Grants {
		d.decodeGrants(g, cfg)
	}
	d.decodeRegistries(raw, cfg)
	// A duplicate block is still checked, so that the mistakes inside it
	// are reported in the same pass as the duplication; it is then dropped.
	for _, t := range raw.Tools {
		prev, dup := cfg.ranges[t.Name]
		if dup {
			d.errorf(t.DefRange, "Duplicate tool", "A tool named %q is already defined at %s.", t.Name, prev)
		} else {
			cfg.ranges[t.Name] = t.DefRange
		}
		if spec, ok := d.decodeTool(t, cfg); ok && !dup {
			cfg.Tools = append(cfg.Tools, spec)
		}
	}
	for _, m := range raw.MCPServers {
		prev, dup := cfg.ranges[m.Name]
		if dup {
			d.errorf(m.DefRange, "Duplicate name", "The name %q is already used at %s; MCP servers and tools share one namespace.", m.Name, prev)
		} else {
			cfg.ranges[m.Name] = m.DefRange
			cfg.serverTools[m.Name] = m.ToolsRange
		}
		if s, ok := d.decodeMCP(m, cfg); ok && !dup {
			cfg.MCPServers = append(cfg.MCPServers, s)
		}
	}
	d.decodeDeclared(raw, cfg)
	return cfg
}

// parseUIDGID reads "uid:gid" (numbers; root is refused: the point is to
// leave it).
func parseUIDGID(s string) ([2]uint32, error) {
	u, g, ok := strings.Cut(s, ":")
	uid, err1 := strconv.ParseUint(u, 10, 32)
	gid, err2 := strconv.ParseUint(g, 10, 32)
	switch {
	case !ok || err1 != nil || err2 != nil:
		return [2]uint32{}, fmt.Errorf("want UID:GID in digits")
	case uid == 0:
		return [2]uint32{}, fmt.Errorf("uid 0 would leave subprocess tools root")
	}
	return [2]uint32{uint32(uid), uint32(gid)}, nil
}

func (d *decoder) decodeHost(h *rawHost, cfg *Config) {
	cfg.Host = Host{LogLevel: "info", MaxDepth: 4, PluginDir: d.dir}
	d.pluginDir = d.dir
	if h == nil {
		cfg.Host.Workspace = d.dir
		cfg.Host.CacheDir = defaultCacheDir()
		return
	}
	if h.PluginDir != nil {
		cfg.Host.PluginDir = d.path(*h.PluginDir)
		d.pluginDir = cfg.Host.PluginDir
		if fi, err := os.Stat(cfg.Host.PluginDir); err != nil || !fi.IsDir() {
			d.errorf(h.PluginDirRange, "Plugin directory not found", "The plugin directory %s is not a directory: create it, or point plugin_dir at an existing one.", cfg.Host.PluginDir)
		}
	}
	if h.SubUser != nil {
		id, err := parseUIDGID(*h.SubUser)
		if err != nil {
			d.errorf(h.SubUserRange, "Invalid subprocess_user", "subprocess_user %q: %v. Write the numeric user and group, for example \"1000:1000\".", *h.SubUser, err)
		} else {
			cfg.Host.SubprocessUser = &id
		}
	}
	cfg.Host.Workspace = d.dir
	if h.Workspace != nil {
		cfg.Host.Workspace = d.path(*h.Workspace)
		if fi, err := os.Stat(cfg.Host.Workspace); err != nil || !fi.IsDir() {
			d.errorf(h.WorkspaceRange, "Workspace not found", "The workspace %s is not a directory: create it, or point workspace at an existing one.", cfg.Host.Workspace)
		}
	}
	cfg.Host.CacheDir = defaultCacheDir()
	if h.CacheDir != nil {
		cfg.Host.CacheDir = d.path(*h.CacheDir)
	}
	if h.ArtifactsDir != nil {
		cfg.Host.ArtifactsDir = d.path(*h.ArtifactsDir)
	} else {
		cfg.Host.ArtifactsDir = filepath.Join(cfg.Host.CacheDir, "artifacts")
	}
	if h.AuditLog != nil {
		cfg.Host.AuditLog = d.path(*h.AuditLog)
	}
	if h.LogLevel != nil {
		switch l := strings.ToLower(*h.LogLevel); l {
		case "trace", "debug", "info", "warn", "error", "off":
			cfg.Host.LogLevel = l
		default:
			d.errorf(h.LogLevelRange, "Invalid log level", "log_level must be one of trace, debug, info, warn, error or off; got %q.", *h.LogLevel)
		}
	}
	if h.MaxDepth != nil {
		if *h.MaxDepth < 1 || *h.MaxDepth > 32 {
			d.errorf(h.MaxDepthRange, "Invalid max_depth", "max_depth must be between 1 and 32; got %d.", *h.MaxDepth)
		} else {
			cfg.Host.MaxDepth = *h.MaxDepth
		}
	}
	if h.Limits != nil {
		cfg.Host.Defaults = d.decodeLimits(h.Limits)
	}
}

// defaultCacheDir is $XDG_CACHE_HOME/toolhost (or the platform's cache dir).
func defaultCacheDir() string {
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "toolhost")
	}
	return filepath.Join(os.TempDir(), "toolhost-cache")
}

func (d *decoder) decodeSecrets(secrets []*rawSecret, cfg *Config) {
	for _, s := range secrets {
		if !validSecretName(s.Name) {
			d.errorf(s.DefRange, "Invalid secret name", "Secret names use letters, digits and '_' and start with a letter or '_' (they are written $%s in headers); got %q.", s.Name, s.Name)
			continue
		}
		// A duplicate is checked like the first, then dropped.
		_, dup := cfg.Secrets[s.Name]
		if dup {
			d.errorf(s.DefRange, "Duplicate secret", "The secret %q is defined twice.", s.Name)
		}
		ref := plugin.SecretRef{Name: s.Name}
		switch {
		case s.Env != nil && s.File != nil:
			// Recorded anyway, so that its users do not also report it unknown.
			d.errorf(s.DefRange, "Ambiguous secret", "The secret %q sets both env and file; set one.", s.Name)
			ref.Env = *s.Env
		case s.Env != nil:
			ref.Env = *s.Env
		case s.File != nil:
			ref.File = d.path(*s.File)
		default:
			d.errorf(s.DefRange, "Secret without a source", "The secret %q needs env = \"VAR\" or file = \"path\".", s.Name)
			continue
		}
		if !dup {
			cfg.Secrets[s.Name] = ref
		}
	}
}

func validSecretName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9' {
			continue
		}
		return false
	}
	return true
}

// The capability names a grants block may list; a tool block lists the
// client ones (the subprocess block declares tool.exec.subprocess).
const (
	capSubprocess  = plugin.CapSubprocess
	capSampling    = plugin.CapSampling
	capElicitation = plugin.CapElicitation
)

var grantableCaps = []string{capSubprocess, capSampling, capElicitation}

func (d *decoder) decodeGrants(g *rawGrants, cfg *Config) {
	if g == nil {
		return
	}
	for _, m := range g.Mounts {
		p := d.path(m.Path)
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
			d.errorf(m.PathRange, "Mount directory not found", "The granted directory %s does not exist or is not a directory.", p)
			continue
		}
		cfg.Grants.Mounts = append(cfg.Grants.Mounts, plugin.Mount{HostPath: resolve(p), ReadOnly: m.ReadOnly != nil && *m.ReadOnly})
	}
	cfg.Grants.Hosts = append(cfg.Grants.Hosts, d.hostRules(g.Hosts, g.HostsRange)...)
	for _, s := range g.Secrets {
		if _, ok := cfg.Secrets[s]; !ok {
			d.errorf(g.SecretsRange, "Unknown secret", "The grant names the secret %q, but no secret %q block says where its value comes from.", s, s)
		}
	}
	cfg.Grants.Secrets = append(cfg.Grants.Secrets, g.Secrets...)
	cfg.Grants.Invoke = append(cfg.Grants.Invoke, g.Invoke...)
	cfg.Grants.Env = append(cfg.Grants.Env, g.Env...)
	for _, c := range g.Capabilities {
		switch c {
		case capSubprocess:
			cfg.Grants.Subprocess = true
		case capSampling:
			cfg.Grants.Sampling = true
		case capElicitation:
			cfg.Grants.Elicitation = true
		default:
			d.errorf(g.CapabilitiesRange, "Unknown capability", "%q is not a capability.%s The capabilities a grant may list are %s.", c, didYouMean(c, grantableCaps), quoteList(grantableCaps))
		}
	}
}

// resolve follows symlinks in a path that exists, so that the composition
// rule compares real locations.
func resolve(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

func (d *decoder) hostRules(hosts []string, rng hcl.Range) []plugin.HostRule {
	var out []plugin.HostRule
	for _, h := range hosts {
		r, err := plugin.ParseHostRule(h)
		if err != nil {
			d.errorf(rng, "Invalid host", "%v.", err)
			continue
		}
		out = append(out, r)
	}
	return out
}

func (d *decoder) decodeTool(t *rawTool, cfg *Config) (plugin.Spec, bool) {
	before := len(d.diags.Errs())
	spec := plugin.Spec{Name: t.Name} // no tier: the adapter's default, else side_effecting
	if !plugin.ValidToolName(t.Name) {
		d.errorf(t.DefRange, "Invalid tool name", "Tool names use 1-128 letters, digits, '_', '-', '.' or '/'; got %q.", t.Name)
	}
	if t.Description != nil {
		spec.Description = *t.Description
	}
	if t.Tier != nil {
		tier, err := plugin.ParseTier(*t.Tier)
		if err != nil {
			d.errorf(t.TierRange, "Invalid tier", "%v.", err)
		}
		spec.Tier = tier
	}
	if t.Approval != nil {
		a, err := plugin.ParseApproval(*t.Approval)
		if err != nil {
			d.errorf(t.ApprovalRange, "Invalid approval", "%v.", err)
		}
		spec.Approval = a
	}
	spec.Disabled = t.Enabled != nil && !*t.Enabled
	spec.InputSchema = d.schema(t.InputSchema, t.InputSchemaRange, "input_schema", true)
	spec.OutputSchema = d.schema(t.OutputSchema, t.OutputSchemaRange, "output_schema", false)

	// Source: exactly one of wasm, subprocess, go.
	n := len(t.Wasm) + len(t.Subprocess) + len(t.Go)
	switch {
	case n == 0:
		d.errorf(t.DefRange, "Tool without a source", "The tool %q needs one source block: wasm { ... }, subprocess { ... } or go { ... }.", t.Name)
	case n > 1:
		d.errorf(t.DefRange, "Several sources", "The tool %q has %d source blocks; give exactly one of wasm, subprocess or go.", t.Name, n)
	case len(t.Wasm) == 1:
		if cfg.ranges[t.Name] == t.DefRange {
			cfg.sources[t.Name] = t.Wasm[0].DefRange
		}
		spec.Source = d.wasmSource(t.Wasm[0])
		w := t.Wasm[0]
		d.checkWasmBuiltin(t, w, spec.Source)
		d.shipped(cfg, t, "wasm", w.ToolRef, w.ToolRefRange, w.Manifest, w.ManifestRange, w.Path != nil)
		if spec.Source.Export != "" && len(spec.InputSchema) == 0 {
			d.errorf(t.Wasm[0].DefRange, "Raw export without a schema", "The tool %q calls the plain export %q, which cannot describe itself: declare input_schema (and output_schema if it returns JSON) in the tool block.", t.Name, spec.Source.Export)
		}
	case len(t.Subprocess) == 1:
		if cfg.ranges[t.Name] == t.DefRange {
			cfg.sources[t.Name] = t.Subprocess[0].DefRange
		}
		spec.Source = d.subprocessSource(t.Subprocess[0])
		s := t.Subprocess[0]
		if d.catalog != nil && spec.Source.Builtin != "" && !slices.Contains(d.catalog.Subprocess, spec.Source.Builtin) {
			d.errorf(s.BuiltinRange, "Unknown built-in tool", "There is no built-in subprocess tool %q.%s The built-in subprocess tools are %s.", spec.Source.Builtin,
				didYouMean(spec.Source.Builtin, d.catalog.Subprocess), quoteList(d.catalog.Subprocess))
		}
		d.shipped(cfg, t, "subprocess", s.ToolRef, s.ToolRefRange, s.Manifest, s.ManifestRange, s.Path != nil)
		spec.Capabilities.Subprocess = true
		spec.Capabilities.Env = t.Subprocess[0].Env
		if spec.Source.Builtin == "shell.exec" && spec.Tier != 0 && spec.Tier != plugin.TierPrivileged {
			d.errorf(t.TierRange, "Tier too low for shell.exec", "shell.exec runs any command: its tier is privileged and cannot be lowered to %s. Remove tier, or set approval = \"never\" to run its calls without asking.", spec.Tier)
		}
	case len(t.Go) == 1:
		spec.Source = plugin.Source{Kind: "go"}
		if t.Go[0].Tool != nil {
			spec.Source.Tool = *t.Go[0].Tool
		}
	}

	for _, m := range t.Mounts {
		hp := d.path(m.HostPath)
		fi, err := os.Stat(hp)
		if err != nil || !fi.IsDir() {
			d.errorf(m.HostPathRange, "Mount directory not found", "The directory %s does not exist or is not a directory.", hp)
			continue
		}
		gp := m.GuestPath
		if !strings.HasPrefix(gp, "/") || filepath.Clean(gp) != gp || gp == "/" || gp == "/tmp" {
			d.errorf(m.GuestPathRange, "Invalid guest path", "guest_path must be a clean absolute path other than / and /tmp (the per-call temp dir); got %q.", gp)
			continue
		}
		spec.Capabilities.Mounts = append(spec.Capabilities.Mounts, plugin.Mount{HostPath: resolve(hp), GuestPath: gp, ReadOnly: m.ReadOnly != nil && *m.ReadOnly})
	}
	spec.Capabilities.Hosts = d.hostRules(t.Hosts, t.HostsRange)
	for _, s := range t.Secrets {
		if _, ok := cfg.Secrets[s]; !ok {
			d.errorf(t.SecretsRange, "Unknown secret", "The tool %q uses the secret %q, but no secret %q block defines it.", t.Name, s, s)
		}
	}
	spec.Capabilities.Secrets = t.Secrets
	spec.Capabilities.Invoke = t.Invoke
	d.toolCapabilities(t, &spec)
	if t.Limits != nil {
		spec.Limits = d.decodeLimits(t.Limits)
	}
	d.composition(t, &spec, cfg)
	return spec, len(d.diags.Errs()) == before
}

// toolCapabilities decodes a tool's capabilities = [...]: the rights to
// ask the caller's client (client.sampling, client.elicitation).
func (d *decoder) toolCapabilities(t *rawTool, spec *plugin.Spec) {
	toolCaps := []string{capSampling, capElicitation}
	for _, c := range t.Capabilities {
		switch c {
		case capSampling:
			spec.Capabilities.Sampling = true
		case capElicitation:
			spec.Capabilities.Elicitation = true
		case capSubprocess:
			if len(t.Subprocess) == 0 {
				d.errorf(t.CapabilitiesRange, "Capability without its source", "%q is the subprocess tier's; a tool declares it with a subprocess { } source block, not in capabilities.", c)
			}
		default:
			d.errorf(t.CapabilitiesRange, "Unknown capability", "%q is not a capability a tool declares.%s A tool's capabilities are %s.", c, didYouMean(c, toolCaps), quoteList(toolCaps))
		}
	}
}

// composition applies the composition rule with a diagnostic at the
// declaration that asks for too much.
func (d *decoder) composition(t *rawTool, spec *plugin.Spec, cfg *Config) {
	if spec.Disabled {
		return
	}
	g := cfg.Grants
	for i, m := range spec.Capabilities.Mounts {
		one := plugin.Capabilities{Mounts: []plugin.Mount{m}}
		for _, v := range one.Exceeding(g) {
			rng := t.DefRange
			if i < len(t.Mounts) {
				rng = t.Mounts[i].DefRange
			}
			d.errorf(rng, "Capability not granted", "The tool %q %s. Add a grant (grants { mount { path = ... } }) or narrow the tool's mount.", t.Name, v.Error())
		}
	}
	for _, h := range spec.Capabilities.Hosts {
		for _, v := range (plugin.Capabilities{Hosts: []plugin.HostRule{h}}).Exceeding(g) {
			d.errorf(t.HostsRange, "Capability not granted", "The tool %q %s; list it in grants { hosts = [...] }.", t.Name, v.Error())
		}
	}
	for _, s := range spec.Capabilities.Secrets {
		for _, v := range (plugin.Capabilities{Secrets: []string{s}}).Exceeding(g) {
			d.errorf(t.SecretsRange, "Capability not granted", "The tool %q %s; list it in grants { secrets = [...] }.", t.Name, v.Error())
		}
	}
	for _, s := range spec.Capabilities.Invoke {
		for _, v := range (plugin.Capabilities{Invoke: []string{s}}).Exceeding(g) {
			d.errorf(t.InvokeRange, "Capability not granted", "The tool %q %s; list it in grants { invoke = [...] }.", t.Name, v.Error())
		}
	}
	if spec.Capabilities.Subprocess && !g.Subprocess {
		d.errorf(t.Subprocess[0].DefRange, "Capability not granted", "The tool %q runs native code in the subprocess tier, which needs the operator's explicit grant: grants { capabilities = [%q] }.", t.Name, capSubprocess)
	}
	for _, c := range []struct {
		declared, granted bool
		name              string
	}{
		{spec.Capabilities.Sampling, g.Sampling, capSampling},
		{spec.Capabilities.Elicitation, g.Elicitation, capElicitation},
	} {
		if c.declared && !c.granted {
			d.errorf(t.CapabilitiesRange, "Capability not granted", "The tool %q asks the caller's client (%s), which needs the operator's explicit grant: grants { capabilities = [%q] }.", t.Name, c.name, c.name)
		}
	}
	for _, e := range spec.Capabilities.Env {
		for _, v := range (plugin.Capabilities{Env: []string{e}}).Exceeding(g) {
			d.errorf(t.Subprocess[0].EnvRange, "Capability not granted", "The tool %q %s; list it in grants { env = [...] }.", t.Name, v.Error())
		}
	}
}

func (d *decoder) schema(s *string, rng hcl.Range, attr string, input bool) json.RawMessage {
	if s == nil {
		return nil
	}
	doc := json.RawMessage(*s)
	if _, err := plugin.CompileSchema(doc); err != nil {
		d.errorf(rng, "Invalid "+attr, "%v.", err)
		return nil
	}
	if input {
		var v struct {
			Type any `json:"type"`
		}
		if json.Unmarshal(doc, &v) != nil || v.Type != "object" {
			d.errorf(rng, "Invalid "+attr, "A tool's input schema must describe an object: {\"type\": \"object\", ...}.")
			return nil
		}
	}
	return doc
}

func (d *decoder) artifact(path, builtin *string, pathRange, defRange hcl.Range, what string) (string, string) {
	switch {
	case path != nil && builtin != nil:
		d.errorf(defRange, "Ambiguous "+what+" source", "Set path or builtin, not both.")
	case path != nil:
		p := d.path(*path)
		fi, err := os.Stat(p)
		if err != nil {
			d.errorf(pathRange, "File not found", "The %s %s cannot be read: %v.", what, p, unwrapPathError(err))
		} else if fi.IsDir() {
			d.errorf(pathRange, "Not a file", "The %s %s is a directory.", what, p)
		}
		return p, ""
	case builtin != nil:
		return "", *builtin
	default:
		d.errorf(defRange, "Missing "+what, "Set path = \"...\" (a file) or builtin = \"...\" (shipped with toolhost).")
	}
	return "", ""
}

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

func (d *decoder) sha(s *string, rng hcl.Range) string {
	if s == nil {
		return ""
	}
	h := strings.ToLower(strings.TrimPrefix(*s, "sha256:"))
	if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		d.errorf(rng, "Invalid sha256", "sha256 must be 64 hexadecimal digits; got %q.", *s)
		return ""
	}
	return h
}

func (d *decoder) wasmSource(w *rawWasm) plugin.Source {
	src := plugin.Source{Kind: "wasm", Config: w.Config}
	if w.ToolRef != nil {
		d.refOnly(w.Path != nil, w.Builtin != nil, w.SHA256 != nil, w.ToolRefRange)
	} else {
		src.Path, src.Builtin = d.artifact(w.Path, w.Builtin, w.PathRange, w.DefRange, "wasm module")
		src.SHA256 = d.sha(w.SHA256, w.SHA256Range)
	}
	if w.Tool != nil {
		src.Tool = *w.Tool
	}
	if w.Export != nil {
		src.Export = *w.Export
		if w.Tool != nil {
			d.errorf(w.DefRange, "Ambiguous wasm entry point", "Set tool (a tool the plugin lists) or export (a plain export, raw mode), not both.")
		}
	}
	return src
}

// checkWasmBuiltin reports a built-in plugin, or a tool of one, that does
// not exist, at its attribute.
func (d *decoder) checkWasmBuiltin(t *rawTool, w *rawWasm, src plugin.Source) {
	if d.catalog == nil || src.Builtin == "" {
		return
	}
	tools, ok := d.catalog.Wasm[src.Builtin]
	if !ok {
		names := slices.Sorted(maps.Keys(d.catalog.Wasm))
		d.errorf(w.BuiltinRange, "Unknown built-in plugin", "There is no built-in plugin %q.%s The built-in plugins are %s.", src.Builtin,
			didYouMean(src.Builtin, names), quoteList(names))
		return
	}
	if src.Export != "" {
		return // raw mode names an export, not a tool
	}
	tool, rng := src.Tool, w.ToolRange
	if tool == "" {
		tool, rng = t.Name, w.DefRange // the tool's name is the block's
	}
	if !slices.Contains(tools, tool) {
		d.errorf(rng, "Unknown tool", "The built-in plugin %q has no tool %q.%s It offers %s.", src.Builtin, tool,
			didYouMean(tool, tools), quoteList(tools))
	}
}

// didYouMean is " Did you mean X?" for the candidates close to name, or
// nothing.
func didYouMean(name string, candidates []string) string {
	s := plugin.Suggest(name, candidates)
	if len(s) == 0 {
		return ""
	}
	return " Did you mean " + strconv.Quote(s[0]) + "?" // the closest
}

// quoteList is "a", "b" and "c".
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	if len(q) > 1 {
		return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
	}
	return strings.Join(q, "")
}

// refOnly reports a source block that names its artifact twice: by
// tool_ref and by path, builtin or sha256.
func (d *decoder) refOnly(path, builtin, sha bool, rng hcl.Range) {
	var also []string
	for name, set := range map[string]bool{"path": path, "builtin": builtin, "sha256": sha} {
		if set {
			also = append(also, name)
		}
	}
	if len(also) > 0 {
		slices.Sort(also)
		d.errorf(rng, "Artifact named twice", "tool_ref names the artifact (pinned by sha256 in %s); remove %s.", registry.LockFileName, strings.Join(also, " and "))
	}
}

// shipped records a tool shipped as a registry's are: named by registry
// reference, or by path with a manifest beside it.
func (d *decoder) shipped(cfg *Config, t *rawTool, kind string, ref *string, refRange hcl.Range, manifest *string, manifestRange hcl.Range, hasPath bool) {
	switch {
	case manifest != nil && !hasPath:
		d.errorf(manifestRange, "Manifest without a path", "manifest describes the artifact named by path = \"...\"; a tool_ref or builtin has its own.")
	case manifest != nil:
		if cfg.ranges[t.Name] == t.DefRange {
			cfg.LocalTools = append(cfg.LocalTools, LocalTool{Tool: t.Name, Manifest: d.path(*manifest), Kind: kind,
				AllowUnsigned: t.AllowUnsigned != nil && *t.AllowUnsigned, Range: manifestRange})
		}
	case ref != nil:
		d.toolRef(cfg, t, kind, ref, refRange)
	case t.AllowUnsigned != nil:
		d.errorf(t.AllowUnsignedRange, "allow_unsigned without tool_ref or manifest", "allow_unsigned applies to tools shipped with a signed manifest (tool_ref, or path with manifest); a tool named by path alone is pinned by its sha256 instead.")
	}
}

// toolRef records a tool named by registry reference.
func (d *decoder) toolRef(cfg *Config, t *rawTool, kind string, ref *string, rng hcl.Range) {
	r, err := registry.ParseRef(*ref)
	if err != nil {
		d.errorf(rng, "Invalid tool reference", "%v.", err)
		return
	}
	if cfg.ranges[t.Name] != t.DefRange {
		return // a duplicate block
	}
	allow := t.AllowUnsigned != nil && *t.AllowUnsigned
	if allow {
		d.warnf(t.AllowUnsignedRange, "Unsigned tool allowed", "The tool %q runs %s even if it is unsigned or signed by a key this host does not trust.", t.Name, r)
	}
	cfg.ToolRefs = append(cfg.ToolRefs, ToolRef{Tool: t.Name, Ref: r, Kind: kind, AllowUnsigned: allow, Range: rng})
}

// decodeRegistries reads the registry and trust blocks.
func (d *decoder) decodeRegistries(raw *rawFile, cfg *Config) {
	cfg.LockFile = filepath.Join(d.dir, registry.LockFileName)
	seen := map[string]hcl.Range{}
	for _, r := range raw.Registries {
		if prev, dup := seen[r.Name]; dup {
			d.errorf(r.DefRange, "Duplicate registry", "A registry named %q is already defined at %s.", r.Name, prev)
			continue
		}
		seen[r.Name] = r.DefRange
		if !plugin.ValidToolName(r.Name) || strings.Contains(r.Name, "/") {
			d.errorf(r.DefRange, "Invalid registry name", "Registry names use letters, digits, '_', '-' and '.'; got %q.", r.Name)
		}
		reg := Registry{Name: r.Name}
		switch {
		case (r.Path == nil) == (r.URL == nil):
			d.errorf(r.DefRange, "Registry location", "The registry %q needs exactly one of path = \"DIR\" (a directory) or url = \"https://...\".", r.Name)
			continue
		case r.Path != nil:
			reg.Path = d.path(*r.Path)
		default:
			reg.URL = *r.URL
			if _, err := reg.Source(); err != nil {
				d.errorf(r.URLRange, "Invalid registry URL", "%v.", err)
				continue
			}
		}
		cfg.Registries = append(cfg.Registries, reg)
	}
	if len(raw.Trust) > 1 {
		d.errorf(raw.Trust[1].DefRange, "Duplicate trust block", "Give every trusted key in one trust block (first at %s).", raw.Trust[0].DefRange)
	}
	if len(raw.Trust) == 0 {
		return
	}
	tb := raw.Trust[0]
	for i, k := range tb.Keys {
		pk, err := minisign.ParsePublicKey(k)
		if err != nil {
			d.errorf(tb.KeysRange, "Invalid public key", "keys[%d]: %v.", i, err)
			continue
		}
		cfg.Trust = append(cfg.Trust, pk)
	}
	for _, f := range tb.KeyFiles {
		name := d.path(f)
		b, err := os.ReadFile(name)
		if err != nil {
			d.errorf(tb.KeyFilesRange, "Cannot read public key", "%s: %v.", name, unwrapPathError(err))
			continue
		}
		pk, err := minisign.ParsePublicKey(string(b))
		if err != nil {
			d.errorf(tb.KeyFilesRange, "Invalid public key", "%s: %v.", name, err)
			continue
		}
		cfg.Trust = append(cfg.Trust, pk)
	}
	keyID := func(s string) (minisign.KeyID, error) {
		if pk, err := minisign.ParsePublicKey(s); err == nil {
			return pk.ID, nil
		}
		return minisign.ParseKeyID(strings.ToUpper(s))
	}
	for i, s := range tb.Revoked {
		id, err := keyID(s)
		if err != nil {
			d.errorf(tb.RevokedRange, "Invalid revoked key", "revoked[%d]: give a key ID (16 hex digits, as minisign prints it) or a public key: %v.", i, err)
			continue
		}
		cfg.Revoked = append(cfg.Revoked, id)
	}
	for k, v := range tb.Expires {
		id, err := keyID(k)
		if err != nil {
			d.errorf(tb.ExpiresRange, "Invalid key in expires", "%q: give a key ID (16 hex digits) or a public key: %v.", k, err)
			continue
		}
		t, err := time.Parse(time.DateOnly, v)
		if err != nil {
			d.errorf(tb.ExpiresRange, "Invalid expiry date", "expires[%q] = %q: want a date, YYYY-MM-DD.", k, v)
			continue
		}
		if cfg.Expires == nil {
			cfg.Expires = map[minisign.KeyID]time.Time{}
		}
		cfg.Expires[id] = t
	}
}

func (d *decoder) subprocessSource(s *rawSubproc) plugin.Source {
	src := plugin.Source{Kind: "subprocess", Args: s.Args, Env: s.Env}
	if s.ToolRef != nil {
		d.refOnly(s.Path != nil, s.Builtin != nil, s.SHA256 != nil, s.ToolRefRange)
		if s.Tool != nil {
			src.Tool = *s.Tool
		}
		return src
	}
	path := s.Path
	if path != nil && !filepath.IsAbs(*path) && !strings.HasPrefix(*path, "~/") {
		p := filepath.Join(d.pluginDir, *path)
		path = &p
	}
	src.Path, src.Builtin = d.artifact(path, s.Builtin, s.PathRange, s.DefRange, "plugin binary")
	if src.Path != "" {
		if real, inside := within(d.pluginDir, src.Path); !inside {
			d.errorf(s.PathRange, "Plugin outside the plugin directory",
				"The plugin binary %s resolves to %s, outside the plugin directory %s: move it there, or set host { plugin_dir = \"...\" }.",
				*s.Path, real, d.pluginDir)
		}
	}
	src.SHA256 = d.sha(s.SHA256, s.SHA256Range)
	if s.Tool != nil {
		src.Tool = *s.Tool
	}
	return src
}

func (d *decoder) decodeMCP(m *rawMCP, cfg *Config) (MCPServer, bool) {
	before := len(d.diags.Errs())
	s := MCPServer{Name: m.Name, URL: m.URL, Headers: m.Headers, Secrets: m.Secrets, Tier: plugin.TierSideEffecting}
	if !plugin.ValidToolName(m.Name) || strings.Contains(m.Name, "/") {
		d.errorf(m.DefRange, "Invalid server name", "MCP server names use letters, digits, '_', '-' and '.'; got %q.", m.Name)
	}
	if err := checkMCPURL(m.URL); err != nil {
		d.errorf(m.URLRange, "Invalid MCP server URL", "%v.", err)
	}
	for _, sec := range m.Secrets {
		if _, ok := cfg.Secrets[sec]; !ok {
			d.errorf(m.SecretsRange, "Unknown secret", "The server %q uses the secret %q, but no secret %q block defines it.", m.Name, sec, sec)
		}
		for _, v := range (plugin.Capabilities{Secrets: []string{sec}}).Exceeding(cfg.Grants) {
			d.errorf(m.SecretsRange, "Capability not granted", "The server %q %s; list it in grants { secrets = [...] }.", m.Name, v.Error())
		}
	}
	if len(m.Tools) == 0 {
		d.errorf(m.ToolsRange, "No tools allowed", "List the server's tools to expose in tools = [...]; only listed tools are exposed.")
	}
	seen := map[string]bool{}
	for _, t := range m.Tools {
		if seen[t] {
			d.errorf(m.ToolsRange, "Duplicate tool", "The tool %q is listed twice.", t)
		}
		seen[t] = true
		full := m.Name + "/" + t
		if !plugin.ValidToolName(full) {
			d.errorf(m.ToolsRange, "Invalid tool name", "%q is not a valid tool name.", full)
		}
		s.Tools = append(s.Tools, t)
	}
	if m.Tier != nil {
		tier, err := plugin.ParseTier(*m.Tier)
		if err != nil {
			d.errorf(m.TierRange, "Invalid tier", "%v.", err)
		}
		s.Tier = tier
	}
	if m.Timeout != nil {
		dur, err := parseDuration(*m.Timeout)
		if err != nil {
			d.errorf(m.TimeoutRange, "Invalid duration", "%v.", err)
		}
		s.Timeout = dur
	}
	if m.Limits != nil {
		s.Limits = d.decodeLimits(m.Limits)
	}
	if m.OAuth != nil {
		d.decodeOAuth(m, &s, cfg)
	}
	caps := []string{capSampling, capElicitation}
	for _, c := range m.Capabilities {
		var granted bool
		switch c {
		case capSampling:
			s.Sampling, granted = true, cfg.Grants.Sampling
		case capElicitation:
			s.Elicitation, granted = true, cfg.Grants.Elicitation
		default:
			d.errorf(m.CapabilitiesRange, "Unknown capability", "%q is not a capability an MCP server declares.%s An MCP server's capabilities are %s.", c, didYouMean(c, caps), quoteList(caps))
			continue
		}
		if !granted {
			d.errorf(m.CapabilitiesRange, "Capability not granted", "The server %q asks the caller's client (%s), which needs the operator's explicit grant: grants { capabilities = [%q] }.", m.Name, c, c)
		}
	}
	return s, len(d.diags.Errs()) == before
}

func checkMCPURL(raw string) error {
	u, err := parseURL(raw)
	if err != nil {
		return err
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopbackHost(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("%q: plain http is allowed only for loopback addresses; use https", raw)
	}
	return fmt.Errorf("%q: the scheme must be https (or http for loopback)", raw)
}

// sortDiagnostics orders diagnostics by file position, so that the operator
// reads them top to bottom and golden files stay stable.
func sortDiagnostics(diags hcl.Diagnostics) {
	slices.SortStableFunc(diags, func(a, b *hcl.Diagnostic) int {
		if a.Subject == nil || b.Subject == nil {
			return 0
		}
		if c := cmp.Compare(a.Subject.Filename, b.Subject.Filename); c != 0 {
			return c
		}
		return cmp.Compare(a.Subject.Start.Byte, b.Subject.Start.Byte)
	})
}

// within reports whether path, with symlinks resolved, lies inside dir (also
// resolved), and returns the resolved path. A path that cannot be resolved
// (missing: reported elsewhere) counts as inside.
func within(dir, path string) (string, bool) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return path, true
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return real, true
	}
	rel, err := filepath.Rel(root, real)
	return real, err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
