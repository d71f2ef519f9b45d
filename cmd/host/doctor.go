package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"

	"github.com/spf13/cobra"
	"github.com/toolhost/toolhost"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/plugin/config"
	"github.com/toolhost/toolhost/plugin/registry"
	"github.com/toolhost/toolhost/subprocess"
)

func (a *app) doctorCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Say which sandbox protections are in force on this machine",
		Long: "Say which protections of the subprocess tier (seccomp, Landlock, PID namespace,\n" +
			"subreaper, parent-death signal) this kernel and platform provide, and what\n" +
			"follows from any that are missing. The wasm tier is the same everywhere.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r := subprocess.Report()
			reg := a.registryReport()
			if asJSON {
				return writeJSON(a.stdout, map[string]any{
					"version": toolhost.Version, "go": runtime.Version(), "subprocess": r, "registry": reg,
				})
			}
			fmt.Fprintf(a.stdout, "toolhost %s (%s, %s/%s)\n\n", toolhost.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			fmt.Fprintln(a.stdout, "wasm tier: in force (wazero; fresh instance per call, os.Root mounts, guarded HTTP)")
			fmt.Fprintln(a.stdout, "subprocess tier:")
			yes := func(b bool) string {
				if b {
					return "yes"
				}
				return "NO"
			}
			fmt.Fprintf(a.stdout, "  supported              %s\n", yes(r.Supported))
			fmt.Fprintf(a.stdout, "  seccomp filter         %s\n", yes(r.Seccomp))
			fmt.Fprintf(a.stdout, "  landlock               %s (ABI %d)\n", yes(r.Landlock), r.LandlockABI)
			fmt.Fprintf(a.stdout, "  PID namespace          %s\n", yes(r.PIDNamespace))
			fmt.Fprintf(a.stdout, "  pids cgroup            %s\n", yes(r.PIDsCgroup))
			fmt.Fprintf(a.stdout, "  dies with the host     %s\n", yes(r.DiesWithHost))
			fmt.Fprintf(a.stdout, "  dies with its shim     %s\n", yes(r.ParentDeathSignal))
			if r.PIDNamespace {
				fmt.Fprintf(a.stdout, "  child subreaper        the shim (init of the plugin's PID namespace)\n")
			} else {
				fmt.Fprintf(a.stdout, "  child subreaper        %s\n", yes(r.Subreaper))
			}
			for _, m := range r.Missing {
				fmt.Fprintf(a.stdout, "  missing: %s\n", m)
			}
			if reg != nil {
				reg.write(a.stdout)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

// registryReport is doctor's view of the tools installed from registries:
// the cache, and each pin's state.
type registryReport struct {
	Lock       string      `json:"lock"`
	Cache      string      `json:"cache"`
	CacheBytes int64       `json:"cache_bytes"`
	CacheFiles int         `json:"cache_files"`
	Pins       []pinReport `json:"pins"`
	Error      string      `json:"error,omitempty"`
}

type pinReport struct {
	ID         string `json:"id"`
	Version    string `json:"version"`
	Cached     bool   `json:"cached"`
	Unsigned   bool   `json:"unsigned,omitempty"`
	Deprecated string `json:"deprecated,omitempty"`
	Successor  string `json:"successor,omitempty"`
}

// registryReport reads the configuration's lock and cache; nil when the
// configuration cannot be read or uses no registry.
func (a *app) registryReport() *registryReport {
	parser := config.NewParser()
	cfg, diags := parser.LoadFile(a.g.config)
	if diags.HasErrors() || (len(cfg.Registries) == 0 && len(cfg.ToolRefs) == 0) {
		return nil
	}
	cache := cfg.RegistryCache()
	rep := &registryReport{Lock: cfg.LockFile, Cache: cache.Dir}
	rep.CacheBytes, rep.CacheFiles, _ = cache.Size()
	lock, err := registry.ReadLock(cfg.LockFile)
	if err != nil {
		rep.Error = err.Error()
		return rep
	}
	for _, id := range slices.Sorted(mapKeys(lock.Tools)) {
		t := lock.Tools[id]
		p := pinReport{ID: id, Version: t.Version, Cached: cache.Has(t.SHA256, t.SizeBytes), Unsigned: t.Unsigned}
		if raw, err := os.ReadFile(cache.Path(t.ManifestSHA256)); err == nil {
			if m, err := registry.ParseManifest(raw); err == nil && m.Deprecated != nil {
				p.Deprecated, p.Successor = m.Deprecated.Message, m.Deprecated.Successor
			}
		}
		rep.Pins = append(rep.Pins, p)
	}
	return rep
}

func (r *registryReport) write(w io.Writer) {
	fmt.Fprintf(w, "registry:\n")
	fmt.Fprintf(w, "  lock                   %s (%d pinned)\n", r.Lock, len(r.Pins))
	fmt.Fprintf(w, "  cache                  %s (%s in %d files)\n", r.Cache, plugin.FormatSize(r.CacheBytes), r.CacheFiles)
	if r.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", r.Error)
	}
	for _, p := range r.Pins {
		state := "ok"
		switch {
		case !p.Cached:
			state = "MISSING from the cache: run host tool install"
		case p.Deprecated != "":
			state = "DEPRECATED: " + p.Deprecated
			if p.Successor != "" {
				state += " (use " + p.Successor + ")"
			}
		}
		if p.Unsigned {
			state += ", unsigned"
		}
		fmt.Fprintf(w, "  %-22s %s: %s\n", p.ID, p.Version, state)
	}
}
