package plugin

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// Options configure a Host. The zero value is usable: no grants, default
// limits, no approver (privileged calls answer APPROVAL_REQUIRED), no
// secrets, in-memory artifacts, no audit log, a null logger.
type Options struct {
	// Grants are the rights the operator lets the host hand out. A tool
	// whose spec declares more does not register (composition rule).
	Grants Capabilities
	// Defaults are the limits of a tool whose spec leaves a limit unset.
	// Zero fields fall back to DefaultLimits().
	Defaults Limits
	// Approver decides calls that need approval. Nil means there is no way
	// to ask: such calls fail with APPROVAL_REQUIRED.
	Approver Approver
	// Secrets resolves secret names. Nil means no secrets can be resolved.
	Secrets SecretSource
	// Artifacts keeps full outputs. Nil means an in-memory store of 64 MiB.
	Artifacts ArtifactStore
	// Auditor receives one record per call. Nil means no audit.
	Auditor Auditor
	// Logger is the root logger; the host names it "plugin".
	Logger hclog.Logger
	// Adapters load specs by Source.Kind (Host.Load).
	Adapters []Adapter
	// MaxDepth caps nested tool invocations (default 4).
	MaxDepth int
}

// Host is the registry and the invoke pipeline. Its methods are safe for
// concurrent use. Tools are registered before calls start; registering
// while calls run is allowed, closing is not.
type Host struct {
	grants    Capabilities
	defaults  Limits
	approver  Approver
	secrets   SecretSource
	artifacts ArtifactStore
	auditor   Auditor
	log       hclog.Logger
	adapters  map[string]Adapter
	maxDepth  int

	mu     sync.RWMutex
	tools  map[string]*entry
	wire   map[string]string // WireName → name
	order  []string
	closed bool
	// disabled maps tools configured but switched off to where that was
	// said, so that a call names the reason instead of "unknown tool".
	disabled map[string]string
}

// entry is one registered tool with its resolved policy.
type entry struct {
	spec   Spec // limits with defaults applied
	tool   Tool
	desc   Descriptor
	input  *Schema
	output *Schema
	log    hclog.Logger // named for the tool
}

// ToolInfo describes a registered tool for listings.
type ToolInfo struct {
	Descriptor   Descriptor
	Tier         Tier
	Approval     Approval
	Kind         string // adapter kind of the source
	Capabilities Capabilities
	Limits       Limits
	Available    bool
	Unavailable  string // why not, when !Available
}

// NewHost returns a host with the given options.
func NewHost(opts Options) (*Host, error) {
	h := &Host{
		grants:    opts.Grants,
		defaults:  opts.Defaults.WithDefaults(DefaultLimits()),
		approver:  opts.Approver,
		secrets:   opts.Secrets,
		artifacts: opts.Artifacts,
		auditor:   opts.Auditor,
		log:       opts.Logger,
		adapters:  map[string]Adapter{},
		maxDepth:  opts.MaxDepth,
		tools:     map[string]*entry{},
		wire:      map[string]string{},
	}
	if v := h.defaults.Check(MaxLimits()); len(v) > 0 {
		return nil, fmt.Errorf("default limits: %w", errors.Join(asErrors(v)...))
	}
	if h.log == nil {
		h.log = hclog.NewNullLogger()
	}
	h.log = h.log.Named("plugin")
	if h.artifacts == nil {
		h.artifacts = NewMemoryArtifacts(0)
	}
	if h.maxDepth <= 0 {
		h.maxDepth = 4
	}
	for _, a := range opts.Adapters {
		if _, dup := h.adapters[a.Kind()]; dup {
			return nil, fmt.Errorf("two adapters of kind %q", a.Kind())
		}
		h.adapters[a.Kind()] = a
	}
	return h, nil
}

func asErrors[T error](v []T) []error {
	out := make([]error, len(v))
	for i := range v {
		out[i] = v[i]
	}
	return out
}

var toolName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.\-/]{0,127}$`)

// ValidToolName reports whether name is a valid tool name: 1–128 characters
// of letters, digits, '_', '-', '.', and '/', not starting with a punctuation
// character other than '_'.
func ValidToolName(name string) bool { return toolName.MatchString(name) }

// Load loads spec with the adapter of its Source.Kind and registers the tool.
func (h *Host) Load(ctx context.Context, spec Spec) error {
	a, ok := h.adapters[spec.Source.Kind]
	if !ok {
		return fmt.Errorf("tool %q: no adapter for source kind %q", spec.Name, spec.Source.Kind)
	}
	if err := h.checkSpec(&spec); err != nil {
		return err
	}
	t, err := a.Load(ctx, &spec)
	if err != nil {
		return fmt.Errorf("tool %q: %w", spec.Name, err)
	}
	if err := h.Register(spec, t); err != nil {
		// Release what the adapter loaded, unless the adapter handed out a
		// tool that is registered already (the in-process adapter returns
		// the application's own tool every time): that one is in use.
		if c, ok := t.(Closer); ok && !h.registered(t) {
			c.Close()
		}
		return err
	}
	return nil
}

// registered reports whether t is registered under some name.
func (h *Host) registered(t Tool) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, e := range h.tools {
		if sameTool(e.tool, t) {
			return true
		}
	}
	return false
}

// sameTool reports whether a and b are the same tool value. Tools of a
// type that cannot be compared are never the same.
func sameTool(a, b Tool) bool {
	ta := reflect.TypeOf(a)
	return ta == reflect.TypeOf(b) && ta != nil && ta.Comparable() && a == b
}

// checkSpec applies the composition rule and the limit maxima, and fills in
// default limits. It runs before an adapter sees the spec.
func (h *Host) checkSpec(spec *Spec) error {
	if !ValidToolName(spec.Name) {
		return fmt.Errorf("tool name %q: use 1-128 letters, digits, '_', '-', '.' or '/'", spec.Name)
	}
	if spec.Disabled {
		return fmt.Errorf("tool %q is disabled in its spec; a disabled tool is not loaded", spec.Name)
	}
	if v := spec.Capabilities.Exceeding(h.grants); len(v) > 0 {
		return &Error{Code: CodeCapabilityDenied, Tool: spec.Name,
			Message: fmt.Sprintf("tool %q %s", spec.Name, errors.Join(asErrors(v)...).Error())}
	}
	spec.Limits = spec.Limits.WithDefaults(h.defaults)
	if v := spec.Limits.Check(MaxLimits()); len(v) > 0 {
		return fmt.Errorf("tool %q: %w", spec.Name, errors.Join(asErrors(v)...))
	}
	return nil
}

// Register adds a tool under spec. The spec's capabilities must be within
// the host's grants, its limits within the maxima, and the schemas (the
// spec's, or else the tool's own) must compile. The spec's Description and
// schemas override the tool's descriptor.
func (h *Host) Register(spec Spec, t Tool) error {
	if t == nil {
		return fmt.Errorf("tool %q: nil tool", spec.Name)
	}
	// The policy is the host's from here on: the caller's slices must not
	// reach it.
	spec.Capabilities = spec.Capabilities.clone()
	if err := h.checkSpec(&spec); err != nil {
		return err
	}
	if spec.Tier == 0 {
		spec.Tier = TierSideEffecting
	}
	desc := t.Descriptor()
	desc.Name = spec.Name
	if spec.Description != "" {
		desc.Description = spec.Description
	}
	if len(spec.InputSchema) > 0 {
		desc.InputSchema = spec.InputSchema
	}
	if len(spec.OutputSchema) > 0 {
		desc.OutputSchema = spec.OutputSchema
	}
	if len(desc.InputSchema) == 0 {
		desc.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	e := &entry{spec: spec, tool: t, log: h.log.Named(spec.Name)}
	var err error
	if e.input, err = CompileSchema(desc.InputSchema); err != nil {
		return fmt.Errorf("tool %q: input schema: %w", spec.Name, err)
	}
	if !objectSchema(desc.InputSchema) {
		return fmt.Errorf("tool %q: input schema must describe an object (\"type\": \"object\")", spec.Name)
	}
	if len(desc.OutputSchema) > 0 {
		if e.output, err = CompileSchema(desc.OutputSchema); err != nil {
			return fmt.Errorf("tool %q: output schema: %w", spec.Name, err)
		}
	}
	desc.Annotations = annotate(desc.Annotations, spec.Tier)
	e.desc = desc

	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errors.New("host is closed")
	}
	if _, dup := h.tools[spec.Name]; dup {
		return fmt.Errorf("tool %q is registered twice", spec.Name)
	}
	w := WireName(spec.Name)
	if other, clash := h.wire[w]; clash {
		return fmt.Errorf("tool %q: its wire name %q (for providers and MCP clients) is already taken by %q", spec.Name, w, other)
	}
	h.wire[w] = spec.Name
	h.tools[spec.Name] = e
	h.order = append(h.order, spec.Name)
	return nil
}

func objectSchema(doc json.RawMessage) bool {
	var s struct {
		Type any `json:"type"`
	}
	if json.Unmarshal(doc, &s) != nil {
		return false
	}
	return s.Type == "object"
}

// annotate makes the hints agree with the tier the operator chose: the
// tier, not the tool, is the truth about side effects.
func annotate(a *Annotations, tier Tier) *Annotations {
	out := Annotations{}
	if a != nil {
		out = *a
	}
	out.ReadOnlyHint = tier == TierReadOnly
	if tier == TierReadOnly {
		out.DestructiveHint = nil
	} else if out.DestructiveHint == nil {
		d := true
		out.DestructiveHint = &d
	}
	return &out
}

// Tools lists the registered tools in registration order.
func (h *Host) Tools() []ToolInfo {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]ToolInfo, 0, len(h.order))
	for _, n := range h.order {
		out = append(out, h.tools[n].info())
	}
	return out
}

// Tool returns one registered tool's listing.
func (h *Host) Tool(name string) (ToolInfo, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	e, ok := h.tools[name]
	if !ok {
		return ToolInfo{}, false
	}
	return e.info(), true
}

// Find returns one registered tool's listing, or the TOOL_NOT_FOUND error a
// call by that name would get (naming a disabled tool, suggesting close
// names).
func (h *Host) Find(name string) (ToolInfo, error) {
	e, err := h.lookup(name)
	if err != nil {
		return ToolInfo{}, err
	}
	return e.info(), nil
}

func (e *entry) info() ToolInfo {
	ti := ToolInfo{
		Descriptor: e.desc, Tier: e.spec.Tier, Approval: e.spec.Approval, Kind: e.spec.Source.Kind,
		Capabilities: e.spec.Capabilities.clone(), Limits: e.spec.Limits, Available: true,
	}
	if a, ok := e.tool.(Availability); ok {
		ti.Available, ti.Unavailable = a.Available()
	}
	return ti
}

// Artifact opens a stored artifact by ID.
func (h *Host) Artifact(ctx context.Context, id string) (ArtifactRef, io.ReadCloser, error) {
	return h.artifacts.Open(ctx, id)
}

// Close closes every tool that holds resources and every adapter. Calls
// must have finished.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	entries := make([]*entry, 0, len(h.order))
	for _, n := range h.order {
		entries = append(entries, h.tools[n])
	}
	h.mu.Unlock()
	var errs []error
	for i, e := range entries {
		// A tool registered under several names is closed once.
		if slices.ContainsFunc(entries[:i], func(p *entry) bool { return sameTool(p.tool, e.tool) }) {
			continue
		}
		if c, ok := e.tool.(Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, fmt.Errorf("tool %q: %w", e.spec.Name, err))
			}
		}
	}
	kinds := make([]string, 0, len(h.adapters))
	for k := range h.adapters {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		if err := h.adapters[k].Close(); err != nil {
			errs = append(errs, fmt.Errorf("adapter %q: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

func (h *Host) lookup(name string) (*entry, error) {
	h.mu.RLock()
	e, ok := h.tools[name]
	closed := h.closed
	h.mu.RUnlock()
	if closed {
		return nil, &Error{Code: CodeToolUnavailable, Tool: name, Message: "the host is shutting down"}
	}
	if ok {
		return e, nil
	}
	h.mu.RLock()
	where, off := h.disabled[name]
	h.mu.RUnlock()
	if off {
		msg := fmt.Sprintf("tool %q is disabled", name)
		if where != "" {
			msg += " (enabled = false at " + where + ")"
		}
		return nil, &Error{Code: CodeToolNotFound, Tool: name, Message: msg}
	}
	msg := fmt.Sprintf("unknown tool %q", name)
	if s := h.suggest(name); len(s) > 0 {
		msg += "; did you mean " + strings.Join(quoteAll(s), " or ") + "?"
	}
	return nil, &Error{Code: CodeToolNotFound, Tool: name, Message: msg}
}

// NoteDisabled records that a tool is configured but disabled, and where
// (for example "config.hcl:12,1"), so that calling it says so rather than
// "unknown tool". The tool stays unregistered.
func (h *Host) NoteDisabled(name, where string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.disabled == nil {
		h.disabled = map[string]string{}
	}
	h.disabled[name] = where
}

// suggest returns up to three registered names close to name.
func (h *Host) suggest(name string) []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return Suggest(name, h.order)
}

// Suggest returns up to three of candidates close to name (a typo, another
// case, a part of it), closest first, for "did you mean" messages.
func Suggest(name string, candidates []string) []string {
	type cand struct {
		n string
		d int
	}
	var cs []cand
	for _, n := range candidates {
		d := editDistance(strings.ToLower(name), strings.ToLower(n))
		if d <= max(1, len(name)/3) || strings.Contains(n, name) && len(name) >= 3 {
			cs = append(cs, cand{n, d})
		}
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return a.d - b.d })
	var out []string
	for i := 0; i < len(cs) && i < 3; i++ {
		out = append(out, cs[i].n)
	}
	return out
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

// newCallID returns a fresh call ID: 64 random bits in hex. The bits come
// from math/rand/v2's generator (ChaCha8 per thread, seeded by the
// runtime from the system's entropy): unpredictable and unique in
// practice, without crypto/rand's system call per call. An ID names a
// call; it guards nothing.
func newCallID() string {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], rand.Uint64())
	var id [len("call_") + 2*len(b)]byte
	copy(id[:], "call_")
	hex.Encode(id[len("call_"):], b[:])
	return string(id[:])
}
