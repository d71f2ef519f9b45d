package plugin

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Tier is a tool's safety tier. It decides batching and approval.
type Tier int

// The safety tiers.
const (
	// TierReadOnly tools have no side effects; a batch runs them concurrently.
	TierReadOnly Tier = iota + 1
	// TierSideEffecting tools change state; a batch runs them one at a time,
	// in request order.
	TierSideEffecting
	// TierPrivileged tools are high-risk (running commands); they need
	// approval by default.
	TierPrivileged
)

// String returns the tier's configuration name.
func (t Tier) String() string {
	switch t {
	case TierReadOnly:
		return "read_only"
	case TierSideEffecting:
		return "side_effecting"
	case TierPrivileged:
		return "privileged"
	}
	return "unknown"
}

// MarshalText implements encoding.TextMarshaler.
func (t Tier) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (t *Tier) UnmarshalText(b []byte) error {
	v, err := ParseTier(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// ParseTier parses "read_only", "side_effecting" or "privileged".
func ParseTier(s string) (Tier, error) {
	switch s {
	case "read_only":
		return TierReadOnly, nil
	case "side_effecting":
		return TierSideEffecting, nil
	case "privileged":
		return TierPrivileged, nil
	}
	return 0, fmt.Errorf("unknown tier %q: want read_only, side_effecting or privileged", s)
}

// Approval says when a call needs approval.
type Approval int

// Approval modes.
const (
	// ApprovalDefault: privileged tools need approval, others do not.
	ApprovalDefault Approval = iota
	// ApprovalAlways: every call needs approval.
	ApprovalAlways
	// ApprovalNever: no call needs approval (the operator takes the risk).
	ApprovalNever
)

// ParseApproval parses "default", "always" or "never".
func ParseApproval(s string) (Approval, error) {
	switch s {
	case "", "default":
		return ApprovalDefault, nil
	case "always":
		return ApprovalAlways, nil
	case "never":
		return ApprovalNever, nil
	}
	return 0, fmt.Errorf("unknown approval mode %q: want default, always or never", s)
}

func (a Approval) String() string {
	switch a {
	case ApprovalAlways:
		return "always"
	case ApprovalNever:
		return "never"
	}
	return "default"
}

// Source says where a tool comes from. Kind selects the adapter; the other
// fields are read by that adapter only.
type Source struct {
	// Kind is the adapter kind: "go" (in-process, host apps only), "wasm",
	// "subprocess" or "mcp".
	Kind string
	// Path of the artifact (a .wasm file or a plugin binary), absolute.
	Path string
	// Builtin names an artifact embedded in the host binary instead of Path.
	Builtin string
	// Bytes is the artifact itself, for host apps that embed it.
	Bytes []byte
	// SHA256 pins the artifact (hex). Empty means not pinned.
	SHA256 string
	// Tool is the tool's name inside the plugin or server, when it differs
	// from the name the host exposes.
	Tool string
	// Export names a plain export to call in raw mode (wasm only): the
	// plugin has no list_tools/call_tool, and the Spec supplies the schemas.
	Export string
	// Args are extra command-line arguments (subprocess only).
	Args []string
	// Env lists host environment variables passed through (subprocess only).
	Env []string
	// Config is free-form adapter configuration (wasm: Extism config keys).
	Config map[string]string
	// Server is the MCP server this tool belongs to (mcp only).
	Server *MCPServer
}

// MCPServer describes a remote MCP server.
type MCPServer struct {
	Name    string
	URL     string
	Headers map[string]string // values may reference secrets as $NAME
	Timeout time.Duration
	// OAuth, when set, has the host obtain the server's access token by
	// OAuth instead of (never alongside) an Authorization header.
	OAuth *MCPOAuth
}

// MCPOAuth is how the host obtains OAuth tokens for an MCP server. Secrets
// are named, never held: their values are looked up when a token is
// requested.
type MCPOAuth struct {
	// Grant is "authorization_code" (a person logs in once) or
	// "client_credentials" (no person: the client's own credentials).
	Grant string
	// ClientID is a pre-registered client; empty: the client registers
	// itself (client ID metadata document, else dynamic registration).
	ClientID string
	// ClientSecret names the secret holding the client's secret.
	ClientSecret string
	// PrivateKey names the secret holding a PEM private key, for
	// private_key_jwt client authentication (client_credentials only).
	PrivateKey string
	// SigningAlgorithm signs the client assertion (default: from the key).
	SigningAlgorithm string
	// ClientIDMetadataURL is the HTTPS URL of the client's metadata
	// document, used as its client ID where the server supports that.
	ClientIDMetadataURL string
	// Scopes replace the scopes the server asks for.
	Scopes []string
	// RedirectURL is the loopback URL the browser is sent back to; empty:
	// http://127.0.0.1 on a free port.
	RedirectURL string
}

// Spec is everything the host knows about a tool besides the tool itself:
// where it comes from and the policy it runs under. Configuration decodes
// into Specs; host applications may build them in Go.
type Spec struct {
	// Name is the tool's exposed name.
	Name   string
	Source Source
	// Tier is the safety tier. Zero leaves it to the adapter (a built-in
	// tool has its own: shell.exec is privileged), and else to the host,
	// which makes it side_effecting.
	Tier Tier
	// Approval overrides when calls need approval.
	Approval Approval
	// Description, InputSchema and OutputSchema override (or, in raw mode,
	// supply) the tool's own descriptor.
	Description  string
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	// Capabilities the tool declares. At registration they are checked
	// against the host's grants (composition rule); at call time the Request
	// carries them.
	Capabilities Capabilities
	Limits       Limits
	// Disabled tools are configured but not loaded.
	Disabled bool
}

// Mount exposes a host directory to a tool.
type Mount struct {
	// HostPath is the host directory, absolute and clean.
	HostPath string
	// GuestPath is where the tool sees it ("/workspace").
	GuestPath string
	// ReadOnly mounts refuse writes.
	ReadOnly bool
}

// HostRule allows network access to one host (and optionally one port).
type HostRule struct {
	// Host is a DNS name, a "*.suffix" wildcard, or an IP literal. An IP
	// literal that would otherwise be refused (loopback, private, link-local)
	// is reachable only if named exactly.
	Host string
	// Port is the one port allowed; 0 allows the web ports, 80 and 443
	// (a rule naming a host should not open its SSH, database or admin
	// ports too: issue 23).
	Port int
}

// ParseHostRule parses "host", "host:port", "*.example.com" or "[::1]:8080".
func ParseHostRule(s string) (HostRule, error) {
	if s == "" {
		return HostRule{}, fmt.Errorf("empty host")
	}
	if strings.Contains(s, "/") || strings.Contains(s, "://") {
		return HostRule{}, fmt.Errorf("host %q: give a host name or host:port, not a URL", s)
	}
	host, port := s, 0
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return HostRule{}, fmt.Errorf("host %q: port must be 1-65535", s)
		}
		host, port = h, n
	} else if strings.Count(s, ":") == 1 {
		return HostRule{}, fmt.Errorf("host %q: %v", s, err)
	}
	bracketed := strings.HasPrefix(s, "[")
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "" || host == "*" {
		return HostRule{}, fmt.Errorf("host %q: a rule must name a host; \"*\" alone is not allowed", s)
	}
	// An IP literal is kept in its canonical form, so that "0:0::1" and
	// "::1" are the same rule when grants and declarations are compared.
	if ip, err := netip.ParseAddr(host); err == nil && ip.Zone() == "" {
		return HostRule{Host: ip.String(), Port: port}, nil
	}
	if bracketed || strings.Contains(host, ":") {
		return HostRule{}, fmt.Errorf("host %q: %q is not an IP address", s, host)
	}
	if err := checkDNSName(strings.TrimPrefix(host, "*.")); err != nil {
		return HostRule{}, fmt.Errorf("host %q: %v", s, err)
	}
	return HostRule{Host: host, Port: port}, nil
}

// checkDNSName reports why name is not a host name: dot-separated labels of
// 1-63 letters, digits, '-' or '_', not starting or ending with '-', at
// most 253 bytes, and not ending in an all-digit label (which would be a
// malformed IP address).
func checkDNSName(name string) error {
	if len(name) > 253 {
		return fmt.Errorf("a host name is at most 253 bytes")
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return fmt.Errorf("%q is not a host name (empty or over-long label)", name)
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return fmt.Errorf("%q is not a host name (a label starts or ends with '-')", name)
		}
		for _, c := range []byte(l) {
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("%q is not a host name (character %q; a wildcard is allowed only as a leading \"*.\")", name, c)
			}
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return fmt.Errorf("%q is neither a host name nor an IP address", name)
	}
	return nil
}

func (r HostRule) String() string {
	h := r.Host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	if r.Port == 0 {
		return h
	}
	return h + ":" + strconv.Itoa(r.Port)
}

// Covers reports whether r allows everything o allows.
func (r HostRule) Covers(o HostRule) bool {
	if r.Port != 0 && r.Port != o.Port || r.Port == 0 && o.Port != 0 && !webPort(o.Port) {
		return false
	}
	return r.MatchHost(o.Host) && (!strings.HasPrefix(o.Host, "*.") || strings.HasPrefix(r.Host, "*."))
}

// MatchHost reports whether host (lower case, no port) matches the rule's host.
func (r HostRule) MatchHost(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if suffix, ok := strings.CutPrefix(r.Host, "*."); ok {
		h := strings.TrimPrefix(host, "*.")
		return strings.HasSuffix(h, "."+suffix) || (strings.HasPrefix(host, "*.") && h == suffix)
	}
	return host == r.Host
}

// Allows reports whether the rule allows host:port.
func (r HostRule) Allows(host string, port int) bool {
	return r.AllowsPort(port) && r.MatchHost(host)
}

// AllowsPort reports whether the rule allows port: its own, or 80 and 443
// when it names none.
func (r HostRule) AllowsPort(port int) bool {
	if r.Port == 0 {
		return webPort(port)
	}
	return r.Port == port
}

func webPort(port int) bool { return port == 80 || port == 443 }

// The names of the capabilities that are rights rather than resources, as
// configuration writes them (capabilities = [...]).
const (
	CapSubprocess  = "tool.exec.subprocess"
	CapSampling    = "client.sampling"
	CapElicitation = "client.elicitation"
)

// Capabilities are the rights a tool declares, or the rights the operator
// grants the host. The zero value grants nothing.
type Capabilities struct {
	// Mounts are directories the tool may see.
	Mounts []Mount
	// Hosts the tool may reach over the network.
	Hosts []HostRule
	// Secrets the tool may use, by name. Values are resolved by the host.
	Secrets []string
	// Invoke lists tools this tool may call through the host ("*" for any).
	Invoke []string
	// Subprocess is tool.exec.subprocess: the right to run native code.
	Subprocess bool
	// Sampling is client.sampling: the right to ask the caller's client
	// for a completion from its LLM while a call runs (Request.Client).
	Sampling bool
	// Elicitation is client.elicitation: the right to ask the caller's
	// client to put a form to its user while a call runs (Request.Client).
	Elicitation bool
	// Env lists host environment variables a subprocess tool may receive.
	Env []string
}

// Limits bound one call. A zero field means "use the default"; WithDefaults
// fills them in and Validate checks the maxima.
type Limits struct {
	Memory          int64         // bytes of guest memory or process RSS
	Timeout         time.Duration // wall clock
	Fuel            uint64        // instruction budget (wasm)
	Output          int64         // hard cap on a result's total size
	Preview         int64         // model-facing text before truncation
	Arguments       int64         // size of the arguments JSON
	FileDescriptors int           // open files (subprocess)
	HTTPRequests    int           // outgoing HTTP requests per call
	HTTPResponse    int64         // bytes of one HTTP response body
	ToolInvocations int           // nested tool calls per call
	ClientRequests  int           // sampling and elicitation requests to the caller's client per call
	LogEntries      int           // log lines per call
	FileBytesRead   int64         // bytes read from mounts per call
	VarSize         int64         // bytes of one plugin variable (wasm)
	Pool            int           // pre-instantiated instances kept (wasm; up to two more during a burst), 0 = default, -1 = none
	IdleTimeout     time.Duration // stop an idle plugin process (subprocess)
}

// DefaultLimits are the limits a tool gets when its spec says nothing.
var defaultLimits = Limits{
	Memory:          256 << 20,
	Timeout:         30 * time.Second,
	Fuel:            1_000_000_000,
	Output:          10 << 20,
	Preview:         16 << 10,
	Arguments:       1 << 20,
	FileDescriptors: 32,
	HTTPRequests:    50,
	HTTPResponse:    10 << 20,
	ToolInvocations: 20,
	ClientRequests:  16,
	LogEntries:      1000,
	FileBytesRead:   10 << 20,
	VarSize:         1 << 20,
	Pool:            2,
	IdleTimeout:     5 * time.Minute,
}

// MaxLimits are the largest values a spec may set.
var maxLimits = Limits{
	Memory:          1 << 30,
	Timeout:         5 * time.Minute,
	Fuel:            1_000_000_000_000,
	Output:          1 << 30,
	Preview:         10 << 20,
	Arguments:       64 << 20,
	FileDescriptors: 4096,
	HTTPRequests:    10000,
	HTTPResponse:    1 << 30,
	ToolInvocations: 1000,
	ClientRequests:  1000,
	LogEntries:      1_000_000,
	FileBytesRead:   1 << 34,
	VarSize:         64 << 20,
	Pool:            64,
	IdleTimeout:     24 * time.Hour,
}

// DefaultLimits returns the default limits.
func DefaultLimits() Limits { return defaultLimits }

// MaxLimits returns the largest limits a spec may set.
func MaxLimits() Limits { return maxLimits }

// WithDefaults returns l with every zero field set from d.
func (l Limits) WithDefaults(d Limits) Limits {
	setZero(&l.Memory, d.Memory)
	setZero(&l.Timeout, d.Timeout)
	setZero(&l.Fuel, d.Fuel)
	setZero(&l.Output, d.Output)
	setZero(&l.Preview, d.Preview)
	setZero(&l.Arguments, d.Arguments)
	setZero(&l.FileDescriptors, d.FileDescriptors)
	setZero(&l.HTTPRequests, d.HTTPRequests)
	setZero(&l.HTTPResponse, d.HTTPResponse)
	setZero(&l.ToolInvocations, d.ToolInvocations)
	setZero(&l.ClientRequests, d.ClientRequests)
	setZero(&l.LogEntries, d.LogEntries)
	setZero(&l.FileBytesRead, d.FileBytesRead)
	setZero(&l.VarSize, d.VarSize)
	setZero(&l.Pool, d.Pool)
	setZero(&l.IdleTimeout, d.IdleTimeout)
	return l
}

func setZero[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}

// LimitViolation is one limit outside its allowed range.
type LimitViolation struct {
	Field string // configuration name: "memory", "timeout", ...
	Value string
	Max   string
}

func (v LimitViolation) Error() string {
	return fmt.Sprintf("limit %s = %s is above the maximum %s", v.Field, v.Value, v.Max)
}

// Check returns every limit of l that is negative or above max.
func (l Limits) Check(max Limits) []LimitViolation {
	var out []LimitViolation
	chk := func(field string, v, m int64, format func(int64) string) {
		if v < 0 && !(field == "pool" && v == -1) {
			out = append(out, LimitViolation{Field: field, Value: format(v), Max: format(m)})
		} else if v > m {
			out = append(out, LimitViolation{Field: field, Value: format(v), Max: format(m)})
		}
	}
	num := func(v int64) string { return strconv.FormatInt(v, 10) }
	dur := func(v int64) string { return time.Duration(v).String() }
	chk("memory", l.Memory, max.Memory, FormatSize)
	chk("timeout", int64(l.Timeout), int64(max.Timeout), dur)
	if l.Fuel > max.Fuel {
		out = append(out, LimitViolation{Field: "fuel", Value: strconv.FormatUint(l.Fuel, 10), Max: strconv.FormatUint(max.Fuel, 10)})
	}
	chk("output", l.Output, max.Output, FormatSize)
	chk("preview", l.Preview, max.Preview, FormatSize)
	chk("arguments", l.Arguments, max.Arguments, FormatSize)
	chk("file_descriptors", int64(l.FileDescriptors), int64(max.FileDescriptors), num)
	chk("http_requests", int64(l.HTTPRequests), int64(max.HTTPRequests), num)
	chk("http_response", l.HTTPResponse, max.HTTPResponse, FormatSize)
	chk("tool_invocations", int64(l.ToolInvocations), int64(max.ToolInvocations), num)
	chk("client_requests", int64(l.ClientRequests), int64(max.ClientRequests), num)
	chk("log_entries", int64(l.LogEntries), int64(max.LogEntries), num)
	chk("file_bytes_read", l.FileBytesRead, max.FileBytesRead, FormatSize)
	chk("var_size", l.VarSize, max.VarSize, FormatSize)
	chk("pool", int64(l.Pool), int64(max.Pool), num)
	chk("idle_timeout", int64(l.IdleTimeout), int64(max.IdleTimeout), dur)
	return out
}

// CapabilityViolation is one right a tool declares that the host does not grant.
type CapabilityViolation struct {
	Kind   string // "mount", "host", "secret", "invoke", "capability", "env"
	Detail string
}

func (v CapabilityViolation) Error() string {
	return fmt.Sprintf("declares %s %s, which the host does not grant", v.Kind, v.Detail)
}

// Exceeding applies the composition rule: it returns every right declared in
// c that grants does not cover. A tool with any violation must not load.
//
// A mount is covered by a granted mount whose host path contains it, and a
// read-write mount needs a read-write grant. A host rule is covered by a
// granted rule at least as wide. Secrets, invoke targets and env vars must be
// granted by name ("*" in grants.Invoke covers every tool).
func (c Capabilities) Exceeding(grants Capabilities) []CapabilityViolation {
	var out []CapabilityViolation
	for _, m := range c.Mounts {
		if !slices.ContainsFunc(grants.Mounts, func(g Mount) bool {
			return within(g.HostPath, m.HostPath) && (!g.ReadOnly || m.ReadOnly)
		}) {
			mode := "read-write"
			if m.ReadOnly {
				mode = "read-only"
			}
			out = append(out, CapabilityViolation{Kind: "mount", Detail: fmt.Sprintf("%q (%s)", m.HostPath, mode)})
		}
	}
	for _, h := range c.Hosts {
		if !slices.ContainsFunc(grants.Hosts, func(g HostRule) bool { return g.Covers(h) }) {
			out = append(out, CapabilityViolation{Kind: "host", Detail: strconv.Quote(h.String())})
		}
	}
	for _, s := range c.Secrets {
		if !slices.Contains(grants.Secrets, s) {
			out = append(out, CapabilityViolation{Kind: "secret", Detail: strconv.Quote(s)})
		}
	}
	for _, t := range c.Invoke {
		if !slices.Contains(grants.Invoke, "*") && !slices.Contains(grants.Invoke, t) {
			out = append(out, CapabilityViolation{Kind: "invoke", Detail: strconv.Quote(t)})
		}
	}
	if c.Subprocess && !grants.Subprocess {
		out = append(out, CapabilityViolation{Kind: "capability", Detail: CapSubprocess})
	}
	if c.Sampling && !grants.Sampling {
		out = append(out, CapabilityViolation{Kind: "capability", Detail: CapSampling})
	}
	if c.Elicitation && !grants.Elicitation {
		out = append(out, CapabilityViolation{Kind: "capability", Detail: CapElicitation})
	}
	for _, e := range c.Env {
		if !slices.Contains(grants.Env, e) {
			out = append(out, CapabilityViolation{Kind: "env", Detail: strconv.Quote(e)})
		}
	}
	return out
}

// clone returns c with slices of its own.
func (c Capabilities) clone() Capabilities {
	c.Mounts = slices.Clone(c.Mounts)
	c.Hosts = slices.Clone(c.Hosts)
	c.Secrets = slices.Clone(c.Secrets)
	c.Invoke = slices.Clone(c.Invoke)
	c.Env = slices.Clone(c.Env)
	return c
}

// CanInvoke reports whether c allows invoking the named tool.
func (c Capabilities) CanInvoke(name string) bool {
	return slices.Contains(c.Invoke, "*") || slices.Contains(c.Invoke, name)
}

// within reports whether path is dir or below it. Both must be clean and absolute.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
