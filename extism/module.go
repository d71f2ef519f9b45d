package extism

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
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
	// initName is the guest runtime initialiser export, if any.
	initName string
}

func (m *moduleInfo) hasFunc(name string) bool {
	k, ok := m.exports[name]
	return ok && k == 0
}

// funcExports returns the exported functions, sorted as they appear.
func (m *moduleInfo) funcExports() []string {
	var out []string
	for n, k := range m.exports {
		if k == 0 && n != m.initName && !strings.HasPrefix(n, "toolhost.") {
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
	info := &moduleInfo{exports: map[string]byte{}}
	r := &reader{b: b, off: 8}
	for r.off < len(b) {
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
		if id != 7 {
			continue
		}
		pr := &reader{b: payload}
		n, err := pr.u32()
		if err != nil {
			return nil, err
		}
		for i := uint32(0); i < n; i++ {
			l, err := pr.u32()
			if err != nil {
				return nil, err
			}
			name, err := pr.bytes(l)
			if err != nil {
				return nil, err
			}
			kind, err := pr.byte()
			if err != nil {
				return nil, err
			}
			if _, err := pr.u32(); err != nil {
				return nil, err
			}
			info.exports[string(name)] = kind
		}
	}
	for _, n := range []string{"_initialize", "__wasm_call_ctors"} {
		if info.hasFunc(n) {
			info.initName = n
			break
		}
	}
	return info, nil
}

// renameExport returns a copy of module b with the export old renamed to
// new. Only the export section changes.
func renameExport(b []byte, old, new string) ([]byte, error) {
	out := make([]byte, 0, len(b)+len(new))
	out = append(out, b[:8]...)
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
		if id != 7 {
			out = append(out, b[start:r.off]...)
			continue
		}
		pr := &reader{b: payload}
		n, err := pr.u32()
		if err != nil {
			return nil, err
		}
		sec := appendU32(nil, n)
		for i := uint32(0); i < n; i++ {
			l, err := pr.u32()
			if err != nil {
				return nil, err
			}
			name, err := pr.bytes(l)
			if err != nil {
				return nil, err
			}
			rest := pr.off
			if _, err := pr.byte(); err != nil {
				return nil, err
			}
			if _, err := pr.u32(); err != nil {
				return nil, err
			}
			if string(name) == old {
				name = []byte(new)
			}
			sec = appendU32(sec, uint32(len(name)))
			sec = append(sec, name...)
			sec = append(sec, payload[rest:pr.off]...)
		}
		out = append(out, 7)
		out = appendU32(out, uint32(len(sec)))
		out = append(out, sec...)
	}
	return out, nil
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
