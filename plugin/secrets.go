package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
)

// SecretSource resolves a secret by name. The host asks it once per call
// for each secret the tool was granted; values never reach logs, audit lines
// or (unless an adapter deliberately injects them, as into HTTP headers) the
// tool itself.
type SecretSource interface {
	LookupSecret(ctx context.Context, name string) (value string, err error)
}

// SecretFunc adapts a function to SecretSource.
type SecretFunc func(ctx context.Context, name string) (string, error)

// LookupSecret calls f.
func (f SecretFunc) LookupSecret(ctx context.Context, name string) (string, error) {
	return f(ctx, name)
}

// ErrSecretNotFound is returned by a SecretSource that has no such secret.
var ErrSecretNotFound = errors.New("secret not found")

// SecretRef says where the host finds one secret's value.
type SecretRef struct {
	Name string
	// Env names an environment variable holding the value.
	Env string
	// File names a file holding the value (trailing newline trimmed).
	File string
}

// StaticSecrets is a SecretSource over SecretRefs, reading env vars and files
// when a secret is looked up.
type StaticSecrets map[string]SecretRef

// LookupSecret implements SecretSource.
func (s StaticSecrets) LookupSecret(_ context.Context, name string) (string, error) {
	ref, ok := s[name]
	if !ok {
		return "", fmt.Errorf("secret %q: %w", name, ErrSecretNotFound)
	}
	switch {
	case ref.Env != "":
		v, ok := os.LookupEnv(ref.Env)
		if !ok || v == "" {
			return "", fmt.Errorf("secret %q: environment variable %s is not set", name, ref.Env)
		}
		return v, nil
	case ref.File != "":
		b, err := os.ReadFile(ref.File)
		if err != nil {
			return "", fmt.Errorf("secret %q: %w", name, err)
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	return "", fmt.Errorf("secret %q has neither env nor file", name)
}

// Secrets holds the resolved secrets of one call. The zero value and nil hold
// none. Secrets is safe for concurrent use once built.
type Secrets struct {
	names  []string
	values map[string]string
	// forms holds, per name, the value as it may appear in output: raw,
	// JSON-escaped, percent-encoded, in base64 and in hex, the ways common
	// encoders write it (encodedForms).
	forms map[string][]string
	// redactor replaces every form of every value in one pass, longest
	// forms first so that a secret containing another is redacted whole.
	redactor *strings.Replacer
}

// noSecrets is the (immutable) Secrets of every call to a tool that was
// granted none.
var noSecrets = NewSecrets(nil)

// NewSecrets returns a Secrets holding values by name.
func NewSecrets(values map[string]string) *Secrets {
	s := &Secrets{values: make(map[string]string, len(values))}
	for n, v := range values {
		s.names = append(s.names, n)
		s.values[n] = v
	}
	sort.Strings(s.names)
	s.forms = make(map[string][]string, len(values))
	type pair struct{ form, name string }
	var pairs []pair
	for n, v := range values {
		if v == "" {
			continue
		}
		s.forms[n] = encodedForms(v)
		for _, f := range s.forms[n] {
			pairs = append(pairs, pair{f, n})
		}
	}
	sort.SliceStable(pairs, func(i, j int) bool {
		if len(pairs[i].form) != len(pairs[j].form) {
			return len(pairs[i].form) > len(pairs[j].form)
		}
		return pairs[i].name < pairs[j].name
	})
	args := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		args = append(args, p.form, "[REDACTED:"+p.name+"]")
	}
	if len(args) > 0 {
		s.redactor = strings.NewReplacer(args...)
	}
	return s
}

// callSecrets is what a call's reports, questions and answers are
// redacted with: its secrets, together with what its tool holds of its own
// (SecretHolder) at each use, so that a credential the tool replaces
// during the call (a refreshed token) is redacted from the next report on.
// For any other tool it is the call's secrets as they are.
type callSecrets struct {
	resolved *Secrets
	holder   bool // the tool is a SecretHolder
	tool     Tool

	mu   sync.Mutex
	held map[string]string
	cur  *Secrets
}

func newCallSecrets(resolved *Secrets, tool Tool, held map[string]string) *callSecrets {
	_, holder := tool.(SecretHolder)
	return &callSecrets{resolved: resolved, holder: holder, tool: tool, held: held, cur: resolved.withHeld(held)}
}

// current returns the secrets with what the tool holds now.
func (c *callSecrets) current() *Secrets {
	if !c.holder {
		return c.cur
	}
	now := heldBy(c.tool)
	c.mu.Lock()
	defer c.mu.Unlock()
	// Unchanged, as nearly always, the secrets serve as they are rather
	// than being built again (every encoded form, one replacer).
	if !maps.Equal(now, c.held) {
		c.held, c.cur = now, c.resolved.withHeld(now)
	}
	return c.cur
}

// Redact replaces the secrets in s (Secrets.Redact).
func (c *callSecrets) Redact(s string) string { return c.current().Redact(s) }

func (c *callSecrets) redactJSON(doc []byte) []byte { return c.current().redactJSON(doc) }

// heldBy returns the secrets tool holds of its own (SecretHolder); nil
// for a tool that holds none.
func heldBy(tool Tool) map[string]string {
	if sh, ok := tool.(SecretHolder); ok {
		return sh.HeldSecrets()
	}
	return nil
}

// withHeld returns s with held added (a granted secret keeps its name),
// or s itself when held is empty.
func (s *Secrets) withHeld(held map[string]string) *Secrets {
	if len(held) == 0 {
		return s
	}
	vals := make(map[string]string, len(held))
	if s != nil {
		maps.Copy(vals, s.values)
	}
	for n, v := range held {
		if _, taken := vals[n]; !taken {
			vals[n] = v
		}
	}
	return NewSecrets(vals)
}

// jsonEscape returns v as it appears inside a JSON string.
func jsonEscape(v string, html bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(v); err != nil {
		return v
	}
	q := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	return string(q[1 : len(q)-1])
}

// Names returns the names of the secrets held, sorted.
func (s *Secrets) Names() []string {
	if s == nil {
		return nil
	}
	return slices.Clone(s.names)
}

// Value returns the value of a secret.
func (s *Secrets) Value(name string) (string, bool) {
	if s == nil {
		return "", false
	}
	v, ok := s.values[name]
	return v, ok
}

// Expand replaces $NAME and ${NAME} for every held secret NAME in str with
// its value. Everything else is left exactly as written, other $ sequences
// included ("$5", "$$", "${OTHER}"): a header value may contain '$' of its
// own. It is meant for outgoing HTTP headers, the one place a secret's
// value is used on a tool's behalf.
func (s *Secrets) Expand(str string) string {
	if s == nil || !strings.Contains(str, "$") {
		return str
	}
	var b strings.Builder
	b.Grow(len(str))
	for i := 0; i < len(str); i++ {
		if str[i] != '$' {
			b.WriteByte(str[i])
			continue
		}
		name, n := secretRef(str[i+1:])
		if v, ok := s.values[name]; ok && n > 0 {
			b.WriteString(v)
			i += n
			continue
		}
		b.WriteByte('$')
	}
	return b.String()
}

// secretRef parses the name after a '$': "{NAME}" or the longest run of
// letters, digits and underscores. It returns the name and how many bytes
// it spans, 0 when there is none.
func secretRef(s string) (name string, n int) {
	if rest, ok := strings.CutPrefix(s, "{"); ok {
		end := strings.IndexByte(rest, '}')
		if end <= 0 {
			return "", 0
		}
		return rest[:end], end + 2
	}
	for n < len(s) && (s[n] == '_' || 'a' <= s[n] && s[n] <= 'z' || 'A' <= s[n] && s[n] <= 'Z' || '0' <= s[n] && s[n] <= '9') {
		n++
	}
	return s[:n], n
}

// Redact replaces every occurrence of a held secret's value with
// [REDACTED:NAME]. A value is also found encoded the ways a program or a
// server commonly writes it — JSON-escaped, percent-encoded, in base64
// (either alphabet, any alignment) or in hex — so that a server echoing a
// secret back in another encoding does not hand it to the tool.
func (s *Secrets) Redact(str string) string {
	if s == nil || s.redactor == nil {
		return str
	}
	return s.redactor.Replace(str)
}

// RedactBytes is Redact for byte slices. It returns b itself when nothing
// needed redacting.
func (s *Secrets) RedactBytes(b []byte) []byte {
	if s == nil || s.redactor == nil {
		return b
	}
	str := string(b)
	if r := s.redactor.Replace(str); r != str {
		return []byte(r)
	}
	return b
}

// redactJSON redacts a JSON document: every string in it, keys included,
// is redacted after decoding, so a value is found however the producer
// escaped it (\u003c, \/, \u00e9 ...). The document is re-encoded only when
// something was redacted; otherwise doc itself is returned. A document that
// is not valid JSON is redacted with RedactBytes.
func (s *Secrets) redactJSON(doc []byte) []byte {
	if s == nil || len(s.values) == 0 {
		return doc
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.Decode(new(any)) != io.EOF {
		return s.RedactBytes(doc)
	}
	v, changed := s.redactValue(v)
	if !changed {
		return doc
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return s.RedactBytes(doc)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func (s *Secrets) redactValue(v any) (any, bool) {
	switch t := v.(type) {
	case string:
		r := s.Redact(t)
		return r, r != t
	case []any:
		changed := false
		for i := range t {
			var c bool
			t[i], c = s.redactValue(t[i])
			changed = changed || c
		}
		return t, changed
	case map[string]any:
		changed := false
		out := make(map[string]any, len(t))
		for k, e := range t {
			rk := s.Redact(k)
			re, c := s.redactValue(e)
			changed = changed || c || rk != k
			out[rk] = re
		}
		return out, changed
	}
	return v, false
}
