package extism

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/extism/internal/guestmem"
	"github.com/toolhost/toolhost/extism/internal/snapshot"
	"github.com/toolhost/toolhost/extism/internal/wasmbin"
	"github.com/toolhost/toolhost/plugin"
)

// Snapshots (docs/snapshot.md): a Go guest's runtime initialisation is run
// once, at load, and instances start from the resulting memory and globals.
// The snapshot's view of the world is the list of directories the guest saw
// while initialising (Go lists its preopens once), so a snapshot is made for
// the mounts of the tool's spec and used only for instances given exactly
// those mounts; any other instance is made from the plain module, compiled
// on first need.

// seedFile holds the per-host secret the snapshots' random seeds are derived
// from, in the cache directory.
const seedFile = "snapshot-seed"

// snapshotTimeout bounds one initialisation run at load. A Go runtime
// initialises in well under a second in wazero's interpreter.
const snapshotTimeout = 30 * time.Second

// snapState is a tool's snapshot state.
type snapState struct {
	// off: never snapshot this tool (the plain fallback itself).
	off bool
	// on: the compiled module is a snapshot made for preopens.
	on       bool
	preopens []string
	// minMemory is the initial size of the compiled module's memory, in
	// bytes (for every module, snapshot or not).
	minMemory uint64
	// plan is what instantiating a snapshot writes into its memory
	// (guestmem.Plan); noPlan turns its use off (see newInstance).
	plan   *guestmem.Plan
	noPlan atomic.Bool

	// The plain module, compiled on the first instance whose mounts differ
	// from preopens.
	once  sync.Once
	plain *wasmTool
	err   error
}

// guestPaths returns the guest paths an instance for spec is given, in the
// order newInstance mounts them: the spec's mounts, then the per-call /tmp.
func guestPaths(spec *plugin.Spec) []string {
	out := make([]string, 0, len(spec.Capabilities.Mounts)+1)
	for _, m := range spec.Capabilities.Mounts {
		out = append(out, path.Clean("/"+m.GuestPath))
	}
	return append(out, "/tmp")
}

// snapshotKey names the snapshot transform and what it depends on, for the
// transformed-module cache key; the key of the plain module is the key
// without it.
func snapshotKey(preopens []string) string {
	q := make([]string, len(preopens))
	for i, p := range preopens {
		q[i] = strconv.Quote(p)
	}
	return "+" + snapshot.Version + "[" + strings.Join(q, ",") + "]"
}

// loadSeed reads the per-host snapshot seed from dir, creating it (mode
// 0600) on first use.
func loadSeed(dir string) ([]byte, error) {
	name := filepath.Join(dir, seedFile)
	for range 2 {
		b, err := os.ReadFile(name)
		if err == nil {
			if len(b) != 32 {
				return nil, fmt.Errorf("%s: %d bytes, want 32 (delete it to make a new one)", name, len(b))
			}
			return b, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			continue // another process made it first
		}
		if err != nil {
			return nil, err
		}
		seed := make([]byte, 32)
		rand.Read(seed)
		_, werr := f.Write(seed)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			os.Remove(name)
			return nil, werr
		}
		return seed, nil
	}
	return nil, fmt.Errorf("%s: cannot be read or created", name)
}

// snapshotRandom returns the randomness the initialiser of the module
// rawHash reads (for a Go guest, the runtime's hash and math/rand seeds).
// It is derived from the adapter's seed, the module and the preopens, so
// that the snapshot, and so the transformed module wazero caches compiled
// code for, is the same for every tool of the plugin with the same mounts
// and, with a cache directory (whose seed file is per host), after a
// restart, while two hosts never share a seed.
func (a *Adapter) snapshotRandom(rawHash string, preopens []string) io.Reader {
	if a.snapSeed == nil {
		return rand.Reader // not reached: New always sets a seed
	}
	h := hmac.New(sha256.New, a.snapSeed)
	h.Write([]byte("toolhost snapshot random\x00" + rawHash + snapshotKey(preopens)))
	var s [32]byte
	copy(s[:], h.Sum(nil))
	return mrand.NewChaCha8(s)
}

// preinitialize snapshots code (already carrying the renamed initialiser)
// for instances mounting preopens. A module that cannot be snapshotted is
// returned unchanged: that is never an error, only slower instances.
func (a *Adapter) preinitialize(code []byte, rawHash string, preopens []string, maxMemory int64, log hclog.Logger) []byte {
	ctx, cancel := context.WithTimeout(context.Background(), snapshotTimeout)
	defer cancel()
	start := time.Now()
	snap, rep, err := snapshot.Snapshot(ctx, code, snapshot.Options{
		InitExport:     initExport,
		Preopens:       preopens,
		Random:         a.snapshotRandom(rawHash, preopens),
		MaxMemoryPages: uint32(min(maxMemory>>16, 1<<16)),
	})
	switch {
	case errors.Is(err, snapshot.ErrRefused), errors.Is(err, snapshot.ErrNoInitializer):
		log.Debug("not pre-initialising the module; instances run its initialiser", "reason", err.Error())
		return code
	case errors.Is(err, wasmbin.ErrMalformed):
		return code // compiling it will say what is wrong
	case err != nil:
		log.Warn("pre-initialising the module failed; instances run its initialiser", "error", err)
		return code
	}
	log.Debug("pre-initialised the module", "duration", time.Since(start), "preopens", preopens,
		"memory_pages", rep.MemoryPages, "data_bytes", rep.DataBytes, "bytes_before", len(code), "bytes_after", len(snap))
	return snap
}

// snapshotPreopens returns the preopens to snapshot t's module for, or nil
// when it is not to be snapshotted.
func (t *wasmTool) snapshotPreopens() []string {
	if !t.a.snap || t.snap.off || t.info.initName == "" {
		return nil
	}
	return guestPaths(t.spec)
}

// noteSnapshot records whether the module compiled for t is a snapshot and
// for which preopens (from the module itself, so that a module read back
// from the cache directory is judged by what it is).
func (t *wasmTool) noteSnapshot(code []byte) {
	t.snap.minMemory = minMemory(code)
	if t.snap.off {
		return
	}
	if info, ok := snapshot.Describe(code); ok {
		t.snap.on, t.snap.preopens = true, info.Preopens
		t.snap.plan = guestmem.NewPlan(code, t.snap.minMemory)
	}
}

// minMemory returns the initial size, in bytes, of a module's own memory;
// 0 if it has none or the module cannot be read (the compiler will say so).
func minMemory(code []byte) uint64 {
	m, err := wasmbin.Parse(code)
	if err != nil {
		return 0
	}
	sec, ok := m.Find(wasmbin.SectionMemory)
	if !ok {
		return 0
	}
	r := wasmbin.NewReader(sec)
	if n, err := r.U32(); err != nil || n == 0 {
		return 0
	}
	if _, err := r.Byte(); err != nil { // flags
		return 0
	}
	pages, err := r.U64()
	if err != nil {
		return 0
	}
	return pages << 16
}

// useSnapshot reports whether an instance for spec may be made from the
// compiled module. A snapshot is only valid with the exact mounts it was
// made for: the guest resolves paths against the directory list it saw
// while snapshotting, so any other list would send its file operations to
// the wrong directories.
func (t *wasmTool) useSnapshot(spec *plugin.Spec) bool {
	return !t.snap.on || slices.Equal(guestPaths(spec), t.snap.preopens)
}

// plainTool returns a tool compiled from the module without a snapshot, for
// instances whose mounts differ from the snapshot's. It is compiled once, on
// first need, and closed with t.
func (t *wasmTool) plainTool(ctx context.Context) (*wasmTool, error) {
	t.snap.once.Do(func() {
		raw, _, err := t.a.artifact(t.spec)
		if err == nil && !strings.HasPrefix(t.key, sha256Hex(raw)) {
			err = errors.New("the module changed since it was loaded")
		}
		if err != nil {
			t.snap.err = plugin.Errorf(plugin.CodeToolUnavailable, "%s: %v", t.where, err)
			return
		}
		key := strings.Replace(t.key, snapshotKey(t.snap.preopens), "", 1)
		p := newTool(t.a, t.spec, t.mode, t.info, raw, key, t.where)
		p.snap.off = true
		p.pool = nil          // instances are made on demand
		p.start.Do(p.compile) // synchronously: the caller needs it now
		t.snap.plain, t.snap.err = p, p.compErr
	})
	if t.snap.err != nil {
		return nil, t.snap.err
	}
	return t.snap.plain, ctx.Err()
}

// closePlain closes the plain tool, if one was made. t's guests must have
// stopped.
func (t *wasmTool) closePlain() {
	t.snap.once.Do(func() {}) // none will be made from now on
	if t.snap.plain != nil {
		t.snap.plain.Close()
	}
}

// preinit returns the snapshot step of t's load-time transform, or nil.
func (t *wasmTool) preinit() func(code []byte) []byte {
	pre := t.snapshotPreopens()
	if pre == nil {
		return nil
	}
	rawHash, _, _ := strings.Cut(t.key, "+") // the key starts with the artifact's hash
	return func(code []byte) []byte {
		return t.a.preinitialize(code, rawHash, pre, t.limits.Memory, t.log)
	}
}
