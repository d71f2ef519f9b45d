// Package snapshot pre-initialises WebAssembly modules, in the manner of the
// Bytecode Alliance's Wizer: it instantiates a module once, runs its
// initialiser (Go's wasip1 c-shared runtime does all of its start-up work in
// the exported _initialize), and writes a new module whose data segments hold
// the resulting linear memory and whose global initialisers hold the
// resulting globals. Instances of the new module start where the initialiser
// finished, without running it again.
//
// The initialiser runs with no arguments, no environment, no files, no
// network and no host functions other than a few WASI calls whose effect can
// be reproduced (see Options and the package documentation in
// docs/snapshot.md). If it calls anything else, Snapshot refuses with a
// *RefusedError naming the import.
package snapshot

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/toolhost/toolhost/extism/internal/wasmbin"
)

// DefaultInitExports are the initialiser names Snapshot looks for, in order,
// when Options.InitExport is empty: WASI reactors' _initialize, and
// toolhost.init, the name the extism adapter renames it to.
var DefaultInitExports = []string{"_initialize", "toolhost.init"}

// Version names the output format of Snapshot, for hosts' cache keys (which
// must also name Options.Preopens).
const Version = "snapshot-v2"

// ErrNoInitializer is returned when the module exports none of the
// initialiser names; there is nothing to snapshot.
var ErrNoInitializer = errors.New("snapshot: module has no initialiser export")

// ErrRefused is matched (errors.Is) by every *RefusedError.
var ErrRefused = errors.New("snapshot refused")

// RefusedError says why a module cannot be snapshotted faithfully.
type RefusedError struct {
	// Import is the module/name of the host import responsible, if any.
	Import string
	// Reason is a sentence for people.
	Reason string
}

func (e *RefusedError) Error() string {
	if e.Import != "" {
		return fmt.Sprintf("snapshot refused: initialisation called %s: %s", e.Import, e.Reason)
	}
	return "snapshot refused: " + e.Reason
}

// Is makes errors.Is(err, ErrRefused) hold.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// Options configure Snapshot. The zero value is usable.
type Options struct {
	// InitExport names the initialiser; empty tries DefaultInitExports.
	InitExport string
	// Random serves the initialiser's random_get calls. Nil uses
	// crypto/rand, so every snapshot gets its own seed. Whatever the source,
	// the bytes become part of the snapshot and are shared by every instance
	// made from it (see Report.RandomBytes).
	Random io.Reader
	// Preopens are the guest paths of the directories instances will be
	// given, in the order they are mounted (file descriptors 3, 4, ...).
	// Go's runtime lists its preopened directories once, during
	// initialisation, so a snapshot only works with exactly this list; the
	// directories themselves are not opened, only their names are shown.
	Preopens []string
	// RuntimeConfig is the wazero configuration of the initialisation run;
	// nil uses wazero's interpreter, which starts much faster than its
	// compiler on a large module run only once (a Go runtime initialises in
	// well under a million instructions). Use it to enable features the
	// module needs.
	// Snapshot always adds close-on-context-done, so that the context's
	// deadline stops an initialiser that does not finish, and a memory limit.
	RuntimeConfig wazero.RuntimeConfig
	// MaxMemoryPages caps the initialiser's linear memory, in 64 KiB pages;
	// 0 means 16384 (1 GiB, toolhost's largest memory limit).
	MaxMemoryPages uint32
}

// Report describes a snapshot.
type Report struct {
	// InitExport is the initialiser that ran.
	InitExport string
	// Calls counts the host imports the initialiser called, by module/name.
	Calls map[string]int
	// RandomBytes is how many bytes of randomness the initialiser read.
	// They are frozen into the snapshot: for a Go guest they seed the
	// runtime's map hashing and math/rand, which are then the same in every
	// instance made from this snapshot. crypto/rand is not affected: it asks
	// the host at each use.
	RandomBytes int
	// ReadEnvironment is set when the initialiser asked for its arguments or
	// environment variables; it saw none, and instances will see none
	// either, whatever the host passes at instantiation.
	ReadEnvironment bool
	// MemoryPages is the size of linear memory after initialisation, in
	// 64 KiB pages; it becomes the memory's minimum size.
	MemoryPages uint32
	// DataBytes is the size of the data segments written (zero runs are
	// left out).
	DataBytes int
	// Globals is the number of mutable globals whose values were captured.
	Globals int
}

// wasiModule is the WASI preview 1 import module name.
const wasiModule = "wasi_snapshot_preview1"

// Snapshot runs the module's initialiser and returns a module that starts in
// the initialised state. ctx bounds the initialisation run: give it a
// deadline, since the initialiser is the guest's code. The initialiser export is kept but points to a new
// empty function, so hosts that call it (go-sdk calls _initialize before the
// first call; the extism adapter calls toolhost.init) do no work twice; a
// start function, if any, is removed for the same reason.
func Snapshot(ctx context.Context, wasm []byte, opts Options) ([]byte, *Report, error) {
	m, err := wasmbin.Parse(wasm)
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot: %w", err)
	}
	mi, err := inspect(m, opts.InitExport)
	if err != nil {
		return nil, nil, err
	}
	rep := &Report{InitExport: mi.initName, Calls: map[string]int{}}
	state, err := run(ctx, wasm, mi, opts, rep)
	if err != nil {
		return nil, rep, err
	}
	out, err := rewrite(m, mi, state, rep, append([]string{}, opts.Preopens...))
	if err != nil {
		return nil, rep, fmt.Errorf("snapshot: %w", err)
	}
	return out, rep, nil
}

// moduleInfo is what Snapshot needs to know about the input module.
type moduleInfo struct {
	types         []wasmbin.FuncType
	imports       []wasmbin.Import
	funcs         []uint32
	globals       []wasmbin.Global
	exports       []wasmbin.Export
	initName      string
	initIndex     uint32
	memoryImports bool
	memory        []byte // raw memory section
}

func inspect(m *wasmbin.Module, initName string) (*moduleInfo, error) {
	mi := &moduleInfo{}
	var err error
	if b, ok := m.Find(wasmbin.SectionType); ok {
		if mi.types, err = wasmbin.DecodeTypes(b); err != nil {
			return nil, fmt.Errorf("snapshot: type section: %w", err)
		}
	}
	if b, ok := m.Find(wasmbin.SectionImport); ok {
		if mi.imports, err = wasmbin.DecodeImports(b); err != nil {
			return nil, fmt.Errorf("snapshot: import section: %w", err)
		}
	}
	if b, ok := m.Find(wasmbin.SectionFunction); ok {
		if mi.funcs, err = wasmbin.DecodeU32Vec(b); err != nil {
			return nil, fmt.Errorf("snapshot: function section: %w", err)
		}
	}
	if b, ok := m.Find(wasmbin.SectionGlobal); ok {
		if mi.globals, err = wasmbin.DecodeGlobals(b); err != nil {
			return nil, fmt.Errorf("snapshot: global section: %w", err)
		}
	}
	if b, ok := m.Find(wasmbin.SectionExport); ok {
		if mi.exports, err = wasmbin.DecodeExports(b); err != nil {
			return nil, fmt.Errorf("snapshot: export section: %w", err)
		}
	}
	for _, im := range mi.imports {
		switch im.Kind {
		case wasmbin.KindMemory:
			return nil, &RefusedError{Reason: fmt.Sprintf("the module imports its memory (%s.%s); only a module's own memory can be captured", im.Module, im.Name)}
		case wasmbin.KindTable:
			return nil, &RefusedError{Reason: fmt.Sprintf("the module imports a table (%s.%s)", im.Module, im.Name)}
		case wasmbin.KindGlobal:
			return nil, &RefusedError{Reason: fmt.Sprintf("the module imports a global (%s.%s), whose value at run time cannot be known", im.Module, im.Name)}
		case wasmbin.KindTag:
			return nil, &RefusedError{Reason: fmt.Sprintf("the module imports a tag (%s.%s)", im.Module, im.Name)}
		}
	}
	mem, ok := m.Find(wasmbin.SectionMemory)
	if !ok {
		return nil, &RefusedError{Reason: "the module has no memory of its own"}
	}
	r := wasmbin.NewReader(mem)
	if n, err := r.U32(); err != nil || n != 1 {
		return nil, &RefusedError{Reason: "the module does not have exactly one memory"}
	}
	if flags, err := r.Byte(); err != nil || flags&^1 != 0 {
		return nil, &RefusedError{Reason: "shared or 64-bit memories are not supported"}
	}
	mi.memory = mem

	names := DefaultInitExports
	if initName != "" {
		names = []string{initName}
	}
	for _, n := range names {
		for _, e := range mi.exports {
			if e.Kind == wasmbin.KindFunc && e.Name == n {
				mi.initName, mi.initIndex = n, e.Index
				break
			}
		}
		if mi.initName != "" {
			break
		}
	}
	if mi.initName == "" {
		return nil, ErrNoInitializer
	}
	if t, ok := mi.funcType(mi.initIndex); !ok || len(t.Params) != 0 || len(t.Results) != 0 {
		return nil, &RefusedError{Reason: fmt.Sprintf("initialiser %s does not have type () -> ()", mi.initName)}
	}

	// Static checks on code: segments and tables must not change behind the
	// snapshot's back.
	if b, ok := m.Find(wasmbin.SectionData); ok {
		if err := checkActiveData(b); err != nil {
			return nil, err
		}
	}
	if b, ok := m.Find(wasmbin.SectionCode); ok {
		codes, err := wasmbin.DecodeCode(b)
		if err != nil {
			return nil, fmt.Errorf("snapshot: code section: %w", err)
		}
		for _, c := range codes {
			if err := checkCode(c.Body); err != nil {
				return nil, err
			}
		}
	}
	return mi, nil
}

func (mi *moduleInfo) funcType(f uint32) (wasmbin.FuncType, bool) {
	var n uint32
	for _, im := range mi.imports {
		if im.Kind != wasmbin.KindFunc {
			continue
		}
		if n == f {
			if int(im.TypeIndex) < len(mi.types) {
				return mi.types[im.TypeIndex], true
			}
			return wasmbin.FuncType{}, false
		}
		n++
	}
	i := f - n
	if int(i) >= len(mi.funcs) || int(mi.funcs[i]) >= len(mi.types) {
		return wasmbin.FuncType{}, false
	}
	return mi.types[mi.funcs[i]], true
}

// checkActiveData refuses passive data segments: their contents are read by
// memory.init at run time, which a memory image cannot stand in for.
func checkActiveData(b []byte) error {
	r := wasmbin.NewReader(b)
	n, err := r.U32()
	if err != nil {
		return fmt.Errorf("snapshot: data section: %w", err)
	}
	for i := uint32(0); i < n; i++ {
		flags, err := r.U32()
		if err != nil {
			return fmt.Errorf("snapshot: data section: %w", err)
		}
		switch flags {
		case 0:
		case 2:
			if _, err := r.U32(); err != nil {
				return fmt.Errorf("snapshot: data section: %w", err)
			}
		default:
			return &RefusedError{Reason: "the module has passive data segments"}
		}
		if _, err := r.ConstExpr(); err != nil {
			return fmt.Errorf("snapshot: data section: %w", err)
		}
		size, err := r.U32()
		if err != nil {
			return fmt.Errorf("snapshot: data section: %w", err)
		}
		if _, err := r.Bytes(int(size)); err != nil {
			return fmt.Errorf("snapshot: data section: %w", err)
		}
	}
	return nil
}

// checkCode refuses instructions whose effects the snapshot cannot capture:
// table mutation (tables are not captured, so they must provably keep their
// initial contents) and data segment access.
func checkCode(body []byte) error {
	d := wasmbin.NewDecoder(body)
	for !d.EOF() {
		in, err := d.Next()
		if err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		switch {
		case in.Op == 0x26: // table.set
			return &RefusedError{Reason: "the module can modify its tables (table.set), which a snapshot does not capture"}
		case in.Op == wasmbin.OpPrefixFC && (in.Sub == 12 || in.Sub == 13 || in.Sub == 14 || in.Sub == 15 || in.Sub == 17):
			return &RefusedError{Reason: "the module can modify its tables (table.init/copy/grow/fill), which a snapshot does not capture"}
		case in.Op == wasmbin.OpPrefixFC && (in.Sub == 8 || in.Sub == 9):
			return &RefusedError{Reason: "the module uses memory.init or data.drop, which depend on data segments a snapshot replaces"}
		}
	}
	return nil
}

// state is what the initialiser left behind.
type state struct {
	memory  []byte
	globals map[uint32]uint64 // defined global index (in the global section) -> value bits
}

// run instantiates the module with recording host modules, calls the
// initialiser and reads memory and globals.
func run(ctx context.Context, wasm []byte, mi *moduleInfo, opts Options, rep *Report) (*state, error) {
	cfg := opts.RuntimeConfig
	if cfg == nil {
		cfg = wazero.NewRuntimeConfigInterpreter()
	}
	pages := opts.MaxMemoryPages
	if pages == 0 {
		pages = 16384
	}
	cfg = cfg.WithCloseOnContextDone(true).WithMemoryLimitPages(pages)
	r := wazero.NewRuntimeWithConfig(ctx, cfg)
	defer r.Close(ctx)

	rec := &recorder{rep: rep, random: opts.Random, preopens: opts.Preopens}
	if rec.random == nil {
		rec.random = rand.Reader
	}
	byModule := map[string][]wasmbin.Import{}
	var order []string
	for _, im := range mi.imports {
		if im.Kind != wasmbin.KindFunc {
			continue
		}
		if _, ok := byModule[im.Module]; !ok {
			order = append(order, im.Module)
		}
		byModule[im.Module] = append(byModule[im.Module], im)
	}
	for _, name := range order {
		b := r.NewHostModuleBuilder(name)
		seen := map[string]bool{}
		for _, im := range byModule[name] {
			if seen[im.Name] {
				continue
			}
			seen[im.Name] = true
			if int(im.TypeIndex) >= len(mi.types) {
				return nil, fmt.Errorf("snapshot: import %s.%s has type %d", im.Module, im.Name, im.TypeIndex)
			}
			t := mi.types[im.TypeIndex]
			b.NewFunctionBuilder().WithGoModuleFunction(rec.function(im.Module, im.Name, t), valueTypes(t.Params), valueTypes(t.Results)).Export(im.Name)
		}
		if _, err := b.Instantiate(ctx); err != nil {
			return nil, fmt.Errorf("snapshot: host module %s: %w", name, err)
		}
	}

	// The module runs with one change: every mutable global is exported
	// under a private name, because wazero reads only exported globals.
	// Exports are invisible to the guest's code, so it behaves the same.
	m, err := wasmbin.Parse(wasm)
	if err != nil {
		return nil, err
	}
	exports := slices.Clone(mi.exports)
	nImported := wasmbin.GlobalImportCount(mi.imports)
	var mutable []uint32
	for i, g := range mi.globals {
		if g.Mutable {
			mutable = append(mutable, uint32(i))
			exports = append(exports, wasmbin.Export{Name: probeName(uint32(i)), Kind: wasmbin.KindGlobal, Index: nImported + uint32(i)})
		}
	}
	m.Set(wasmbin.SectionExport, wasmbin.EncodeExports(exports))
	cm, err := r.CompileModule(ctx, m.Encode())
	if err != nil {
		return nil, fmt.Errorf("snapshot: compile: %w", err)
	}
	// No arguments, environment, files, clocks or randomness from the
	// host: the recorder answers the few WASI calls it allows itself.
	mod, err := r.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		if rec.err != nil {
			return nil, rec.err
		}
		return nil, &RefusedError{Reason: fmt.Sprintf("instantiation (start function) failed: %v", firstLine(err.Error()))}
	}
	if _, err := mod.ExportedFunction(mi.initName).Call(ctx); err != nil {
		if rec.err != nil {
			return nil, rec.err
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("snapshot: initialiser %s did not finish: %w", mi.initName, ctx.Err())
		}
		return nil, &RefusedError{Reason: fmt.Sprintf("initialiser %s failed: %v", mi.initName, firstLine(err.Error()))}
	}
	if rec.err != nil { // a refusal the guest recovered from
		return nil, rec.err
	}

	st := &state{globals: map[uint32]uint64{}}
	mem := mod.Memory()
	buf, ok := mem.Read(0, mem.Size())
	if !ok {
		return nil, errors.New("snapshot: reading memory")
	}
	st.memory = bytes.Clone(buf)
	rep.MemoryPages = mem.Size() / 65536
	for _, i := range mutable {
		g := mod.ExportedGlobal(probeName(i))
		if g == nil {
			return nil, fmt.Errorf("snapshot: global %d not readable", i)
		}
		st.globals[i] = g.Get()
	}
	return st, nil
}

func probeName(i uint32) string { return fmt.Sprintf("toolhost.snapshot.global.%d", i) }

func valueTypes(b []byte) []api.ValueType { return append([]api.ValueType(nil), b...) }

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// recorder answers the initialiser's host calls. It serves what can be
// reproduced, counts everything, and refuses the rest.
type recorder struct {
	rep      *Report
	random   io.Reader
	preopens []string

	mu    sync.Mutex
	err   error
	clock uint64
}

func (rec *recorder) refuse(imp, reason string) {
	rec.mu.Lock()
	if rec.err == nil {
		rec.err = &RefusedError{Import: imp, Reason: reason}
	}
	rec.mu.Unlock()
	panic(rec.err)
}

// function returns the host function standing in for import module.name.
func (rec *recorder) function(module, name string, t wasmbin.FuncType) api.GoModuleFunc {
	imp := module + "." + name
	i32 := wasmbin.I32
	sig := func(params []byte, results ...byte) bool {
		return bytes.Equal(t.Params, params) && bytes.Equal(t.Results, results)
	}
	count := func() {
		rec.mu.Lock()
		rec.rep.Calls[imp]++
		rec.mu.Unlock()
	}
	refuse := func(reason string) api.GoModuleFunc {
		return func(ctx context.Context, m api.Module, stack []uint64) {
			count()
			rec.refuse(imp, reason)
		}
	}
	if module != wasiModule {
		return refuse("only WASI calls can be replayed into a snapshot; this host function may depend on or change host state")
	}
	const errnoSuccess, errnoInval = 0, 28
	switch name {
	case "args_sizes_get", "environ_sizes_get":
		if !sig([]byte{i32, i32}, i32) {
			break
		}
		return func(ctx context.Context, m api.Module, stack []uint64) {
			count()
			rec.rep.ReadEnvironment = true
			m.Memory().WriteUint32Le(uint32(stack[0]), 0)
			m.Memory().WriteUint32Le(uint32(stack[1]), 0)
			stack[0] = errnoSuccess
		}
	case "args_get", "environ_get":
		if !sig([]byte{i32, i32}, i32) {
			break
		}
		return func(ctx context.Context, m api.Module, stack []uint64) {
			count()
			rec.rep.ReadEnvironment = true
			stack[0] = errnoSuccess
		}
	case "sched_yield":
		if !sig(nil, i32) {
			break
		}
		return func(ctx context.Context, m api.Module, stack []uint64) {
			count()
			stack[0] = errnoSuccess
		}
	case "random_get":
		if !sig([]byte{i32, i32}, i32) {
			break
		}
		return func(ctx context.Context, m api.Module, stack []uint64) {
			count()
			buf := rec.randomBytes(imp, int(uint32(stack[1])))
			if !m.Memory().Write(uint32(stack[0]), buf) {
				stack[0] = errnoInval
				return
			}
			stack[0] = errnoSuccess
		}
	case "clock_res_get":
		if !sig([]byte{i32, i32}, i32) {
			break
		}
		return func(ctx context.Context, m api.Module, stack []uint64) {
			count()
			m.Memory().WriteUint64Le(uint32(stack[1]), 1000)
			stack[0] = errnoSuccess
		}
	case "clock_time_get":
		if !sig([]byte{i32, wasmbin.I64, i32}, i32) {
			break
		}
		return func(ctx context.Context, m api.Module, stack []uint64) {
			count()
			switch uint32(stack[0]) {
			case 1, 2, 3: // monotonic, process and thread CPU time
				// A clock that starts at zero and ticks a microsecond per
				// reading: every later reading by an instance (from a
				// clock that started with the host process) is larger, so
				// time never runs backwards for the guest.
				rec.mu.Lock()
				rec.clock += 1000
				v := rec.clock
				rec.mu.Unlock()
				m.Memory().WriteUint64Le(uint32(stack[2]), v)
				stack[0] = errnoSuccess
			default:
				rec.refuse(imp, "the initialiser read the wall clock; the time would be frozen into the snapshot")
			}
		}
	case "fd_fdstat_get":
		if !sig([]byte{i32, i32}, i32) {
			break
		}
		return func(ctx context.Context, m api.Module, stack []uint64) {
			count()
			fd := uint32(stack[0])
			if fd > 2 {
				rec.refuse(imp, fmt.Sprintf("the initialiser inspected file descriptor %d; only standard I/O exists while snapshotting", fd))
			}
			// Go's os package asks for the flags of standard I/O when it
			// initialises. Answer what wazero reports for the stdio a host
			// gives instances (readers and writers, not host files): a
			// character device without append or non-blocking flags.
			const charDevice = 2
			const rights = 1<<0 | 1<<1 | 1<<3 | 1<<4 | 1<<6 | 1<<7 | 1<<8 | 1<<21 | 1<<22 | 1<<23 | 1<<27
			var st [24]byte
			st[0] = charDevice
			binary.LittleEndian.PutUint64(st[8:], rights)
			if !m.Memory().Write(uint32(stack[1]), st[:]) {
				stack[0] = errnoInval
				return
			}
			stack[0] = errnoSuccess
		}
	case "fd_fdstat_set_flags":
		if !sig([]byte{i32, i32}, i32) {
			break
		}
		return func(ctx context.Context, m api.Module, stack []uint64) {
			count()
			fd, flags := uint32(stack[0]), uint16(stack[1])
			if fd > 2 {
				rec.refuse(imp, fmt.Sprintf("the initialiser changed file descriptor %d; only standard I/O exists while snapshotting", fd))
			}
			// Go's os package tries to make standard I/O non-blocking.
			// wazero refuses that (ENOSYS) for reader and writer stdio,
			// which is what instances get, so the answer and the state
			// it leaves (none) are the same as at run time.
			const nonblock = 1 << 2
			if flags&nonblock != 0 {
				stack[0] = 52 // ENOSYS
				return
			}
			if flags != 0 {
				rec.refuse(imp, fmt.Sprintf("the initialiser set flags 0x%x on standard I/O", flags))
			}
			stack[0] = errnoSuccess
		}
	case "fd_prestat_get":
		if !sig([]byte{i32, i32}, i32) {
			break
		}
		return func(ctx context.Context, m api.Module, stack []uint64) {
			count()
			i := int64(uint32(stack[0])) - 3
			if i < 0 || i >= int64(len(rec.preopens)) {
				stack[0] = 8 // EBADF: no more preopened directories
				return
			}
			var st [8]byte // tag 0 (directory), name length
			binary.LittleEndian.PutUint32(st[4:], uint32(len(rec.preopens[i])))
			if !m.Memory().Write(uint32(stack[1]), st[:]) {
				stack[0] = errnoInval
				return
			}
			stack[0] = errnoSuccess
		}
	case "fd_prestat_dir_name":
		if !sig([]byte{i32, i32, i32}, i32) {
			break
		}
		return func(ctx context.Context, m api.Module, stack []uint64) {
			count()
			i := int64(uint32(stack[0])) - 3
			if i < 0 || i >= int64(len(rec.preopens)) {
				stack[0] = 8
				return
			}
			name := rec.preopens[i]
			if int(uint32(stack[2])) < len(name) || !m.Memory().Write(uint32(stack[1]), []byte(name)) {
				stack[0] = errnoInval
				return
			}
			stack[0] = errnoSuccess
		}
	case "proc_exit":
		return refuse("the initialiser exited")
	case "fd_write", "fd_pwrite":
		return refuse("the initialiser wrote output, which would be lost from every instance")
	default:
		return refuse("files, sockets, polling and signals are not available while snapshotting")
	}
	return refuse(fmt.Sprintf("unexpected signature %v -> %v", t.Params, t.Results))
}

func (rec *recorder) randomBytes(imp string, n int) []byte {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	b := make([]byte, n)
	if _, err := io.ReadFull(rec.random, b); err != nil {
		rec.err = fmt.Errorf("snapshot: random source: %w", err)
		panic(rec.err)
	}
	rec.rep.RandomBytes += n
	return b
}

// rewrite writes the snapshot module: memory image as data, globals as
// constants, initialiser replaced by an empty function, start removed.
func rewrite(m *wasmbin.Module, mi *moduleInfo, st *state, rep *Report, preopens []string) ([]byte, error) {
	// Globals.
	if len(mi.globals) > 0 {
		globals := slices.Clone(mi.globals)
		for i := range globals {
			v, ok := st.globals[uint32(i)]
			if !ok {
				continue
			}
			globals[i].Init = constExpr(globals[i].Type, v)
			if globals[i].Init == nil {
				return nil, &RefusedError{Reason: fmt.Sprintf("mutable global %d has type 0x%x, which cannot be captured", i, globals[i].Type)}
			}
			rep.Globals++
		}
		m.Set(wasmbin.SectionGlobal, wasmbin.EncodeGlobals(globals))
	}

	// Memory: minimum = current size, same maximum.
	pages := uint32(len(st.memory) / 65536)
	r := wasmbin.NewReader(mi.memory)
	r.U32()
	flags, _ := r.Byte()
	r.U64() // old minimum
	mem := wasmbin.AppendU32(nil, 1)
	mem = append(mem, flags)
	mem = wasmbin.AppendU32(mem, pages)
	if flags&1 != 0 {
		max, err := r.U64()
		if err != nil {
			return nil, err
		}
		mem = wasmbin.AppendU64(mem, max)
	}
	m.Set(wasmbin.SectionMemory, mem)

	// Data: the memory image without long zero runs.
	segs := segments(st.memory)
	data := wasmbin.AppendU32(nil, uint32(len(segs)))
	for _, s := range segs {
		data = append(data, 0, wasmbin.OpI32Const)
		data = wasmbin.AppendS64(data, int64(int32(uint32(s.off))))
		data = append(data, wasmbin.OpEnd)
		data = wasmbin.AppendU32(data, uint32(len(s.b)))
		data = append(data, s.b...)
		rep.DataBytes += len(s.b)
	}
	m.Remove(func(s wasmbin.Section) bool { return s.ID == wasmbin.SectionDataCount })
	m.Set(wasmbin.SectionData, data)

	// The initialiser becomes an empty function; the start function goes.
	types := slices.Clone(mi.types)
	voidType := uint32(len(types))
	for i, t := range types {
		if len(t.Params) == 0 && len(t.Results) == 0 {
			voidType = uint32(i)
			break
		}
	}
	if int(voidType) == len(types) {
		types = append(types, wasmbin.FuncType{})
		m.Set(wasmbin.SectionType, wasmbin.EncodeTypes(types))
	}
	funcs := append(slices.Clone(mi.funcs), voidType)
	noop := wasmbin.FuncImportCount(mi.imports) + uint32(len(funcs)) - 1
	m.Set(wasmbin.SectionFunction, wasmbin.EncodeU32Vec(funcs))
	codeSec, _ := m.Find(wasmbin.SectionCode)
	cr := wasmbin.NewReader(codeSec)
	n, err := cr.U32()
	if err != nil {
		return nil, err
	}
	code := wasmbin.AppendU32(nil, n+1)
	code = append(code, codeSec[cr.Pos():]...)
	code = wasmbin.AppendCode(code, &wasmbin.Code{Body: []byte{wasmbin.OpEnd}})
	m.Set(wasmbin.SectionCode, code)
	exports := slices.Clone(mi.exports)
	for i := range exports {
		if exports[i].Kind == wasmbin.KindFunc && exports[i].Index == mi.initIndex {
			exports[i].Index = noop
		}
	}
	m.Set(wasmbin.SectionExport, wasmbin.EncodeExports(exports))
	m.Remove(func(s wasmbin.Section) bool { return s.ID == wasmbin.SectionStart })

	// Record what the snapshot assumed, for hosts to check (Describe).
	info, err := json.Marshal(Info{Version: Version, InitExport: mi.initName, Preopens: preopens})
	if err != nil {
		return nil, err
	}
	m.Sections = append(m.Sections, wasmbin.Section{ID: wasmbin.SectionCustom, Data: append(wasmbin.AppendName(nil, infoSection), info...)})
	return m.Encode(), nil
}

// infoSection is the custom section a snapshot records its assumptions in.
const infoSection = "toolhost.snapshot"

// Info is what a snapshot module records about how it was made.
type Info struct {
	Version    string   `json:"version"`
	InitExport string   `json:"init_export"`
	Preopens   []string `json:"preopens"`
}

// Describe returns the Info recorded in a snapshot module (it survives fuel
// instrumentation), and false for a module that is not a snapshot. Hosts
// must give every instance of a snapshot exactly Info.Preopens, in order:
// the guest resolves paths with the directory list it saw while
// snapshotting, so a different list would send its file operations to the
// wrong directories.
func Describe(wasm []byte) (*Info, bool) {
	m, err := wasmbin.Parse(wasm)
	if err != nil {
		return nil, false
	}
	for _, s := range m.Sections {
		if s.CustomName() != infoSection {
			continue
		}
		r := wasmbin.NewReader(s.Data)
		if _, err := r.Name(); err != nil {
			return nil, false
		}
		var info Info
		if json.Unmarshal(s.Data[r.Pos():], &info) != nil {
			return nil, false
		}
		return &info, true
	}
	return nil, false
}

func constExpr(t byte, v uint64) []byte {
	var b []byte
	switch t {
	case wasmbin.I32:
		b = wasmbin.AppendS64([]byte{wasmbin.OpI32Const}, int64(int32(uint32(v))))
	case wasmbin.I64:
		b = wasmbin.AppendS64([]byte{wasmbin.OpI64Const}, int64(v))
	case wasmbin.F32:
		b = binary.LittleEndian.AppendUint32([]byte{wasmbin.OpF32Const}, uint32(v))
	case wasmbin.F64:
		b = binary.LittleEndian.AppendUint64([]byte{wasmbin.OpF64Const}, v)
	default:
		return nil
	}
	return append(b, wasmbin.OpEnd)
}

type segment struct {
	off int
	b   []byte
}

// segments splits a memory image into non-zero runs, merging runs separated
// by fewer than minGap zero bytes (each segment costs a few bytes of header
// and a copy call at instantiation).
func segments(mem []byte) []segment {
	const minGap = 1024
	// Go's copy moves 1 MiB or more with non-temporal stores, which leave
	// the instance's memory out of the CPU caches: its first call then
	// reads it all from DRAM. Smaller segments are copied through the
	// cache, where the call finds them.
	const maxSegment = 256 << 10
	var segs []segment
	i := 0
	for i < len(mem) {
		for i < len(mem) && mem[i] == 0 {
			i++
		}
		if i == len(mem) {
			break
		}
		start := i
		zeros := 0
		for i < len(mem) && zeros < minGap {
			if mem[i] == 0 {
				zeros++
			} else {
				zeros = 0
			}
			i++
		}
		end := i - zeros
		for end-start > maxSegment {
			segs = append(segs, segment{off: start, b: mem[start : start+maxSegment]})
			start += maxSegment
		}
		segs = append(segs, segment{off: start, b: mem[start:end]})
	}
	if len(segs) > math.MaxUint32 {
		return nil
	}
	return segs
}
