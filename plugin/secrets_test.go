package plugin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/plugin"
)

func TestStaticSecrets(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("from-file\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TOOLHOST_TEST_SECRET", "from-env")
	t.Setenv("TOOLHOST_TEST_EMPTY", "")
	src := plugin.StaticSecrets{
		"ENV":     {Name: "ENV", Env: "TOOLHOST_TEST_SECRET"},
		"FILE":    {Name: "FILE", File: file},
		"UNSET":   {Name: "UNSET", Env: "TOOLHOST_TEST_NOT_SET"},
		"EMPTY":   {Name: "EMPTY", Env: "TOOLHOST_TEST_EMPTY"},
		"NOFILE":  {Name: "NOFILE", File: filepath.Join(dir, "missing")},
		"NOWHERE": {Name: "NOWHERE"},
	}
	tests := []struct {
		name, want, err string
	}{
		{name: "ENV", want: "from-env"},
		{name: "FILE", want: "from-file"},
		{name: "UNSET", err: "environment variable TOOLHOST_TEST_NOT_SET is not set"},
		{name: "EMPTY", err: "is not set"},
		{name: "NOFILE", err: `secret "NOFILE"`},
		{name: "NOWHERE", err: "neither env nor file"},
		{name: "UNKNOWN", err: "secret not found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := src.LookupSecret(context.Background(), tc.name)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("LookupSecret = %q, %v; want an error containing %q", v, err, tc.err)
				}
				return
			}
			if err != nil || v != tc.want {
				t.Fatalf("LookupSecret = %q, %v; want %q", v, err, tc.want)
			}
		})
	}
	if _, err := src.LookupSecret(context.Background(), "UNKNOWN"); !errors.Is(err, plugin.ErrSecretNotFound) {
		t.Errorf("unknown secret: %v, want ErrSecretNotFound", err)
	}
}

func TestSecrets(t *testing.T) {
	s := plugin.NewSecrets(map[string]string{"TOKEN": "t0k3n", "LONG": "xx-t0k3n-xx", "EMPTY": ""})
	if got := s.Names(); !slices.Equal(got, []string{"EMPTY", "LONG", "TOKEN"}) {
		t.Errorf("Names = %v", got)
	}
	if v, ok := s.Value("TOKEN"); !ok || v != "t0k3n" {
		t.Errorf("Value(TOKEN) = %q, %v", v, ok)
	}
	if _, ok := s.Value("NOPE"); ok {
		t.Error("Value(NOPE) found")
	}

	redact := []struct{ in, want string }{
		{"a t0k3n b", "a [REDACTED:TOKEN] b"},
		{"xx-t0k3n-xx", "[REDACTED:LONG]"}, // the longer secret whole, not its inner one
		{"nothing here", "nothing here"},
		{"", ""},
	}
	for _, tc := range redact {
		if got := s.Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := string(s.RedactBytes([]byte(tc.in))); got != tc.want {
			t.Errorf("RedactBytes(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	unchanged := []byte("nothing here")
	if got := s.RedactBytes(unchanged); &got[0] != &unchanged[0] {
		t.Error("RedactBytes copied a slice with nothing to redact")
	}

	var none *plugin.Secrets
	if none.Names() != nil || none.Redact("t0k3n") != "t0k3n" || none.Expand("$TOKEN") != "$TOKEN" {
		t.Error("a nil Secrets is not empty")
	}
	if _, ok := none.Value("TOKEN"); ok {
		t.Error("a nil Secrets has a value")
	}
}

func TestSecretsExpand(t *testing.T) {
	s := plugin.NewSecrets(map[string]string{"TOKEN": "t0k3n", "USER": "ann", "A_1": "x"})
	tests := []struct{ in, want string }{
		{"Bearer $TOKEN", "Bearer t0k3n"},
		{"Bearer ${TOKEN}", "Bearer t0k3n"},
		{"${USER}:${TOKEN}", "ann:t0k3n"},
		{"$USER$TOKEN", "annt0k3n"},
		{"$A_1-", "x-"},
		// Everything else is left exactly as written: header values may
		// contain '$' of their own.
		{"$OTHER", "$OTHER"},
		{"${OTHER}", "${OTHER}"},
		{"$TOKENS", "$TOKENS"},
		{"price $5", "price $5"},
		{"p@$$w0rd", "p@$$w0rd"},
		{"trailing $", "trailing $"},
		{"${TOKEN", "${TOKEN"},
		{"${}", "${}"},
		{"$", "$"},
		{"no dollars", "no dollars"},
		{"$$TOKEN", "$t0k3n"},
	}
	for _, tc := range tests {
		if got := s.Expand(tc.in); got != tc.want {
			t.Errorf("Expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
