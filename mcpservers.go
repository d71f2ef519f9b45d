package toolhost

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/toolhost/toolhost/mcp"
	"github.com/toolhost/toolhost/plugin"
)

// MCPServerOffer returns what the configured MCP server called name offers:
// every tool it lists, whether the configuration exposes it or not, as the
// host found them when it first reached the server.
func (h *Host) MCPServerOffer(name string) (mcp.Offer, error) {
	var names []string
	for _, m := range h.Config.MCPServers {
		names = append(names, m.Name)
	}
	a := h.mcpAdapter()
	if a != nil {
		if o, ok := a.Offered(name); ok {
			return o, nil
		}
	}
	if len(names) == 0 {
		return mcp.Offer{}, fmt.Errorf("%s configures no mcp_server", h.configFile())
	}
	msg := fmt.Sprintf("%s configures no mcp_server %q", h.configFile(), name)
	if s := plugin.Suggest(name, names); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %q?", s[0])
	}
	return mcp.Offer{}, fmt.Errorf("%s (it configures %s)", msg, strings.Join(names, ", "))
}

// CheckMCPServers compares every MCP server's tools = [...] with what the
// server offers, for the servers the host could reach, and returns a
// *ConfigError naming each listed tool that is not offered, or nil. At run
// time such a tool is only a warning (listed as unavailable: servers
// change); `host validate` makes it an error.
func (h *Host) CheckMCPServers() error {
	var diags hcl.Diagnostics
	for _, m := range h.Config.MCPServers {
		o, err := h.MCPServerOffer(m.Name)
		if err != nil || !o.Reachable {
			continue
		}
		offered := map[string]mcp.OfferedTool{}
		var usable []string
		for _, t := range o.Tools {
			offered[t.Name] = t
			if t.Rejected == "" {
				usable = append(usable, t.Name)
			}
		}
		for _, name := range m.Tools {
			t, ok := offered[name]
			switch {
			case !ok:
				detail := fmt.Sprintf("The server %q does not offer a tool %q.", m.Name, name)
				if s := plugin.Suggest(name, usable); len(s) > 0 {
					detail += fmt.Sprintf(" Did you mean %q?", s[0])
				}
				detail += fmt.Sprintf(" It offers: %s.", strings.Join(usable, ", "))
				diags = append(diags, h.Config.ServerToolsDiagnostic(m.Name, "Tool not offered by the server", detail))
			case t.Rejected != "":
				diags = append(diags, h.Config.ServerToolsDiagnostic(m.Name, "Server tool refused",
					fmt.Sprintf("The server %q offers %q, but toolhost refuses it: %s.", m.Name, name, t.Rejected)))
			}
		}
	}
	if len(diags) == 0 {
		return nil
	}
	return &ConfigError{Diagnostics: diags, parser: h.parser}
}

func (h *Host) mcpAdapter() *mcp.Adapter {
	for _, a := range h.adapters {
		if m, ok := a.(*mcp.Adapter); ok {
			return m
		}
	}
	return nil
}

func (h *Host) configFile() string {
	if h.Config.Filename != "" {
		return h.Config.Filename
	}
	return "the configuration"
}
