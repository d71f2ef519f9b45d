package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
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
	// order of values for redaction: longest first, so that a secret that
	// contains another is redacted whole.
	byLen []string
}

// NewSecrets returns a Secrets holding values by name.
func NewSecrets(values map[string]string) *Secrets {
	s := &Secrets{values: make(map[string]string, len(values))}
	for n, v := range values {
		s.names = append(s.names, n)
		s.values[n] = v
	}
	sort.Strings(s.names)
	s.byLen = slices.Clone(s.names)
	sort.SliceStable(s.byLen, func(i, j int) bool {
		return len(s.values[s.byLen[i]]) > len(s.values[s.byLen[j]])
	})
	return s
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
// its value. Other $ sequences are left alone. It is meant for outgoing HTTP
// headers, the one place a secret's value is used on a tool's behalf.
func (s *Secrets) Expand(str string) string {
	if s == nil || !strings.Contains(str, "$") {
		return str
	}
	return os.Expand(str, func(name string) string {
		if v, ok := s.values[name]; ok {
			return v
		}
		return "${" + name + "}"
	})
}

// Redact replaces every occurrence of a held secret's value with
// [REDACTED:NAME].
func (s *Secrets) Redact(str string) string {
	if s == nil || len(s.values) == 0 {
		return str
	}
	for _, n := range s.byLen {
		v := s.values[n]
		if v == "" {
			continue
		}
		if strings.Contains(str, v) {
			str = strings.ReplaceAll(str, v, "[REDACTED:"+n+"]")
		}
	}
	return str
}

// RedactBytes is Redact for byte slices. It returns b itself when nothing
// needed redacting.
func (s *Secrets) RedactBytes(b []byte) []byte {
	if s == nil || len(s.values) == 0 {
		return b
	}
	for _, n := range s.byLen {
		v := s.values[n]
		if v == "" {
			continue
		}
		if bytes.Contains(b, []byte(v)) {
			b = bytes.ReplaceAll(b, []byte(v), []byte("[REDACTED:"+n+"]"))
		}
	}
	return b
}
