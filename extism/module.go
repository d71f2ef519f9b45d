package extism

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/toolhost/toolhost/extism/internal/fuel"
	"github.com/toolhost/toolhost/extism/internal/wasmbin"
)

// Export names of the guest contract.
const (
	exportListTools = "list_tools"
	exportCallTool  = "call_tool"
	// initExport is what guest runtime initialisers (_initialize,
	// __wasm_call_ctors) are renamed to, so that go-sdk does not run them
	// lazily on the first call; the pool runs them while pre-instantiating.
	initExport = "toolhost.init"
)

var wasmMagic = []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}

// moduleInfo is what a quick scan of a module's binary tells us without
// compiling it.
type moduleInfo struct {
	exports map[string]byte // name -> extern kind (0 = func)
	// funcImports are the module's function imports, "module.name".
	funcImports []wasmbin.Import
	// initName is the guest runtime initialiser export, if any.
	initName string
}

// Import modules a guest may import functions from: WASI (wazero provides
// every preview-1 function), the Extism kernel (go-sdk), and toolhost's
// own host functions, which go-sdk puts in extism:host/user.
const (
	importWASI   = "wasi_snapshot_preview1"
	importKernel = "extism:host/env"
	importUser   = "extism:host/user"
)

// unknownImports lists the function imports no instance of this adapter
// can satisfy: from another module, or a host function toolhost does not
// have. wazero would refuse to instantiate the module; saying so at load,
// naming them, beats TOOL_UNAVAILABLE at the first call.
func (m *moduleInfo) unknownImports() []string {
	var out []string
	for _, im := range m.funcImports {
		switch im.Module {
		case importWASI, importKernel, fuel.ImportModule:
			continue
		case importUser:
			if slices.Contains(hostFunctionNames(), im.Name) {
				continue
			}
		}
		out = append(out, fmt.Sprintf("%s.%s", im.Module, im.Name))
	}
	return out
}

func (m *moduleInfo) hasFunc(name string) bool {
	k, ok := m.exports[name]
	return ok && k == 0
}

// funcExports returns the exported functions, sorted as they appear.
func (m *moduleInfo) funcExports() []string {
	var out []string
	for n, k := range m.exports {
		if k == 0 && n != m.initName && !strings.HasPrefix(n, "toolhost.") && n != "toolhost_fast_io_v1" {
			out = append(out, n)
		}
	}
	return out
}

// errMalformed is wrapped by every scan failure.
var errMalformed = errors.New("malformed wasm module")

type reader struct {
	b   []byte
	off int
}

func (r *reader) byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, fmt.Errorf("%w: unexpected end at byte %d", errMalformed, r.off)
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

func (r *reader) u32() (uint32, error) {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		v |= uint32(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, nil
		}
	}
	return 0, fmt.Errorf("%w: LEB128 too long at byte %d", errMalformed, r.off)
}

func (r *reader) bytes(n uint32) ([]byte, error) {
	if uint64(r.off)+uint64(n) > uint64(len(r.b)) {
		return nil, fmt.Errorf("%w: truncated (need %d bytes at %d, have %d)", errMalformed, n, r.off, len(r.b)-r.off)
	}
	b := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return b, nil
}

// scanModule reads the section structure and export section of a core wasm
// module. It checks framing only; the compiler validates the rest.
func scanModule(b []byte) (*moduleInfo, error) {
	if len(b) < len(wasmMagic) || !bytes.Equal(b[:4], wasmMagic[:4]) {
		return nil, fmt.Errorf("%w: not a wasm binary (bad magic)", errMalformed)
	}
	if !bytes.Equal(b[4:8], wasmMagic[4:]) {
		return nil, fmt.Errorf("%w: unsupported wasm version % x (want a core module, version 1)", errMalformed, b[4:8])
	}
	m, exports, err := parseExports(b)
	if err != nil {
		return nil, err
	}
	info := &moduleInfo{exports: map[string]byte{}}
	if sec, ok := m.Find(wasmbin.SectionImport); ok {
		imports, err := wasmbin.DecodeImports(sec)
		if err != nil {
			return nil, fmt.Errorf("%w: import section: %v", errMalformed, err)
		}
		for _, im := range imports {
			if im.Kind == wasmbin.KindFunc {
				info.funcImports = append(info.funcImports, im)
			}
		}
	}
	for _, e := range exports {
		info.exports[e.Name] = e.Kind
	}
	for _, n := range []string{"_initialize", "__wasm_call_ctors"} {
		if info.hasFunc(n) {
			info.initName = n
			break
		}
	}
	return info, nil
}

// moduleExports returns the export section of module b, decoded.
func moduleExports(b []byte) ([]wasmbin.Export, error) {
	_, exports, err := parseExports(b)
	return exports, err
}

// parseExports parses module b and decodes its export section (nil when
// it has none).
func parseExports(b []byte) (*wasmbin.Module, []wasmbin.Export, error) {
	m, err := wasmbin.Parse(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errMalformed, err)
	}
	sec, ok := m.Find(wasmbin.SectionExport)
	if !ok {
		return m, nil, nil
	}
	exports, err := wasmbin.DecodeExports(sec)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: export section: %v", errMalformed, err)
	}
	return m, exports, nil
}

// renameExport returns a copy of module b with the export old renamed to
// new. Only the export section changes.
func renameExport(b []byte, old, new string) ([]byte, error) {
	m, exports, err := parseExports(b)
	if err != nil {
		return nil, err
	}
	if exports == nil {
		return b, nil
	}
	for i := range exports {
		if exports[i].Name == old {
			exports[i].Name = new
		}
	}
	m.Set(wasmbin.SectionExport, wasmbin.EncodeExports(exports))
	return m.Encode(), nil
}

func appendU32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// sleb32 reads a signed LEB128 32-bit integer.
func (r *reader) sleb32() (int32, error) {
	var v int64
	var shift uint
	for {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return int32(v), nil
		}
		if shift >= 35 {
			return 0, fmt.Errorf("%w: LEB128 too long at byte %d", errMalformed, r.off)
		}
	}
}

// skipLEB skips an unsigned LEB128 of any width.
func (r *reader) skipLEB() error {
	for {
		c, err := r.byte()
		if err != nil {
			return err
		}
		if c&0x80 == 0 {
			return nil
		}
	}
}

func appendS32(b []byte, v int32) []byte {
	x := int64(v)
	for {
		c := byte(x & 0x7f)
		x >>= 7
		if (x == 0 && c&0x40 == 0) || (x == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// importsMemory reports whether an import section payload imports a memory.
func importsMemory(payload []byte) (bool, error) {
	r := &reader{b: payload}
	n, err := r.u32()
	if err != nil {
		return false, err
	}
	for i := uint32(0); i < n; i++ {
		for range 2 { // module and field names
			l, err := r.u32()
			if err != nil {
				return false, err
			}
			if _, err := r.bytes(l); err != nil {
				return false, err
			}
		}
		kind, err := r.byte()
		if err != nil {
			return false, err
		}
		switch kind {
		case 0: // func: type index
			err = r.skipLEB()
		case 1: // table: reftype, limits
			if _, err = r.byte(); err == nil {
				err = r.skipLimits()
			}
		case 2:
			return true, nil
		case 3: // global: valtype, mutability
			if _, err = r.byte(); err == nil {
				_, err = r.byte()
			}
		case 4: // tag: attribute, type index
			if _, err = r.byte(); err == nil {
				err = r.skipLEB()
			}
		default:
			return false, fmt.Errorf("%w: unknown import kind %d", errMalformed, kind)
		}
		if err != nil {
			return false, err
		}
	}
	return false, nil
}

func (r *reader) skipLimits() error {
	flags, err := r.byte()
	if err != nil {
		return err
	}
	if err := r.skipLEB(); err != nil {
		return err
	}
	if flags&1 != 0 {
		return r.skipLEB()
	}
	return nil
}

// dataGap is the largest run of zeros coalesceData fills in to join two
// data segments.
const dataGap = 4 << 10

// coalesceData merges a module's data segments into as few as possible.
// Go's linker writes one active segment per run of non-zero bytes — tens of
// thousands for a Go guest — and wazero evaluates and copies each one at
// every instantiation (about 2 ms per instance for a Go guest). Segments
// are joined when the gap between them is at most dataGap bytes, written as
// zeros, which is what a fresh memory holds there anyway.
//
// It changes nothing (and returns b itself) unless it is certainly safe: every
// segment active on memory 0 with an i32.const offset, no two overlapping
// (then the order they are applied in does not matter), no data count section (so no instruction names a segment),
// and no imported memory (whose gaps might not be zero).
func coalesceData(b []byte) ([]byte, error) {
	type seg struct {
		off  uint32
		data []byte
	}
	var segs []seg
	var dataStart, dataEnd int
	r := &reader{b: b, off: 8}
	for r.off < len(b) {
		start := r.off
		id, err := r.byte()
		if err != nil {
			return nil, err
		}
		size, err := r.u32()
		if err != nil {
			return nil, err
		}
		payload, err := r.bytes(size)
		if err != nil {
			return nil, err
		}
		switch id {
		case 2:
			mem, err := importsMemory(payload)
			if err != nil || mem {
				return b, err
			}
		case 12:
			return b, nil
		case 11:
			dataStart, dataEnd = start, r.off
			pr := &reader{b: payload}
			n, err := pr.u32()
			if err != nil {
				return nil, err
			}
			for i := uint32(0); i < n; i++ {
				flag, err := pr.u32()
				if err != nil {
					return nil, err
				}
				if flag != 0 {
					return b, nil
				}
				op, err := pr.byte()
				if err != nil || op != 0x41 {
					return b, err
				}
				off, err := pr.sleb32()
				if err != nil {
					return nil, err
				}
				if e, err := pr.byte(); err != nil || e != 0x0b {
					return b, err
				}
				l, err := pr.u32()
				if err != nil {
					return nil, err
				}
				d, err := pr.bytes(l)
				if err != nil {
					return nil, err
				}
				segs = append(segs, seg{uint32(off), d})
			}
		}
	}
	if len(segs) < 2 {
		return b, nil
	}
	// Go's linker writes segments section by section, not in address
	// order. Segments that do not overlap can be applied in any order, so
	// sort them; if any two overlap, leave the module alone.
	slices.SortStableFunc(segs, func(x, y seg) int { return cmp.Compare(x.off, y.off) })
	for i := 1; i < len(segs); i++ {
		if uint64(segs[i].off) < uint64(segs[i-1].off)+uint64(len(segs[i-1].data)) {
			return b, nil
		}
	}
	var merged []seg
	for _, s := range segs {
		if k := len(merged) - 1; k >= 0 {
			last := &merged[k]
			lastEnd := uint64(last.off) + uint64(len(last.data))
			if uint64(s.off)-lastEnd <= dataGap {
				last.data = append(last.data, make([]byte, uint64(s.off)-lastEnd)...)
				last.data = append(last.data, s.data...)
				continue
			}
		}
		merged = append(merged, seg{s.off, append([]byte(nil), s.data...)})
	}
	if len(merged) == len(segs) {
		return b, nil
	}
	sec := appendU32(nil, uint32(len(merged)))
	for _, s := range merged {
		sec = append(sec, 0, 0x41)
		sec = appendS32(sec, int32(s.off))
		sec = append(sec, 0x0b)
		sec = appendU32(sec, uint32(len(s.data)))
		sec = append(sec, s.data...)
	}
	out := make([]byte, 0, len(b)-(dataEnd-dataStart)+len(sec)+6)
	out = append(out, b[:dataStart]...)
	out = append(out, 11)
	out = appendU32(out, uint32(len(sec)))
	out = append(out, sec...)
	out = append(out, b[dataEnd:]...)
	return out, nil
}
