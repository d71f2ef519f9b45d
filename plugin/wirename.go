package plugin

import "strings"

// WireName maps a tool name to the form that model providers' function
// calling and strict MCP clients accept (^[A-Za-z0-9_-]{1,128}$): '.' becomes
// '_' and '/' becomes "__". The mapping is deterministic; the host refuses
// to register two tools whose wire names collide, so Host.ResolveWireName
// can always map back. docs/naming.md documents it.
func WireName(name string) string {
	if !strings.ContainsAny(name, "./") {
		return name
	}
	var b strings.Builder
	b.Grow(len(name) + 4)
	for i := 0; i < len(name); i++ {
		switch c := name[i]; c {
		case '.':
			b.WriteByte('_')
		case '/':
			b.WriteString("__")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// ResolveWireName returns the registered tool name whose WireName is wire,
// or wire itself when a tool has that exact name.
func (h *Host) ResolveWireName(wire string) (string, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if _, ok := h.tools[wire]; ok {
		return wire, true
	}
	n, ok := h.wire[wire]
	return n, ok
}
