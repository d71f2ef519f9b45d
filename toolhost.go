// Package toolhost builds a ready-to-use tool host from a configuration
// file: it decodes config.hcl, wires the adapters (wasm, subprocess, remote
// MCP servers, and the host application's own Go tools) and loads every
// tool, reporting every problem as a diagnostic at its line.
//
// A host application that wants full control builds a plugin.Host itself
// from Go values; this package is the short way:
//
//	h, err := toolhost.Open(ctx, toolhost.Options{ConfigFile: "config.hcl"})
//	if err != nil { ... }        // *toolhost.ConfigError prints like Terraform
//	defer h.Close()
//	res, err := h.Invoke(ctx, plugin.Call{Name: "filesystem.list", Arguments: []byte(`{"path":"."}`)})
package toolhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"

	"github.com/toolhost/toolhost/extism"
	"github.com/toolhost/toolhost/mcp"
	"github.com/toolhost/toolhost/mcp/oauth"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/plugin/config"
	"github.com/toolhost/toolhost/plugin/registry"
)

// Version is toolhost's version, set at build time with
// -ldflags "-X github.com/toolhost/toolhost.Version=v1.2.3".
var Version = "v0.1.0-dev"

// Options configure Open.
type Options struct {
	// ConfigFile is the HCL configuration to load.
	ConfigFile string
	// Approver decides calls that need approval; nil means none can be asked
	// (such calls fail with APPROVAL_REQUIRED).
	Approver plugin.Approver
	// Logger is the root logger; nil logs at the configured level to stderr.
	Logger hclog.Logger
	// GoTools serves the host application's own Go tools to `go {}` blocks.
	GoTools *plugin.InProcess
	// Adapters are extra adapters, or replacements for the built-in ones of
	// the same kind.
	Adapters []plugin.Adapter
	// Secrets overrides where secret values come from (default: the
	// config's secret blocks).
	Secrets plugin.SecretSource
	// OnCompile hears when a wasm tool's module starts and ends compiling
	// (seconds on a first run, milliseconds from the cache), for progress.
	OnCompile func(extism.CompileEvent)
	// Browser sends the application's user to an MCP server's login page
	// (an mcp_server with oauth, grant authorization_code). With it, a
	// server that answers 401 has the login run in-line, at load or
	// during a call, bounded by that wait's deadline. Without it (an
	// unattended host, such as host serve), such a server's tools are
	// unavailable, with an error that says to run `host auth login NAME`,
	// until a token is stored.
	Browser oauth.Browser
}

// Host is a plugin.Host loaded from a configuration.
type Host struct {
	*plugin.Host
	adapters []plugin.Adapter
	// Config is the decoded configuration.
	Config *config.Config
	// Log is the root logger.
	Log hclog.Logger

	closers []io.Closer
	parser  *config.Parser // for diagnostics found after loading
}

// ConfigError is returned when the configuration has errors. It holds every
// diagnostic, and can print them with the offending source lines.
type ConfigError struct {
	Diagnostics hcl.Diagnostics
	parser      *config.Parser
}

func (e *ConfigError) Error() string {
	errs := e.Diagnostics.Errs()
	if len(errs) == 1 {
		return errs[0].Error()
	}
	return fmt.Sprintf("%d errors in the configuration; first: %v", len(errs), errs[0])
}

// Write prints the diagnostics as Terraform does, wrapped at width columns.
func (e *ConfigError) Write(w io.Writer, width uint, color bool) error {
	return e.parser.WriteDiagnostics(w, e.Diagnostics, width, color)
}

// Open loads the configuration, builds the adapters and loads every enabled
// tool. On configuration or load errors it returns a *ConfigError naming all
// of them, and no host.
func Open(ctx context.Context, opts Options) (*Host, error) {
	if opts.ConfigFile == "" {
		opts.ConfigFile = "config.hcl"
	}
	parser := config.NewParser().WithCatalog(builtinCatalog())
	cfg, diags := parser.LoadFile(opts.ConfigFile)
	if diags.HasErrors() {
		return nil, &ConfigError{Diagnostics: diags, parser: parser}
	}
	if len(cfg.LocalTools) > 0 {
		if ld := cfg.CheckLocalTools(runtime.GOOS, runtime.GOARCH); ld.HasErrors() {
			return nil, &ConfigError{Diagnostics: ld, parser: parser}
		}
	}
	if len(cfg.ToolRefs) > 0 {
		lock, err := registry.ReadLock(cfg.LockFile)
		if err != nil {
			return nil, &ConfigError{Diagnostics: hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read the lockfile", Detail: err.Error() + "."}}, parser: parser}
		}
		if rd := cfg.ResolveToolRefs(lock, runtime.GOOS, runtime.GOARCH); rd.HasErrors() {
			return nil, &ConfigError{Diagnostics: rd, parser: parser}
		}
	}
	log := opts.Logger
	if log == nil {
		log = hclog.New(&hclog.LoggerOptions{Name: "toolhost", Level: hclog.LevelFromString(cfg.Host.LogLevel), Output: os.Stderr})
	}
	for _, d := range diags {
		log.Warn(d.Summary, "detail", d.Detail, "at", d.Subject)
	}

	h := &Host{Config: cfg, Log: log, parser: parser}
	fail := func(err error) (*Host, error) {
		h.closeAll()
		return nil, err
	}

	var secrets plugin.SecretSource = cfg.Secrets
	if opts.Secrets != nil {
		secrets = opts.Secrets
	}
	popts := plugin.Options{
		Grants:   cfg.Grants,
		Defaults: cfg.Host.Defaults,
		Approver: opts.Approver,
		Secrets:  secrets,
		Logger:   log,
		MaxDepth: cfg.Host.MaxDepth,
	}
	if cfg.Host.ArtifactsDir != "" {
		arts, err := plugin.NewDirArtifacts(cfg.Host.ArtifactsDir, 0)
		if err != nil {
			return fail(err)
		}
		popts.Artifacts = arts
	}
	if cfg.Host.AuditLog != "" {
		if err := os.MkdirAll(filepath.Dir(cfg.Host.AuditLog), 0o700); err != nil {
			return fail(fmt.Errorf("audit log: %w", err))
		}
		f, err := os.OpenFile(cfg.Host.AuditLog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return fail(fmt.Errorf("audit log: %w", err))
		}
		h.closers = append(h.closers, f)
		popts.Auditor = plugin.NewAuditLog(f)
	}

	// Adapters: the built-in ones, the host app's Go tools, then overrides.
	byKind := map[string]plugin.Adapter{}
	var kinds []string
	add := func(a plugin.Adapter) {
		if _, ok := byKind[a.Kind()]; !ok {
			kinds = append(kinds, a.Kind())
		}
		byKind[a.Kind()] = a
	}
	needed := neededKinds(cfg)
	for _, f := range builtinAdapters() {
		if !needed[f.kind] {
			continue
		}
		a, err := f.build(cfg, log, &opts)
		if err != nil {
			return fail(fmt.Errorf("%s adapter: %w", f.kind, err))
		}
		add(a)
	}
	if opts.GoTools != nil {
		add(opts.GoTools)
	} else {
		add(plugin.NewInProcess())
	}
	for _, a := range opts.Adapters {
		add(a)
	}
	for _, k := range kinds {
		popts.Adapters = append(popts.Adapters, byKind[k])
	}
	h.adapters = popts.Adapters
	ph, err := plugin.NewHost(popts)
	if err != nil {
		return fail(err)
	}
	h.Host = ph

	// Load every tool; collect every failure as a diagnostic at its block.
	var loadDiags hcl.Diagnostics
	for _, spec := range specs(cfg) {
		if spec.Disabled {
			where := ""
			if r, ok := cfg.Range(configName(spec)); ok {
				where = fmt.Sprintf("%s:%d", r.Filename, r.Start.Line)
			}
			ph.NoteDisabled(spec.Name, where)
			continue
		}
		if _, ok := byKind[spec.Source.Kind]; !ok {
			loadDiags = append(loadDiags, cfg.Diagnostic(configName(spec), "Tool source not available",
				fmt.Sprintf("No adapter of kind %q is built into this host.", spec.Source.Kind)))
			continue
		}
		if err := h.Host.Load(ctx, spec); err != nil {
			loadDiags = append(loadDiags, cfg.SourceDiagnostic(configName(spec), "Cannot load tool "+spec.Name,
				strings.TrimPrefix(err.Error(), fmt.Sprintf("tool %q: ", spec.Name))+"."))
		}
	}
	if loadDiags.HasErrors() {
		return fail(&ConfigError{Diagnostics: loadDiags, parser: parser})
	}
	return h, nil
}

// configName is the name of the block a spec came from: the tool's own, or
// for an MCP server's tool, the server's.
func configName(spec plugin.Spec) string {
	if spec.Source.Server != nil {
		return spec.Source.Server.Name
	}
	return spec.Name
}

// specs returns the tool specs of cfg followed by one spec per allowed tool
// of every MCP server, named server/tool.
func specs(cfg *config.Config) []plugin.Spec {
	out := append([]plugin.Spec(nil), cfg.Tools...)
	for _, m := range cfg.MCPServers {
		s := mcpServerOf(m)
		srv := &s
		for _, t := range m.Tools {
			limits := m.Limits
			if m.Timeout > 0 && limits.Timeout == 0 {
				limits.Timeout = m.Timeout
			}
			out = append(out, plugin.Spec{
				Name:         m.Name + "/" + t,
				Source:       plugin.Source{Kind: "mcp", Tool: t, Server: srv},
				Tier:         m.Tier,
				Capabilities: plugin.Capabilities{Secrets: m.Secrets, Sampling: m.Sampling, Elicitation: m.Elicitation},
				Limits:       limits,
			})
		}
	}
	return out
}

func neededKinds(cfg *config.Config) map[string]bool {
	k := map[string]bool{}
	for _, s := range specs(cfg) {
		if !s.Disabled {
			k[s.Source.Kind] = true
		}
	}
	return k
}

// readier is implemented by adapters that prepare tools in the background
// (the wasm adapter compiles and fills its instance pools).
type readier interface {
	Ready(ctx context.Context) error
}

// Ready waits until every adapter that prepares tools in the background is
// done (compiled code, instance pools filling), or ctx ends. A long-running
// host calls it in the background after Open; a one-shot caller before its
// call, so that a cold compile is not charged to the call's deadline. The
// errors are those a call would meet anyway.
func (h *Host) Ready(ctx context.Context) error {
	var errs []error
	for _, a := range h.adapters {
		if r, ok := a.(readier); ok {
			errs = append(errs, r.Ready(ctx))
		}
	}
	return errors.Join(errs...)
}

// Close closes the tools, the adapters and the audit log.
func (h *Host) Close() error { return h.closeAll() }

func (h *Host) closeAll() error {
	var errs []error
	if h.Host != nil {
		errs = append(errs, h.Host.Close())
	}
	for _, c := range h.closers {
		errs = append(errs, c.Close())
	}
	h.closers = nil
	return errors.Join(errs...)
}

// ServerOptions returns base with what the configuration declares for MCP
// clients besides tools (its prompt, resource and resource_template
// blocks) filled in, for mcp.NewServer(h.Host, ...): the tools come from
// the host, the rest from the configuration.
func (h *Host) ServerOptions(base mcp.ServerOptions) mcp.ServerOptions {
	base.Prompts = h.Config.Prompts
	base.Resources = h.Config.Resources
	base.ResourceTemplates = h.Config.ResourceTemplates
	return base
}
