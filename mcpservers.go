package toolhost

import (
	"fmt"
	"slices"
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

// MCPServerTools is what a configured MCP server offers set against what
// its mcp_server block lists.
type MCPServerTools struct {
	mcp.Offer
	// URL is the server's address, from the configuration.
	URL string
	// Listed are the tools its tools = [...] exposes.
	Listed []string
	// NotOffered are the listed tools the server does not offer (empty
	// when it could not be reached).
	NotOffered []string
}

// Exposes reports whether the configuration lists the named tool.
func (s *MCPServerTools) Exposes(tool string) bool { return slices.Contains(s.Listed, tool) }

// MCPServer returns what the configured MCP server called name offers and
// how that meets the tools its block lists.
func (h *Host) MCPServer(name string) (*MCPServerTools, error) {
	o, err := h.MCPServerOffer(name)
	if err != nil {
		return nil, err
	}
	st := &MCPServerTools{Offer: o}
	for _, m := range h.Config.MCPServers {
		if m.Name == name {
			st.URL, st.Listed = m.URL, m.Tools
		}
	}
	if o.Reachable {
		for _, t := range st.Listed {
			if !slices.ContainsFunc(o.Tools, func(ot mcp.OfferedTool) bool { return ot.Name == t }) {
				st.NotOffered = append(st.NotOffered, t)
			}
		}
	}
	return st, nil
}

// CheckMCPServers compares every MCP server's tools = [...] with what the
// server offers, for the servers the host could reach, and returns a
// *ConfigError naming each listed tool that is not offered, or nil. At run
// time such a tool is only a warning (listed as unavailable: servers
// change); `host validate` makes it an error.
func (h *Host) CheckMCPServers() error {
	var diags hcl.Diagnostics
	for _, m := range h.Config.MCPServers {
		st, err := h.MCPServer(m.Name)
		if err != nil || !st.Reachable {
			continue
		}
		var usable []string
		for _, t := range st.Tools {
			switch {
			case t.Rejected == "":
				usable = append(usable, t.Name)
			case st.Exposes(t.Name):
				diags = append(diags, h.Config.ServerToolsDiagnostic(m.Name, "Server tool refused",
					fmt.Sprintf("The server %q offers %q, but toolhost refuses it: %s.", m.Name, t.Name, t.Rejected)))
			}
		}
		for _, name := range st.NotOffered {
			detail := fmt.Sprintf("The server %q does not offer a tool %q.", m.Name, name)
			if s := plugin.Suggest(name, usable); len(s) > 0 {
				detail += fmt.Sprintf(" Did you mean %q?", s[0])
			}
			detail += fmt.Sprintf(" It offers: %s.", strings.Join(usable, ", "))
			diags = append(diags, h.Config.ServerToolsDiagnostic(m.Name, "Tool not offered by the server", detail))
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
