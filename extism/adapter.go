package extism

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"

	"github.com/toolhost/toolhost/extism/internal/fuel"
	"github.com/toolhost/toolhost/extism/internal/guestmem"
	"github.com/toolhost/toolhost/extism/internal/hostfs"
	"github.com/toolhost/toolhost/internal/atomicfile"
	"github.com/toolhost/toolhost/internal/netguard"
	"github.com/toolhost/toolhost/plugin"
)

// Kind is the source kind this adapter loads.
const Kind = "wasm"

// Transform rewrites a module's bytes before it is compiled (fuel metering,
// snapshotting). Name identifies the transform and its version: it is part
// of the key the compiled code is cached under, so change it whenever the
// output of Apply changes.
type Transform struct {
	Name  string
	Apply func(wasm []byte) ([]byte, error)
}

// Config configures an Adapter. The zero value is usable: no on-disk cache,
// a null logger, no built-ins, the system resolver.
type Config struct {
	// CacheDir keeps compiled code across host starts. It is created with
	// mode 0700 (and tightened to 0700 if it exists): cached native code is
	// not validated again when loaded, so nobody else may write there.
	// Empty means compile in memory only.
	CacheDir string
	// Logger receives adapter events and guest log lines (capped per call).
	Logger hclog.Logger
	// Builtins resolves a Source.Builtin plugin name, and the name of the
	// tool asked of it, to module bytes: a built-in plugin may serve its
	// tools from several modules (builtin.LookupTool).
	Builtins func(plugin, tool string) ([]byte, bool)
	// Transforms run, in order, on every module before it is compiled.
	Transforms []Transform
	// Lookup resolves host names for guest HTTP requests; nil uses the
	// system resolver. Resolved addresses are always checked.
	Lookup LookupFunc
	// TempDir is where per-call /tmp directories are created; empty uses
	// os.TempDir.
	TempDir string
	// DisableFuel lifts the instruction budget (the fuel limit): calls
	// are bounded by their deadline alone. Modules are metered all the
	// same, since fuel is also what brings a running guest back to Go code
	// every slice (docs/fuel.md), so that it can be stopped at its deadline
	// and cannot stall the host's garbage collector or scheduler.
	DisableFuel bool
	// LongCallLanes is how many guest calls that have computed for more
	// than 10 ms may run at once; the others wait their turn, a slice of
	// fuel at a time. Zero means GOMAXPROCS-1 (at least one), which leaves
	// a processor to short calls and to the host itself however many
	// guests spin.
	LongCallLanes int
	// DisableSnapshots makes instances run the guest's initialiser instead
	// of starting from a snapshot taken at load (docs/snapshot.md). A Go
	// guest's initialiser costs ~10 ms per instance; the snapshot costs
	// ~0.5 s and a larger module at load.
	DisableSnapshots bool
	// OnCompile, when set, hears when a tool's module starts compiling and
	// when it is done, so that a command can show progress: a Go guest
	// takes seconds to compile the first time, and nothing else tells the
	// user why they wait. It is called from the compiling goroutine.
	OnCompile func(CompileEvent)
}

// CompileEvent reports one tool's compilation (Config.OnCompile).
type CompileEvent struct {
	// Tool is the tool's name.
	Tool string
	// Done is false when the compilation starts and true when it ends.
	Done bool
	// Cached reports that the module was compiled before and is read from
	// the cache directory, which takes milliseconds rather than seconds.
	Cached bool
	// Duration is how long the compilation took (Done only).
	Duration time.Duration
	// Err is why it failed (Done only).
	Err error
}

// longCall is how long a guest call computes before it needs one of the
// adapter's lanes to go on (Config.LongCallLanes): well above a typical
// tool call (0.1–2 ms), well below a timeout.
const longCall = 10 * time.Millisecond

// longCallLanes is the number of lanes for a configured value n.
func longCallLanes(n int) int {
	if n > 0 {
		return n
	}
	return max(1, runtime.GOMAXPROCS(0)-1)
}

// Adapter loads wasm tools. It is safe for concurrent use.
type Adapter struct {
	log       hclog.Logger
	cache     wazero.CompilationCache
	builtins  func(plugin, tool string) ([]byte, bool)
	xforms    []Transform
	lookup    LookupFunc
	tmpBase   string
	tmps      hostfs.TmpDirs // per-call /tmp directories, recycled while untouched
	fuel      bool           // the fuel limit applies (modules are always metered)
	lanes     *fuel.Gate     // shared by every call's meter
	snap      bool           // pre-initialise modules (snapshot.go)
	snapSeed  []byte         // per-host secret the snapshots' random state is derived from
	mem       guestmem.Pool  // guest memories of closed instances, cleared, for reuse
	modDir    string         // transformed modules, under the cache directory
	cacheDir  string         // wazero's compilation cache; "" in memory
	onCompile func(CompileEvent)
	lists     listings
	calls     callActivity // warmup.go

	// scanned remembers the digest and scan of built-in modules, which
	// several tools share: hashing a Go guest costs milliseconds, paid
	// once per module rather than once per tool. Keyed by the module's
	// first byte; built-in modules are the binary's own, never freed.
	scannedMu sync.Mutex
	scanned   map[*byte]scannedModule
	// compiling holds a lock per module digest while that module compiles
	// (compileLock).
	compilingMu sync.Mutex
	compiling   map[string]*sync.Mutex

	mu     sync.Mutex
	tools  []*wasmTool
	closed bool
}

var _ plugin.Adapter = (*Adapter)(nil)

// New returns an Adapter. It creates the cache directory if needed.
func New(cfg Config) (*Adapter, error) {
	a := &Adapter{
		log:       cfg.Logger,
		onCompile: cfg.OnCompile,
		builtins:  cfg.Builtins,
		xforms:    append([]Transform(nil), cfg.Transforms...),
		lookup:    cfg.Lookup,
		tmpBase:   cfg.TempDir,
		tmps:      hostfs.TmpDirs{Base: cfg.TempDir},
		fuel:      !cfg.DisableFuel,
		lanes:     fuel.NewGate(longCallLanes(cfg.LongCallLanes), longCall),
		snap:      !cfg.DisableSnapshots,
	}
	a.calls.init()
	if a.log == nil {
		a.log = hclog.NewNullLogger()
	}
	a.log = a.log.Named("extism")
	if a.lookup == nil {
		a.lookup = netguard.DefaultLookup
	}
	// go-sdk keeps the guest log level in a process-wide variable and drops
	// every guest log line while it is unset. Info lets guests' info, warn
	// and error lines through (to be counted, capped and redacted per call)
	// while debug chatter is skipped inside the guest.
	extism.SetLogLevel(extism.LogLevelInfo)
	for _, t := range a.xforms {
		if t.Name == "" || t.Apply == nil {
			return nil, errors.New("extism: every transform needs a Name and an Apply function")
		}
	}
	if cfg.CacheDir != "" {
		dir, err := filepath.Abs(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("extism: cache dir: %w", err)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("extism: cache dir: %w", err)
		}
		if err := os.Chmod(dir, 0o700); err != nil {
			return nil, fmt.Errorf("extism: cache dir: %w", err)
		}
		a.modDir = filepath.Join(dir, "modules")
		if err := os.MkdirAll(a.modDir, 0o700); err != nil {
			return nil, fmt.Errorf("extism: cache dir: %w", err)
		}
		c, err := wazero.NewCompilationCacheWithDir(dir)
		if err != nil {
			return nil, fmt.Errorf("extism: cache dir: %w", err)
		}
		a.cache, a.cacheDir = c, dir
		if a.snap {
			if a.snapSeed, err = loadSeed(dir); err != nil {
				return nil, fmt.Errorf("extism: snapshot seed: %w", err)
			}
		}
	} else {
		a.cache = wazero.NewCompilationCache()
		if a.snap {
			// A secret for this adapter only: tools of one plugin with
			// the same mounts get the same snapshot, compiled once.
			a.snapSeed = make([]byte, 32)
			rand.Read(a.snapSeed)
		}
	}
	return a, nil
}

// Kind returns "wasm".
func (a *Adapter) Kind() string { return Kind }

// Close closes every tool loaded by a and the compilation cache.
func (a *Adapter) Close() error {
	a.mu.Lock()
	tools := a.tools
	a.tools = nil
	a.closed = true
	a.mu.Unlock()
	var errs []error
	for _, t := range tools {
		errs = append(errs, t.Close())
	}
	errs = append(errs, a.cache.Close(context.Background()))
	a.mem.Drain()
	a.tmps.Close()
	return errors.Join(errs...)
}

// Ready waits until every tool loaded so far has compiled (compiling, in
// the background, what has not started at a first call), starts filling
// their instance pools, and returns the
// compilation errors. A long-running host calls it after loading so that its
// first calls find compiled code and ready instances; without it, a tool's
// pool starts filling at its first call.
//
// Calls come first: before each tool's compilation and pool, Ready waits
// until the adapter has had no call for a moment (warmup.go), so that a
// burst of calls does not share the machine with the warm-up of tools it
// does not use. Ready returns ctx's error if it ends first.
func (a *Adapter) Ready(ctx context.Context) error {
	a.mu.Lock()
	tools := append([]*wasmTool(nil), a.tools...)
	a.mu.Unlock()
	var errs []error
	for _, t := range tools {
		// A tool that has been called is compiled or compiling, and its
		// pool is refilling: nothing to wait for.
		called := t.called()
		if !called {
			if err := a.calls.waitQuiet(ctx); err != nil {
				return errors.Join(append(errs, err)...)
			}
		}
		if err := t.ready(ctx); err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if !called && t.pool != nil {
			if err := a.calls.waitQuiet(ctx); err != nil {
				return errors.Join(append(errs, err)...)
			}
		}
		t.wake() // start filling the pool
	}
	return errors.Join(errs...)
}

// transform applies the load-time rewrites to a module: data segments are
// coalesced (see coalesceData), the guest initialiser is renamed so instances can be initialised ahead of time,
// snap (if not nil) pre-initialises the module, fuel metering is added,
// then the configured transforms run. With a cache
// directory the result is kept there under key, so a later start reads it
// instead of rewriting again (wazero's compilation cache is keyed by these
// bytes).
func (a *Adapter) transform(raw []byte, info *moduleInfo, key string, snap func([]byte) []byte) ([]byte, error) {
	file := a.transformedFile(key)
	if file != "" {
		if b, err := os.ReadFile(file); err == nil {
			return b, nil
		}
	}
	code, err := coalesceData(raw)
	if err != nil {
		return nil, err
	}
	if info.initName != "" {
		if code, err = renameExport(code, info.initName, initExport); err != nil {
			return nil, err
		}
	}
	if info.usesExtismHTTP() {
		if code, err = routeExtismHTTP(code); err != nil {
			return nil, err
		}
	}
	if snap != nil {
		// Before fuel: the initialisation run is not metered, and the
		// fuel counter is not captured.
		code = snap(code)
	}
	// Always metered, fuel limit or not: the meter's refills are where a
	// running guest comes back to Go (docs/fuel.md).
	switch metered, err := fuel.Instrument(code); {
	case errors.Is(err, fuel.ErrInstrumented):
		// metered already
	case err != nil:
		return nil, err
	default:
		code = metered
	}
	for _, x := range a.xforms {
		if code, err = x.Apply(code); err != nil {
			return nil, fmt.Errorf("transform %s: %w", x.Name, err)
		}
	}
	if file != "" {
		if err := writeFileAtomic(file, code); err != nil {
			a.log.Warn("caching the transformed module", "file", file, "error", err)
		}
	}
	return code, nil
}

// transformedFile is where the module transformed under key is kept, or ""
// without a cache directory.
func (a *Adapter) transformedFile(key string) string {
	if a.modDir == "" {
		return ""
	}
	return filepath.Join(a.modDir, sha256Hex([]byte(key))+".wasm")
}

// compiledBefore reports whether the module under key was compiled by an
// earlier start (its transformed bytes and compiled code are kept side by
// side in the cache directory).
func (a *Adapter) compiledBefore(key string) bool {
	file := a.transformedFile(key)
	if file == "" {
		return false
	}
	_, err := os.Stat(file)
	return err == nil
}

func writeFileAtomic(name string, b []byte) error {
	return atomicfile.WriteFile(name, b, atomicfile.Options{Perm: 0o600})
}

// artifact returns the module bytes spec's source names.
func (a *Adapter) artifact(spec *plugin.Spec) ([]byte, string, error) {
	src := &spec.Source
	switch {
	case len(src.Bytes) > 0:
		return src.Bytes, "embedded bytes", nil
	case src.Builtin != "":
		if a.builtins == nil {
			return nil, "", fmt.Errorf("built-in %q: this host has no built-in plugins", src.Builtin)
		}
		b, ok := a.builtins(src.Builtin, guestToolName(spec))
		if !ok {
			return nil, "", fmt.Errorf("built-in %q does not exist", src.Builtin)
		}
		return b, "built-in " + src.Builtin, nil
	case src.Path != "":
		b, err := os.ReadFile(src.Path)
		if err != nil {
			return nil, "", err
		}
		return b, src.Path, nil
	}
	return nil, "", errors.New("source names no artifact: set path, bytes or builtin")
}

type scannedModule struct {
	digest string
	info   *moduleInfo
	err    error
}

// scan returns raw's sha256 (hex) and what scanModule finds in it,
// remembered for static (built-in) modules.
func (a *Adapter) scan(raw []byte, static bool) (string, *moduleInfo, error) {
	if !static || len(raw) == 0 {
		info, err := scanModule(raw)
		return sha256Hex(raw), info, err
	}
	key := &raw[0]
	a.scannedMu.Lock()
	defer a.scannedMu.Unlock()
	if m, ok := a.scanned[key]; ok {
		return m.digest, m.info, m.err
	}
	info, err := scanModule(raw)
	m := scannedModule{sha256Hex(raw), info, err}
	if a.scanned == nil {
		a.scanned = map[*byte]scannedModule{}
	}
	a.scanned[key] = m
	return m.digest, m.info, m.err
}

// Load reads, verifies and scans the artifact spec names, starts compiling
// it in the background and returns the tool. For a list_tools plugin whose
// Spec supplies no input schema, Load waits for the compilation and asks
// the plugin for its descriptor.
func (a *Adapter) Load(ctx context.Context, spec *plugin.Spec) (plugin.Tool, error) {
	if spec == nil {
		return nil, errors.New("extism: nil spec")
	}
	fail := func(format string, args ...any) error {
		e := plugin.Errorf(plugin.CodeToolUnavailable, format, args...)
		e.Tool = spec.Name
		return e
	}
	if spec.Source.Kind != "" && spec.Source.Kind != Kind {
		return nil, fail("source kind %q is not %q", spec.Source.Kind, Kind)
	}
	raw, where, err := a.artifact(spec)
	if err != nil {
		return nil, fail("%v", err)
	}
	got, info, err := a.scan(raw, spec.Source.Builtin != "")
	if want := strings.ToLower(strings.TrimSpace(spec.Source.SHA256)); want != "" && want != got {
		return nil, fail("%s: sha256 mismatch: expected %s, got %s; refusing to load", where, want, got)
	}
	if err != nil {
		return nil, fail("%s: %v", where, err)
	}
	if bad := info.unknownImports(); len(bad) > 0 {
		return nil, fail("%s: the module imports host functions toolhost does not provide: %s (it provides WASI preview 1, the Extism kernel, and %s in %s)",
			where, strings.Join(bad, ", "), strings.Join(hostFunctionNames(), ", "), importUser)
	}
	mode := modeTools
	if spec.Source.Export != "" {
		mode = modeRaw
		if !info.hasFunc(spec.Source.Export) {
			return nil, fail("%s: raw mode names export %q, which the module does not export (it exports %s)",
				where, spec.Source.Export, strings.Join(info.funcExports(), ", "))
		}
		if len(spec.InputSchema) == 0 {
			return nil, fail("raw mode export %q needs an input schema in the tool's configuration", spec.Source.Export)
		}
	} else if !info.hasFunc(exportListTools) || !info.hasFunc(exportCallTool) {
		return nil, fail("%s: module exports neither list_tools and call_tool nor a configured raw export (it exports %s); "+
			"set export = \"<name>\" to call a plain Extism function", where, strings.Join(info.funcExports(), ", "))
	}

	// The module is transformed (initialiser renamed, fuel, configured
	// transforms) and compiled in the background; key names the result.
	key := got + "+data"
	if info.usesExtismHTTP() {
		key += "+xhttp"
	}
	if info.initName != "" {
		key += "+init"
	}
	key += "+" + fuel.Version // a new cost model must not reuse code metered by an old one
	if a.snap && info.initName != "" {
		key += snapshotKey(guestPaths(spec))
	}
	for _, x := range a.xforms {
		key += "+" + x.Name
	}
	code := raw
	t := newTool(a, spec, mode, info, code, key, where)
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil, fail("adapter is closed")
	}
	a.tools = append(a.tools, t)
	a.mu.Unlock()
	// Compilation starts at the tool's first need (a call, Ready, or a
	// listing not yet cached): a one-shot host compiles only what it calls.

	if err := t.describe(ctx); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// LookupFunc resolves a host name to addresses for guest HTTP requests. It
// replaces DNS in tests and in hosts with their own resolver.
type LookupFunc = netguard.Lookup

// compileLock serialises compilations of the same module bytes, and
// returns the unlock. Tools of one plugin share a module, and wazero's
// engine, shared through the compilation cache, publishes a module read
// from its file cache before it has finished preparing it (the entry
// preambles, in wazero 1.12): a second compilation of those bytes could
// hand its tool a module still being written. Different modules still
// compile in parallel.
func (a *Adapter) compileLock(code []byte) func() {
	sum := sha256.Sum256(code)
	key := string(sum[:])
	a.compilingMu.Lock()
	if a.compiling == nil {
		a.compiling = map[string]*sync.Mutex{}
	}
	mu, ok := a.compiling[key]
	if !ok {
		mu = new(sync.Mutex)
		a.compiling[key] = mu
	}
	a.compilingMu.Unlock()
	mu.Lock()
	return mu.Unlock
}
