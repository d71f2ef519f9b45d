package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/internal/minisign"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/plugin/config"
	"github.com/toolhost/toolhost/plugin/registry"
)

// toolCommand is `host tool`: the registry side of toolhost.
func (a *app) toolCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tool",
		Short: "Find, install, pin, sign and publish tools from registries",
		Long: "Tools ship as signed, versioned manifests in registries (a directory or an HTTPS\n" +
			"URL: registry blocks in the configuration). install resolves a reference\n" +
			"(acme/ocr@^1.2), verifies the manifest's and artifact's signatures against\n" +
			"trust { keys }, caches the artifact by sha256 and pins it in toolhost.lock\n" +
			"beside the configuration; a tool block names it with tool_ref. See docs/registry.md.",
	}
	cmd.AddCommand(a.toolKeygen(), a.toolSign(), a.toolVerify(), a.toolPublish(),
		a.toolSearch(), a.toolInfo(), a.toolInstall(), a.toolUpdate())
	return cmd
}

// registryConfig loads the configuration for the registry commands: its
// registries, trust and tool references, without resolving them.
func (a *app) registryConfig() (*config.Config, error) {
	parser := config.NewParser()
	cfg, diags := parser.LoadFile(a.g.config)
	if diags.HasErrors() {
		_ = parser.WriteDiagnostics(a.stderr, diags, 100, false)
		return nil, &exitError{code: exitUsage}
	}
	return cfg, nil
}

func registryClient(cfg *config.Config) (*registry.Client, error) {
	var sources []registry.Source
	for _, r := range cfg.Registries {
		src, err := r.Source()
		if err != nil {
			return nil, err
		}
		sources = append(sources, src)
	}
	return cfg.RegistryClient(sources), nil
}

func (a *app) toolKeygen() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "keygen -o NAME",
		Short: "Make a signing key pair: NAME.key (secret, unencrypted) and NAME.pub",
		Long: "Make a minisign key pair for signing tools: NAME.key (keep it secret; it is\n" +
			"written without a password, as `minisign -G -W` does) and NAME.pub, whose second\n" +
			"line is what operators list in trust { keys = [...] }.",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if out == "" {
				return errors.New("-o NAME is required")
			}
			key, err := minisign.GenerateKey(rand.Reader)
			if err != nil {
				return err
			}
			f, err := os.OpenFile(out+".key", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return err
			}
			if _, err := f.Write(key.File()); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			if err := os.WriteFile(out+".pub", key.Public().File(), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "key %s\nsecret key: %s.key\npublic key: %s.pub\ntrust { keys = [%q] }\n", key.Public().ID, out, out, key.Public().String())
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "name of the key files (NAME.key, NAME.pub)")
	return cmd
}

func readSecretKey(name string) (minisign.PrivateKey, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return minisign.PrivateKey{}, err
	}
	var password []byte
	if pw, ok := os.LookupEnv("TOOLHOST_SIGNING_PASSWORD"); ok {
		password = []byte(pw)
	}
	k, err := minisign.ParsePrivateKey(b, password)
	if err != nil {
		return minisign.PrivateKey{}, fmt.Errorf("%s: %w (a password-protected key reads its password from TOOLHOST_SIGNING_PASSWORD)", name, err)
	}
	return k, nil
}

func (a *app) toolSign() *cobra.Command {
	var keyFile string
	cmd := &cobra.Command{
		Use:   "sign -k KEY FILE...",
		Short: "Sign files (FILE.minisig beside each), as minisign -S does",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, files []string) error {
			key, err := readSecretKey(keyFile)
			if err != nil {
				return err
			}
			for _, f := range files {
				sig, err := registry.SignFile(f, key)
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "%s: signed by key %s\n", sig, key.Public().ID)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&keyFile, "key", "k", "", "secret key file (minisign format)")
	cmd.MarkFlagRequired("key")
	return cmd
}

func (a *app) toolVerify() *cobra.Command {
	var pubs []string
	cmd := &cobra.Command{
		Use:   "verify [FILE...]",
		Short: "Check signatures of files, or the cached bytes of every pinned tool",
		Long: "With files: check FILE against FILE.minisig, trusting the keys of --pub (or the\n" +
			"configuration's trust block). Without: check that every tool toolhost.lock pins is\n" +
			"in the cache with the pinned sha256.",
		RunE: func(_ *cobra.Command, files []string) error {
			if len(files) > 0 {
				client := &registry.Client{}
				for _, p := range pubs {
					text := p
					if b, err := os.ReadFile(p); err == nil {
						text = string(b)
					}
					k, err := minisign.ParsePublicKey(text)
					if err != nil {
						return fmt.Errorf("--pub %s: %w", p, err)
					}
					client.Trust = append(client.Trust, k)
				}
				if len(pubs) == 0 {
					cfg, err := a.registryConfig()
					if err != nil {
						return err
					}
					client = cfg.RegistryClient(nil)
				}
				bad := 0
				for _, f := range files {
					id, err := client.VerifyFile(f)
					if err != nil {
						fmt.Fprintf(a.stdout, "%s: BAD: %v\n", f, err)
						bad++
						continue
					}
					fmt.Fprintf(a.stdout, "%s: signed by trusted key %s\n", f, id)
				}
				if bad > 0 {
					return &exitError{code: exitToolError}
				}
				return nil
			}
			cfg, err := a.registryConfig()
			if err != nil {
				return err
			}
			lock, err := registry.ReadLock(cfg.LockFile)
			if err != nil {
				return err
			}
			cache := cfg.RegistryCache()
			bad := 0
			for _, id := range slices.Sorted(mapKeys(lock.Tools)) {
				t := lock.Tools[id]
				for _, d := range []struct{ what, sum string }{{"manifest", t.ManifestSHA256}, {"artifact", t.SHA256}} {
					if err := cache.Verify(d.sum); err != nil {
						fmt.Fprintf(a.stdout, "%s@%s: %s: BAD: %v\n", id, t.Version, d.what, err)
						bad++
					}
				}
				if bad == 0 {
					fmt.Fprintf(a.stdout, "%s@%s: ok (sha256 %s)\n", id, t.Version, t.SHA256)
				}
			}
			if bad > 0 {
				return &exitError{code: exitToolError}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&pubs, "pub", "p", nil, "trusted public key: a key file or the key itself (repeatable)")
	return cmd
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func (a *app) toolPublish() *cobra.Command {
	var keyFile, dir, oci string
	cmd := &cobra.Command{
		Use:   "publish -k KEY (-r DIR | --oci oci://HOST/PREFIX) MANIFEST",
		Short: "Publish a tool version into a directory or OCI registry, signed",
		Long: "Copy MANIFEST and the artifacts it names (paths relative to it; their size and\n" +
			"sha256 must match) into the directory registry DIR, sign each with KEY, and add\n" +
			"the version to DIR/index.json; the directory can be served as it is over HTTPS.\n" +
			"With --oci, push them instead as one OCI artifact tagged with the version, in the\n" +
			"repository HOST/PREFIX/<publisher>/<name> (anonymous access).\n" +
			"A published version never changes: publishing it again with other bytes fails.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (dir == "") == (oci == "") {
				return errors.New("give one of -r DIR and --oci oci://HOST/PREFIX")
			}
			key, err := readSecretKey(keyFile)
			if err != nil {
				return err
			}
			var m *registry.Manifest
			where := dir
			if oci != "" {
				src, err := registry.NewOCISource("publish", oci)
				if err != nil {
					return err
				}
				where = src.Location()
				m, err = registry.PublishOCI(cmd.Context(), src, args[0], key)
				if err != nil {
					return err
				}
			} else if m, err = registry.Publish(dir, args[0], key); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "published %s into %s, signed by key %s\n", m.Ref(), where, key.Public().ID)
			return nil
		},
	}
	cmd.Flags().StringVarP(&keyFile, "key", "k", "", "secret key file (minisign format)")
	cmd.Flags().StringVarP(&dir, "registry", "r", "", "the directory registry")
	cmd.Flags().StringVar(&oci, "oci", "", "the OCI registry, oci://HOST[:PORT]/PREFIX")
	cmd.MarkFlagRequired("key")
	return cmd
}

func (a *app) toolSearch() *cobra.Command {
	return &cobra.Command{
		Use:   "search [TERM]",
		Short: "List the tools the configured registries offer",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.registryConfig()
			if err != nil {
				return err
			}
			c, err := registryClient(cfg)
			if err != nil {
				return err
			}
			if len(c.Sources) == 0 {
				return errors.New("no registry is configured: add a registry \"NAME\" { path = \"DIR\" } or { url = \"https://...\" } block")
			}
			term := ""
			if len(args) == 1 {
				term = strings.ToLower(args[0])
			}
			found := 0
			for _, src := range c.Sources {
				ix, err := registry.ReadIndex(cmd.Context(), src)
				if err != nil {
					return err
				}
				for _, id := range slices.Sorted(mapKeys(ix.Tools)) {
					e := ix.Tools[id]
					if term != "" && !strings.Contains(id, term) && !strings.Contains(strings.ToLower(e.Description), term) {
						continue
					}
					found++
					fmt.Fprintf(a.stdout, "%-32s %-10s %-10s %s\n", id, e.Versions[len(e.Versions)-1], src.Name(), e.Description)
				}
			}
			if found == 0 {
				fmt.Fprintln(a.stderr, "no tool found")
			}
			return nil
		},
	}
}

// allowUnsignedFor reports whether the configuration lets the tool id be
// unsigned (allow_unsigned on a tool block that names it).
func allowUnsignedFor(cfg *config.Config, id string) bool {
	return slices.ContainsFunc(cfg.ToolRefs, func(tr config.ToolRef) bool { return tr.Ref.ID == id && tr.AllowUnsigned })
}

func (a *app) toolInfo() *cobra.Command {
	return &cobra.Command{
		Use:   "info REF",
		Short: "Show the version a reference resolves to: its capabilities, limits, signer and status",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.registryConfig()
			if err != nil {
				return err
			}
			ref, err := registry.ParseRef(args[0])
			if err != nil {
				return err
			}
			c, err := registryClient(cfg)
			if err != nil {
				return err
			}
			res, err := c.Resolve(cmd.Context(), ref, registry.Options{AllowUnsigned: true})
			if err != nil {
				return err
			}
			a.describe(res, cfg)
			return nil
		},
	}
}

// describe prints a resolved version for an operator.
func (a *app) describe(res *registry.Resolved, cfg *config.Config) {
	m := res.Manifest
	w := a.stdout
	fmt.Fprintf(w, "%s (%s, from registry %s)\n", m.Ref(), m.Kind, res.Source.Name())
	if m.DisplayName != "" {
		fmt.Fprintf(w, "  %s\n", m.DisplayName)
	}
	fmt.Fprintf(w, "  %s\n", m.Description)
	fmt.Fprintf(w, "  license:    %s\n", m.License)
	fmt.Fprintf(w, "  versions:   %s\n", strings.Join(res.Versions, ", "))
	if res.Signer != "" {
		fmt.Fprintf(w, "  signed by:  trusted key %s\n", res.Signer)
	} else {
		fmt.Fprintf(w, "  signed by:  NOT VERIFIED: %s\n", res.Unsigned)
	}
	if m.ValidatedBy != "" {
		fmt.Fprintf(w, "  validated:  by %s on %s\n", m.ValidatedBy, m.ValidatedAt)
	}
	fmt.Fprintf(w, "  asks for:   %s\n", describeRequirements(m))
	if m.Deprecated != nil {
		fmt.Fprintf(w, "  DEPRECATED: %s", m.Deprecated.Message)
		if m.Deprecated.Successor != "" {
			fmt.Fprintf(w, " (use %s)", m.Deprecated.Successor)
		}
		fmt.Fprintln(w)
	}
	if art, err := m.ArtifactFor(runtime.GOOS, runtime.GOARCH); err == nil {
		fmt.Fprintf(w, "  artifact:   %s, %s, sha256 %s\n", art.URL, plugin.FormatSize(art.SizeBytes), art.SHA256)
	} else {
		fmt.Fprintf(w, "  artifact:   %v\n", err)
	}
}

func describeRequirements(m *registry.Manifest) string {
	var parts []string
	r := m.Requires
	for _, mt := range r.Mounts {
		mode := "read-write"
		if mt.ReadOnly {
			mode = "read-only"
		}
		parts = append(parts, fmt.Sprintf("mount %s (%s)", mt.GuestPath, mode))
	}
	for _, h := range r.Hosts {
		parts = append(parts, "host "+h)
	}
	for _, s := range r.Secrets {
		parts = append(parts, "secret "+s)
	}
	for _, t := range r.Invoke {
		parts = append(parts, "invoke "+t)
	}
	if r.Subprocess {
		parts = append(parts, "tool.exec.subprocess")
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// compositionReport says, for every tool block naming the installed id,
// what its manifest asks for that the block does not grant.
func (a *app) compositionReport(cfg *config.Config, in *registry.Installed) {
	for _, tr := range cfg.ToolRefs {
		if tr.Ref.ID != in.Manifest.ID {
			continue
		}
		i := slices.IndexFunc(cfg.Tools, func(s plugin.Spec) bool { return s.Name == tr.Tool })
		if i < 0 {
			continue
		}
		if missing := in.Manifest.Ungranted(cfg.Tools[i].Capabilities); len(missing) > 0 {
			fmt.Fprintf(a.stdout, "  tool %q does not grant: %s\n  it will not load until you grant them on the tool (and in grants) or narrow them\n", tr.Tool, strings.Join(missing, ", "))
		} else {
			fmt.Fprintf(a.stdout, "  tool %q grants everything it asks for\n", tr.Tool)
		}
	}
}

func (a *app) toolInstall() *cobra.Command {
	return &cobra.Command{
		Use:   "install [REF...]",
		Short: "Install tools and pin them in toolhost.lock (without REF: every tool_ref of the configuration)",
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.installRefs(cmd.Context(), args, false)
		},
	}
}

func (a *app) toolUpdate() *cobra.Command {
	return &cobra.Command{
		Use:   "update [ID...]",
		Short: "Move pins to the newest versions the configuration's references allow, showing what changes",
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.installRefs(cmd.Context(), args, true)
		},
	}
}

// installRefs installs (or, with update, re-resolves) references: those
// given, or every tool_ref of the configuration.
func (a *app) installRefs(ctx context.Context, args []string, update bool) error {
	cfg, err := a.registryConfig()
	if err != nil {
		return err
	}
	c, err := registryClient(cfg)
	if err != nil {
		return err
	}
	c.Progress = a.downloadProgress
	lock, err := registry.ReadLock(cfg.LockFile)
	if err != nil {
		return err
	}
	var refs []registry.Ref
	for _, s := range args {
		r, err := registry.ParseRef(s)
		if err != nil {
			return err
		}
		if update && r.Constraint.String() == "" {
			// An id: its reference is the configuration's.
			if i := slices.IndexFunc(cfg.ToolRefs, func(tr config.ToolRef) bool { return tr.Ref.ID == r.ID }); i >= 0 {
				r = cfg.ToolRefs[i].Ref
			}
		}
		refs = append(refs, r)
	}
	if len(args) == 0 {
		for _, tr := range cfg.ToolRefs {
			if !slices.ContainsFunc(refs, func(r registry.Ref) bool { return r.ID == tr.Ref.ID }) {
				refs = append(refs, tr.Ref)
			}
		}
		if len(refs) == 0 {
			return fmt.Errorf("%s names no tool_ref: give a reference (host tool install acme/ocr@^1.2)", a.g.config)
		}
	}
	changed := false
	for _, ref := range refs {
		old, pinned := lock.Tools[ref.ID]
		if pinned && !update && ref.Constraint.Allows(old.Version) && cfg.RegistryCache().Has(old.SHA256, old.SizeBytes) {
			fmt.Fprintf(a.stdout, "%s: %s@%s is installed\n", ref, ref.ID, old.Version)
			continue
		}
		opt := registry.Options{AllowUnsigned: allowUnsignedFor(cfg, ref.ID)}
		res, err := c.Resolve(ctx, ref, opt)
		if err != nil {
			return err
		}
		in, err := c.Install(ctx, res, opt)
		if err != nil {
			return err
		}
		if in.Signer == "" || in.ArtifactUnsigned != "" {
			fmt.Fprintf(a.stderr, "WARNING: %s is not verified (%s%s); installed because allow_unsigned = true\n", in.Manifest.Ref(), in.Unsigned, in.ArtifactUnsigned)
		}
		m := in.Manifest
		switch {
		case !pinned:
			fmt.Fprintf(a.stdout, "%s: installed %s (%s, signed by %s)\n", ref, m.Ref(), plugin.FormatSize(in.Artifact.SizeBytes), signerName(in))
		case old.Version == m.Version && old.SHA256 == in.Artifact.SHA256:
			fmt.Fprintf(a.stdout, "%s: %s@%s is the newest allowed; unchanged\n", ref, m.ID, m.Version)
		default:
			fmt.Fprintf(a.stdout, "%s: %s %s -> %s, size %s -> %s\n", ref, m.ID, old.Version, m.Version, plugin.FormatSize(old.SizeBytes), plugin.FormatSize(in.Artifact.SizeBytes))
			a.capabilityChanges(cfg, old, in)
		}
		if m.Deprecated != nil {
			fmt.Fprintf(a.stdout, "  DEPRECATED: %s", m.Deprecated.Message)
			if m.Deprecated.Successor != "" {
				fmt.Fprintf(a.stdout, " (use %s)", m.Deprecated.Successor)
			}
			fmt.Fprintln(a.stdout)
		}
		a.compositionReport(cfg, in)
		lock.Pin(in)
		changed = true
	}
	if changed {
		if err := lock.Write(cfg.LockFile); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "wrote %s\n", cfg.LockFile)
	}
	return nil
}

func signerName(in *registry.Installed) string {
	if in.Signer == "" {
		return "nobody trusted"
	}
	return "key " + in.Signer
}

// capabilityChanges prints how the capabilities requested changed from the
// pinned version's manifest (if still cached) to the new one.
func (a *app) capabilityChanges(cfg *config.Config, old registry.LockedTool, in *registry.Installed) {
	raw, err := os.ReadFile(cfg.RegistryCache().Path(old.ManifestSHA256))
	if err != nil {
		return
	}
	prev, err := registry.ParseManifest(raw)
	if err != nil {
		return
	}
	before, after := describeRequirements(prev), describeRequirements(in.Manifest)
	if before != after {
		fmt.Fprintf(a.stdout, "  capabilities asked for: %s -> %s\n", before, after)
	}
}

// downloadProgress reports a download: a bar on a terminal, plain lines
// otherwise.
func (a *app) downloadProgress(name string, size int64) (func(int64), func()) {
	f, ok := a.stderr.(*os.File)
	tty := ok && isatty.IsTerminal(f.Fd())
	start := time.Now()
	if !tty {
		fmt.Fprintf(a.stderr, "downloading %s (%s)\n", name, plugin.FormatSize(size))
		return func(int64) {}, func() {}
	}
	var got int64
	var last time.Time
	draw := func() {
		pct := 100
		if size > 0 {
			pct = int(got * 100 / size)
		}
		bar := strings.Repeat("=", pct/5) + strings.Repeat(" ", 20-pct/5)
		fmt.Fprintf(a.stderr, "\r%s [%s] %3d%% %s/%s", name, bar, pct, plugin.FormatSize(got), plugin.FormatSize(size))
	}
	return func(n int64) {
			got += n
			if time.Since(last) > 100*time.Millisecond {
				last = time.Now()
				draw()
			}
		}, func() {
			draw()
			fmt.Fprintf(a.stderr, " %s\n", time.Since(start).Round(time.Millisecond))
		}
}
