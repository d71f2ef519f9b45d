package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/toolhost/toolhost"
	"github.com/toolhost/toolhost/plugin"
)

func (a *app) toolsCommand() *cobra.Command {
	var asJSON bool
	var format, server string
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List the tools the configuration grants",
		Long: "List the tools the configuration grants. --json prints every detail;\n" +
			"--format prints the list in a model provider's function-calling shape\n" +
			"(openai, anthropic) or as an MCP tools/list result (mcp).\n\n" +
			"--server NAME lists what a configured MCP server offers instead, and\n" +
			"which of its tools the configuration exposes (tools = [...]).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if server != "" && format != "" {
				return fmt.Errorf("--server and --format do not go together")
			}
			h, err := a.open(cmd.Context(), nil)
			if err != nil {
				return err
			}
			defer h.Close()
			if server != "" {
				return a.serverTools(h, server, asJSON)
			}
			tools := h.Tools()
			switch {
			case format != "":
				v, err := providerFormat(format, tools)
				if err != nil {
					return err
				}
				return writeJSON(a.stdout, v)
			case asJSON:
				return writeJSON(a.stdout, toolsJSON(tools))
			}
			return a.toolsTable(tools)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the tools as JSON")
	cmd.Flags().StringVar(&format, "format", "", "print the tools for a provider: openai, anthropic or mcp")
	cmd.Flags().StringVar(&server, "server", "", "list what the configured MCP server NAME offers")
	return cmd
}

// serverTools prints what a configured MCP server offers and which of its
// tools the configuration exposes.
func (a *app) serverTools(h *toolhost.Host, name string, asJSON bool) error {
	st, err := h.MCPServer(name)
	if err != nil {
		return err
	}
	if asJSON {
		type tool struct {
			Name        string `json:"name"`
			Title       string `json:"title,omitempty"`
			Description string `json:"description,omitempty"`
			Exposed     bool   `json:"exposed"`
			Rejected    string `json:"rejected,omitempty"`
		}
		out := struct {
			Server     string   `json:"server"`
			URL        string   `json:"url"`
			Reachable  bool     `json:"reachable"`
			Reason     string   `json:"reason,omitempty"`
			Tools      []tool   `json:"tools"`
			NotOffered []string `json:"not_offered,omitempty"`
		}{Server: name, URL: st.URL, Reachable: st.Reachable, Reason: st.Reason, Tools: []tool{}, NotOffered: st.NotOffered}
		for _, t := range st.Tools {
			out.Tools = append(out.Tools, tool{t.Name, t.Title, t.Description, st.Exposes(t.Name), t.Rejected})
		}
		if err := writeJSON(a.stdout, out); err != nil {
			return err
		}
		if !st.Reachable {
			return &exitError{exitToolError}
		}
		return nil
	}
	if !st.Reachable {
		fmt.Fprintf(a.stderr, "Error: %s\n", st.Reason)
		return &exitError{exitToolError}
	}
	fmt.Fprintf(a.stdout, "MCP server %q (%s) offers %d tool%s; tools = [...] exposes those marked yes.\n\n", name, st.URL, len(st.Tools), plural(len(st.Tools)))
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tEXPOSED\tDESCRIPTION")
	for _, t := range st.Tools {
		yes := "no"
		if st.Exposes(t.Name) {
			yes = "yes"
		}
		desc := firstLine(t.Description)
		if t.Rejected != "" {
			desc = "(refused: " + t.Rejected + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name, yes, desc)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(st.NotOffered) > 0 {
		quoted := make([]string, len(st.NotOffered))
		for i, t := range st.NotOffered {
			quoted[i] = strconv.Quote(t)
		}
		fmt.Fprintf(a.stdout, "\nNot offered by the server, although %s lists them in tools = [...]: %s.\n", a.g.config, strings.Join(quoted, ", "))
	}
	return nil
}

func (a *app) toolsTable(tools []plugin.ToolInfo) error {
	if len(tools) == 0 {
		fmt.Fprintf(a.stdout, "No tools: %s enables none.\n", a.g.config)
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTIER\tSOURCE\tDESCRIPTION")
	for _, t := range tools {
		desc := firstLine(t.Descriptor.Description)
		if !t.Available {
			desc = "(unavailable: " + t.Unavailable + ") " + desc
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Descriptor.Name, t.Tier, t.Kind, desc)
	}
	return tw.Flush()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > 72 {
		s = string(r[:69]) + "..."
	}
	return s
}

// toolJSON is the --json listing of one tool.
type toolJSON struct {
	plugin.Descriptor
	Tier        string   `json:"tier"`
	Approval    string   `json:"approval"`
	Source      string   `json:"source"`
	Available   bool     `json:"available"`
	Unavailable string   `json:"unavailable,omitempty"`
	Mounts      []string `json:"mounts,omitempty"`
	Hosts       []string `json:"hosts,omitempty"`
	Secrets     []string `json:"secrets,omitempty"`
	Timeout     string   `json:"timeout"`
	Memory      string   `json:"memory"`
}

func toolsJSON(tools []plugin.ToolInfo) []toolJSON {
	out := make([]toolJSON, 0, len(tools))
	for _, t := range tools {
		j := toolJSON{
			Descriptor: t.Descriptor, Tier: t.Tier.String(), Approval: t.Approval.String(), Source: t.Kind,
			Available: t.Available, Unavailable: t.Unavailable, Secrets: t.Capabilities.Secrets,
			Timeout: t.Limits.Timeout.String(), Memory: plugin.FormatSize(t.Limits.Memory),
		}
		for _, m := range t.Capabilities.Mounts {
			mode := "rw"
			if m.ReadOnly {
				mode = "ro"
			}
			j.Mounts = append(j.Mounts, m.GuestPath+" ("+mode+")")
		}
		for _, h := range t.Capabilities.Hosts {
			j.Hosts = append(j.Hosts, h.String())
		}
		out = append(out, j)
	}
	return out
}

// providerFormat renders the tool list in a provider's function-calling
// shape. Names go through plugin.WireName, since providers accept only
// [A-Za-z0-9_-]; the host maps them back on call.
func providerFormat(format string, tools []plugin.ToolInfo) (any, error) {
	switch format {
	case "openai":
		type fn struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		type tool struct {
			Type     string `json:"type"`
			Function fn     `json:"function"`
		}
		out := []tool{}
		for _, t := range tools {
			d := t.Descriptor
			out = append(out, tool{Type: "function", Function: fn{Name: plugin.WireName(d.Name), Description: d.Description, Parameters: d.InputSchema}})
		}
		return out, nil
	case "anthropic":
		type tool struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		out := []tool{}
		for _, t := range tools {
			d := t.Descriptor
			out = append(out, tool{Name: plugin.WireName(d.Name), Description: d.Description, InputSchema: d.InputSchema})
		}
		return out, nil
	case "mcp":
		out := []plugin.Descriptor{}
		for _, t := range tools {
			d := t.Descriptor
			d.Name = plugin.WireName(d.Name)
			out = append(out, d)
		}
		return map[string]any{"tools": out}, nil
	}
	return nil, fmt.Errorf("unknown format %q: want openai, anthropic or mcp", format)
}
