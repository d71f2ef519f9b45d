package plugin

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// encoders are the ways a server or a program writes a value it echoes
// (issue 23: a secret reflected JSON-escaped, percent-encoded, in base64 or
// in hex reached the tool unredacted).
var encoders = map[string]func(string) string{
	"go json":          func(s string) string { b, _ := json.Marshal(s); return string(b) },
	"python json":      func(s string) string { return `"` + jsonASCII(s, "%04x", false) + `"` },
	"php json":         func(s string) string { return `"` + jsonASCII(s, "%04x", true) + `"` },
	"upper-hex json":   func(s string) string { return `"` + jsonASCII(s, "%04X", false) + `"` },
	"query":            url.QueryEscape,
	"path":             url.PathEscape,
	"every byte":       func(s string) string { return percentAll(s, "%%%02X") },
	"every byte lower": func(s string) string { return percentAll(s, "%%%02x") },
	"hex":              func(s string) string { return hex.EncodeToString([]byte(s)) },
	"HEX":              func(s string) string { return strings.ToUpper(hex.EncodeToString([]byte(s))) },
}

// base64Encoders encode a whole payload the secret is part of.
var base64Encoders = map[string]*base64.Encoding{
	"std": base64.StdEncoding, "std raw": base64.RawStdEncoding,
	"url": base64.URLEncoding, "url raw": base64.RawURLEncoding,
}

func TestRedactEncodings(t *testing.T) {
	for _, secret := range []string{"sk-live-0123456789abcdef", `p@ss/w+rd "<é>" 🔑`} {
		s := NewSecrets(map[string]string{"KEY": secret})
		for name, enc := range encoders {
			text := "before " + enc(secret) + " after"
			got := s.Redact(text)
			if strings.Contains(got, enc(secret)) || !strings.Contains(got, "[REDACTED:KEY]") {
				t.Errorf("%s of %q: %q", name, secret, got)
			}
			if b := s.RedactBytes([]byte(text)); string(b) != got {
				t.Errorf("%s: RedactBytes %q, Redact %q", name, b, got)
			}
		}
		for name, enc := range base64Encoders {
			for pre := 0; pre < 3; pre++ {
				payload := strings.Repeat("x", pre) + secret + "tail"
				text := "token=" + enc.EncodeToString([]byte(payload))
				got := s.Redact(text)
				if core := secretChars(enc, payload, pre, len(secret)); strings.Contains(got, core) {
					t.Errorf("base64 %s at offset %d: %q still holds %q", name, pre, got, core)
				}
			}
		}
	}
	// A value that merely shares a prefix with a secret is left alone,
	// and a short secret's encodings are not hunted for in random text.
	s := NewSecrets(map[string]string{"KEY": "abcdefgh", "PIN": "1234"})
	if got := s.Redact("abcdefgX 31323334 MTIzNA=="); got != "abcdefgX 31323334 MTIzNA==" {
		t.Errorf("redacted too much: %q", got)
	}
}

// secretChars returns the characters of enc(payload) that encode bits of
// payload[off:off+n] only: what must not survive redaction.
func secretChars(enc *base64.Encoding, payload string, off, n int) string {
	full := enc.EncodeToString([]byte(payload))
	start, end := (8*off+5)/6, (8*off+8*n)/6
	return full[start:end]
}

// FuzzRedactEncodings: for any secret of redactable length and any text
// around it, no encoding of the secret survives Redact.
func FuzzRedactEncodings(f *testing.F) {
	f.Add("sk-live-0123456789", "x", "y")
	f.Add(`p@ss/w+rd "<é>"`, "", "\xff")
	f.Add("🔑🔑🔑🔑🔑🔑", "ab", "c")
	f.Fuzz(func(t *testing.T, secret, pre, post string) {
		if len(secret) < minEncodedLen || len(secret) > 256 || strings.Contains(secret, "[REDACTED") {
			return
		}
		s := NewSecrets(map[string]string{"K": secret})
		for name, enc := range encoders {
			e := enc(secret)
			if got := s.Redact(pre + e + post); strings.Contains(got, e) {
				t.Fatalf("%s: %q survives in %q", name, e, got)
			}
		}
		for name, enc := range base64Encoders {
			payload := pre + secret + post
			core := secretChars(enc, payload, len(pre), len(secret))
			if len(core) < minEncodedLen {
				continue
			}
			if got := s.Redact(enc.EncodeToString([]byte(payload))); strings.Contains(got, core) {
				t.Fatalf("base64 %s: %q survives in %q", name, core, got)
			}
		}
	})
}
