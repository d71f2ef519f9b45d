// Package minisign reads, verifies and makes signatures in the format of
// the minisign tool (https://jedisct1.github.io/minisign/): Ed25519 over the
// BLAKE2b-512 hash of the file ("ED", what minisign 0.11 makes by default)
// or over the file itself ("Ed", minisign's legacy format), with a trusted
// comment covered by a second, global signature.
//
// toolhost's registry signs tool manifests and artifacts with it, so that
// publishers can sign with the minisign tool or with `host tool sign`, and
// hosts verify offline against public keys listed in their configuration.
//
// A public key is the base64 string of a minisign public key file's second
// line ("RWQ…"). A signature file has four lines: an untrusted comment, the
// signature, the trusted comment and the global signature. Secret keys are
// read and written in minisign's file format, unencrypted or encrypted with
// a password (scrypt, as minisign does).
package minisign

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"golang.org/x/crypto/blake2b"
)

// Sentinel errors, for errors.Is.
var (
	// ErrMalformed is a key or signature that is not in minisign's format.
	ErrMalformed = errors.New("minisign: malformed")
	// ErrKeyMismatch is a signature made by another key than the one
	// verifying it.
	ErrKeyMismatch = errors.New("minisign: signed by another key")
	// ErrInvalid is a signature that does not match the data or the
	// trusted comment: the data was changed, or the signature forged.
	ErrInvalid = errors.New("minisign: invalid signature")
)

var (
	algLegacy  = [2]byte{'E', 'd'} // Ed25519 over the data
	algHashed  = [2]byte{'E', 'D'} // Ed25519 over BLAKE2b-512(data)
	untrusted  = "untrusted comment: "
	trustedTag = "trusted comment: "
)

// KeyID identifies a key pair; minisign prints it in upper-case hex, the
// bytes in reverse (little-endian) order.
type KeyID [8]byte

// String is the key ID as minisign prints it.
func (id KeyID) String() string {
	return fmt.Sprintf("%016X", binary.LittleEndian.Uint64(id[:]))
}

// PublicKey is a minisign public key.
type PublicKey struct {
	ID  KeyID
	Key ed25519.PublicKey
}

// ParsePublicKey reads a public key: the base64 string alone, or the
// contents of a minisign public key file (comment line, then the key).
func ParsePublicKey(text string) (PublicKey, error) {
	line := strings.TrimSpace(text)
	if lines := nonEmptyLines(text); len(lines) == 2 && strings.HasPrefix(lines[0], untrusted) {
		line = lines[1]
	}
	b, err := base64.StdEncoding.DecodeString(line)
	if err != nil || len(b) != 2+8+ed25519.PublicKeySize {
		return PublicKey{}, fmt.Errorf("%w public key: want the base64 of 42 bytes (a minisign public key, \"RWQ…\")", ErrMalformed)
	}
	if [2]byte(b[:2]) != algLegacy {
		return PublicKey{}, fmt.Errorf("%w public key: algorithm %q, want \"Ed\"", ErrMalformed, b[:2])
	}
	return PublicKey{ID: KeyID(b[2:10]), Key: ed25519.PublicKey(bytes.Clone(b[10:]))}, nil
}

// String is the key in base64, as on the second line of its file.
func (k PublicKey) String() string {
	b := append(append(algLegacy[:], k.ID[:]...), k.Key...)
	return base64.StdEncoding.EncodeToString(b)
}

// File is the key as a minisign public key file.
func (k PublicKey) File() []byte {
	return []byte(untrusted + "minisign public key " + k.ID.String() + "\n" + k.String() + "\n")
}

// Signature is a parsed minisign signature file.
type Signature struct {
	Algorithm        [2]byte // "ED" (prehashed) or "Ed" (legacy)
	KeyID            KeyID
	Sig              [ed25519.SignatureSize]byte
	UntrustedComment string
	TrustedComment   string
	GlobalSig        [ed25519.SignatureSize]byte
}

// ParseSignature reads a signature file.
func ParseSignature(data []byte) (*Signature, error) {
	if len(data) > 64<<10 {
		return nil, fmt.Errorf("%w signature: %d bytes, more than a signature file holds", ErrMalformed, len(data))
	}
	lines := nonEmptyLines(string(data))
	if len(lines) != 4 {
		return nil, fmt.Errorf("%w signature: %d lines, want 4 (untrusted comment, signature, trusted comment, global signature)", ErrMalformed, len(lines))
	}
	s := &Signature{}
	var ok bool
	if s.UntrustedComment, ok = strings.CutPrefix(lines[0], untrusted); !ok {
		return nil, fmt.Errorf("%w signature: the first line must start %q", ErrMalformed, untrusted)
	}
	b, err := base64.StdEncoding.DecodeString(lines[1])
	if err != nil || len(b) != 2+8+ed25519.SignatureSize {
		return nil, fmt.Errorf("%w signature: the second line must be the base64 of 74 bytes", ErrMalformed)
	}
	s.Algorithm = [2]byte(b[:2])
	if s.Algorithm != algHashed && s.Algorithm != algLegacy {
		return nil, fmt.Errorf("%w signature: algorithm %q, want \"ED\" or \"Ed\"", ErrMalformed, b[:2])
	}
	s.KeyID = KeyID(b[2:10])
	s.Sig = [ed25519.SignatureSize]byte(b[10:])
	if s.TrustedComment, ok = strings.CutPrefix(lines[2], trustedTag); !ok {
		return nil, fmt.Errorf("%w signature: the third line must start %q", ErrMalformed, trustedTag)
	}
	g, err := base64.StdEncoding.DecodeString(lines[3])
	if err != nil || len(g) != ed25519.SignatureSize {
		return nil, fmt.Errorf("%w signature: the fourth line must be the base64 of 64 bytes", ErrMalformed)
	}
	s.GlobalSig = [ed25519.SignatureSize]byte(g)
	return s, nil
}

// Marshal is the signature as a minisign signature file.
func (s *Signature) Marshal() []byte {
	var b bytes.Buffer
	b.WriteString(untrusted + s.UntrustedComment + "\n")
	b.WriteString(base64.StdEncoding.EncodeToString(append(append(s.Algorithm[:], s.KeyID[:]...), s.Sig[:]...)) + "\n")
	b.WriteString(trustedTag + s.TrustedComment + "\n")
	b.WriteString(base64.StdEncoding.EncodeToString(s.GlobalSig[:]) + "\n")
	return b.Bytes()
}

// Verify checks that sig is k's signature of data, and that its trusted
// comment is the one k signed.
func (k PublicKey) Verify(data []byte, sig *Signature) error {
	if sig.Algorithm == algLegacy {
		return k.verify(data, sig)
	}
	h := blake2b.Sum512(data)
	return k.verify(h[:], sig)
}

// VerifyReader is Verify for data read from r, which must be signed in the
// prehashed format ("ED"): r is hashed as it is read, never held whole.
func (k PublicKey) VerifyReader(r io.Reader, sig *Signature) error {
	if sig.Algorithm != algHashed {
		return fmt.Errorf("%w: a streamed file must be signed prehashed (minisign's default; not -l)", ErrInvalid)
	}
	h, _ := blake2b.New512(nil)
	if _, err := io.Copy(h, r); err != nil {
		return fmt.Errorf("minisign: reading the signed data: %w", err)
	}
	return k.verify(h.Sum(nil), sig)
}

func (k PublicKey) verify(msg []byte, sig *Signature) error {
	if sig.KeyID != k.ID {
		return fmt.Errorf("%w: key %s, not %s", ErrKeyMismatch, sig.KeyID, k.ID)
	}
	if len(k.Key) != ed25519.PublicKeySize || !ed25519.Verify(k.Key, msg, sig.Sig[:]) {
		return fmt.Errorf("%w: the data does not match the signature of key %s", ErrInvalid, k.ID)
	}
	global := append(sig.Sig[:len(sig.Sig):len(sig.Sig)], sig.TrustedComment...)
	if !ed25519.Verify(k.Key, global, sig.GlobalSig[:]) {
		return fmt.Errorf("%w: the trusted comment was changed", ErrInvalid)
	}
	return nil
}

// PrivateKey is a minisign secret key.
type PrivateKey struct {
	ID  KeyID
	Key ed25519.PrivateKey
}

// Public is the key's public half.
func (k PrivateKey) Public() PublicKey {
	return PublicKey{ID: k.ID, Key: k.Key.Public().(ed25519.PublicKey)}
}

// GenerateKey makes a key pair from rand.
func GenerateKey(rand io.Reader) (PrivateKey, error) {
	_, sk, err := ed25519.GenerateKey(rand)
	if err != nil {
		return PrivateKey{}, err
	}
	var id KeyID
	if _, err := io.ReadFull(rand, id[:]); err != nil {
		return PrivateKey{}, err
	}
	return PrivateKey{ID: id, Key: sk}, nil
}

// Sign signs data in the prehashed format with a trusted comment, as
// `minisign -S -t COMMENT` does.
func (k PrivateKey) Sign(data []byte, trustedComment string) (*Signature, error) {
	h := blake2b.Sum512(data)
	return k.sign(h[:], trustedComment)
}

// SignReader is Sign for data read from r, hashed as it is read.
func (k PrivateKey) SignReader(r io.Reader, trustedComment string) (*Signature, error) {
	h, _ := blake2b.New512(nil)
	if _, err := io.Copy(h, r); err != nil {
		return nil, fmt.Errorf("minisign: reading the data to sign: %w", err)
	}
	return k.sign(h.Sum(nil), trustedComment)
}

func (k PrivateKey) sign(digest []byte, trustedComment string) (*Signature, error) {
	if strings.ContainsAny(trustedComment, "\r\n") {
		return nil, fmt.Errorf("minisign: a trusted comment is one line")
	}
	if len(k.Key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("%w secret key: %d bytes", ErrMalformed, len(k.Key))
	}
	s := &Signature{Algorithm: algHashed, KeyID: k.ID, UntrustedComment: "signature from toolhost secret key", TrustedComment: trustedComment}
	s.Sig = [ed25519.SignatureSize]byte(ed25519.Sign(k.Key, digest))
	s.GlobalSig = [ed25519.SignatureSize]byte(ed25519.Sign(k.Key, append(s.Sig[:], trustedComment...)))
	return s, nil
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// hexID is used in error messages about secret keys.
func hexID(id KeyID) string { return strings.ToUpper(hex.EncodeToString(id[:])) }

// ParseKeyID reads a key ID as minisign prints it (16 hex digits).
func ParseKeyID(s string) (KeyID, error) {
	var id KeyID
	if len(s) != 16 {
		return id, fmt.Errorf("%w key ID %q: want 16 hexadecimal digits", ErrMalformed, s)
	}
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return id, fmt.Errorf("%w key ID %q: want 16 hexadecimal digits", ErrMalformed, s)
	}
	binary.LittleEndian.PutUint64(id[:], v)
	return id, nil
}
