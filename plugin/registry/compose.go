package registry

import (
	"fmt"
	"slices"

	"github.com/toolhost/toolhost/plugin"
)

// Ungranted lists what the manifest asks for that caps (what the operator
// granted the tool) does not give, one entry per capability, worded for
// the operator. Empty means the tool may load: every requirement is
// granted, or narrowed by the operator — a granted host rule within the
// one asked for (api.example.com for *.example.com), a read-only mount
// where read-write was asked. A secret, a tool to invoke, a mount at a
// guest path and the subprocess tier cannot be narrowed: they are granted
// or not.
func (m *Manifest) Ungranted(caps plugin.Capabilities) []string {
	var out []string
	for _, h := range m.Requires.Hosts {
		want, err := plugin.ParseHostRule(h)
		if err != nil {
			out = append(out, fmt.Sprintf("host %s (unreadable: %v)", h, err))
			continue
		}
		if !slices.ContainsFunc(caps.Hosts, func(g plugin.HostRule) bool { return g.Covers(want) || want.Covers(g) }) {
			out = append(out, "host "+h)
		}
	}
	for _, mr := range m.Requires.Mounts {
		if !slices.ContainsFunc(caps.Mounts, func(g plugin.Mount) bool { return g.GuestPath == mr.GuestPath }) {
			mode := "read-write"
			if mr.ReadOnly {
				mode = "read-only"
			}
			out = append(out, fmt.Sprintf("mount at %s (%s)", mr.GuestPath, mode))
		}
	}
	for _, s := range m.Requires.Secrets {
		if !slices.Contains(caps.Secrets, s) {
			out = append(out, "secret "+s)
		}
	}
	for _, t := range m.Requires.Invoke {
		if !caps.CanInvoke(t) {
			out = append(out, "invoking "+t)
		}
	}
	if m.Requires.Subprocess && !caps.Subprocess {
		out = append(out, "tool.exec.subprocess")
	}
	return out
}
