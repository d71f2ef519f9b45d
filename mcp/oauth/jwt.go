package oauth

// private_key_jwt client authentication (RFC 7523, section 2.2): the client
// proves who it is with a short-lived JWT signed by its private key. The
// SDK's client-credentials handler knows only client secrets, and the JWS
// needed here is small enough to write against the standard library.

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"
)

// clientAssertionType is the client_assertion_type of a JWT assertion.
const clientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// assertionLifetime bounds how long a client assertion is accepted: it is
// made for one token request.
const assertionLifetime = 5 * time.Minute

// signer signs client assertions with one key.
type signer struct {
	key crypto.Signer
	alg string
}

// newSigner parses a PEM private key (PKCS#8, PKCS#1 or SEC 1) and checks
// that it fits alg; an empty alg is chosen from the key.
func newSigner(pemKey, alg string) (*signer, error) {
	block, _ := pem.Decode([]byte(pemKey))
	if block == nil {
		return nil, errors.New("private key: no PEM block")
	}
	var key any
	var err error
	switch block.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("private key: %w", err)
	}
	s := &signer{alg: alg}
	switch k := key.(type) {
	case *rsa.PrivateKey:
		s.key = k
		if alg == "" {
			s.alg = "RS256"
		}
		if !strings.HasPrefix(s.alg, "RS") && !strings.HasPrefix(s.alg, "PS") {
			return nil, fmt.Errorf("private key: an RSA key cannot sign %s", s.alg)
		}
	case *ecdsa.PrivateKey:
		s.key = k
		want := map[int]string{256: "ES256", 384: "ES384", 521: "ES512"}[k.Curve.Params().BitSize]
		if want == "" {
			return nil, fmt.Errorf("private key: unsupported curve %s", k.Curve.Params().Name)
		}
		if alg == "" {
			s.alg = want
		}
		if s.alg != want {
			return nil, fmt.Errorf("private key: a %s key signs %s, not %s", k.Curve.Params().Name, want, s.alg)
		}
	case ed25519.PrivateKey:
		s.key = k
		if alg == "" {
			s.alg = "EdDSA"
		}
		if s.alg != "EdDSA" {
			return nil, fmt.Errorf("private key: an Ed25519 key signs EdDSA, not %s", s.alg)
		}
	default:
		return nil, fmt.Errorf("private key: unsupported key type %T", key)
	}
	if _, ok := hashOf(s.alg); !ok && s.alg != "EdDSA" {
		return nil, fmt.Errorf("private key: unsupported signing algorithm %q", s.alg)
	}
	return s, nil
}

func hashOf(alg string) (crypto.Hash, bool) {
	if len(alg) != 5 { // RS256, PS384, ES512…
		return 0, false
	}
	switch alg[2:] {
	case "256":
		return crypto.SHA256, true
	case "384":
		return crypto.SHA384, true
	case "512":
		return crypto.SHA512, true
	}
	return 0, false
}

// assertion returns a signed JWT naming clientID as issuer and subject,
// for audience (the authorization server's issuer).
func (s *signer) assertion(clientID, audience string, now time.Time) (string, error) {
	jti := make([]byte, 16)
	if _, err := rand.Read(jti); err != nil {
		return "", err
	}
	header, _ := json.Marshal(map[string]string{"alg": s.alg, "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{
		"iss": clientID, "sub": clientID, "aud": audience,
		"iat": now.Unix(), "exp": now.Add(assertionLifetime).Unix(),
		"jti": base64.RawURLEncoding.EncodeToString(jti),
	})
	enc := base64.RawURLEncoding
	input := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	sig, err := s.sign([]byte(input))
	if err != nil {
		return "", fmt.Errorf("signing the client assertion: %w", err)
	}
	return input + "." + enc.EncodeToString(sig), nil
}

func (s *signer) sign(input []byte) ([]byte, error) {
	if s.alg == "EdDSA" {
		return s.key.Sign(rand.Reader, input, crypto.Hash(0))
	}
	h, _ := hashOf(s.alg)
	d := h.New()
	d.Write(input)
	digest := d.Sum(nil)
	switch k := s.key.(type) {
	case *rsa.PrivateKey:
		if s.alg[0] == 'P' {
			return rsa.SignPSS(rand.Reader, k, h, digest, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
		}
		return rsa.SignPKCS1v15(rand.Reader, k, h, digest)
	case *ecdsa.PrivateKey:
		// JWS wants r||s, each the curve's size (RFC 7518, 3.4), not ASN.1.
		r, ss, err := ecdsa.Sign(rand.Reader, k, digest)
		if err != nil {
			return nil, err
		}
		size := (k.Curve.Params().BitSize + 7) / 8
		out := make([]byte, 2*size)
		r.FillBytes(out[:size])
		ss.FillBytes(out[size:])
		return out, nil
	}
	return nil, fmt.Errorf("unsupported key %T", s.key)
}
