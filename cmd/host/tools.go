package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/toolhost/toolhost/plugin"
)

func (a *app) toolsCommand() *cobra.Command {
	var asJSON bool
	var format string
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List the tools the configuration grants",
		Long: "List the tools the configuration grants. --json prints every detail;\n" +
			"--format prints the list in a model provider's function-calling shape\n" +
			"(openai, anthropic) or as an MCP tools/list result (mcp).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := a.open(cmd.Context(), nil)
			if err != nil {
				return err
			}
			defer h.Close()
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
	return cmd
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
