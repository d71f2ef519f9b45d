package toolhost

import (
	"path/filepath"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/extism"
	"github.com/toolhost/toolhost/extism/builtin"
	"github.com/toolhost/toolhost/mcp"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/plugin/config"
	"github.com/toolhost/toolhost/subprocess"
)

// builtinAdapter builds one adapter kind from the configuration.
type builtinAdapter struct {
	kind  string
	build func(cfg *config.Config, log hclog.Logger, opts *Options) (plugin.Adapter, error)
}

// builtinAdapters lists the adapters this build of toolhost has, in load
// order. Only the kinds a configuration uses are built.
func builtinAdapters() []builtinAdapter {
	return []builtinAdapter{
		{kind: extism.Kind, build: func(cfg *config.Config, log hclog.Logger, opts *Options) (plugin.Adapter, error) {
			return extism.New(extism.Config{
				CacheDir:  filepath.Join(cfg.Host.CacheDir, "wasm"),
				Logger:    log,
				Builtins:  builtin.LookupTool,
				OnCompile: opts.OnCompile,
			})
		}},
		{kind: subprocess.Kind, build: func(cfg *config.Config, log hclog.Logger, opts *Options) (plugin.Adapter, error) {
			sc := subprocess.Config{Logger: log, PluginDir: cfg.Host.PluginDir, InstalledDir: cfg.RegistryCache().Dir}
			if u := cfg.Host.SubprocessUser; u != nil {
				sc.RunAs = &subprocess.Identity{UID: u[0], GID: u[1]}
			}
			return subprocess.New(sc)
		}},
		{kind: mcp.Kind, build: func(cfg *config.Config, log hclog.Logger, opts *Options) (plugin.Adapter, error) {
			var secrets plugin.SecretSource = cfg.Secrets
			if opts.Secrets != nil {
				secrets = opts.Secrets
			}
			return mcp.NewAdapter(mcp.AdapterOptions{Logger: log, Secrets: secrets, Version: Version,
				TokenDir: TokenDir(cfg), Browser: opts.Browser}), nil
		}},
	}
}

// builtinCatalog is what the built-in adapters offer, for the
// configuration's checks of builtin = "..." and tool = "...".
func builtinCatalog() *config.Catalog {
	c := &config.Catalog{Wasm: builtin.Catalog()}
	for _, s := range subprocess.BuiltinSpecs() {
		c.Subprocess = append(c.Subprocess, s.Source.Builtin)
	}
	return c
}
