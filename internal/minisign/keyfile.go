package minisign

import (
	"bytes"
	"crypto/ed25519"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/blake2b"
	"golang.org/x/crypto/scrypt"
)

// A secret key file is a comment line and the base64 of: the signature
// algorithm ("Ed"), the key derivation algorithm ("Sc" for scrypt, zeros
// for none), the checksum algorithm ("B2"), a 32-byte salt, the scrypt
// limits (two little-endian uint64s), then the key ID, the 64-byte Ed25519
// secret key and a BLAKE2b-256 checksum of algorithm, ID and key — these
// last 104 bytes encrypted with the password when there is one.
const secretKeyLen = 2 + 2 + 2 + 32 + 8 + 8 + 8 + ed25519.PrivateKeySize + 32

// ErrPassword is a password-protected secret key read without its
// password, or with a wrong one.
var ErrPassword = errors.New("minisign: the secret key needs its password")

// ParsePrivateKey reads a minisign secret key file. A password-protected
// key needs password (nil for a key saved without one, `minisign -G -W`).
func ParsePrivateKey(data, password []byte) (PrivateKey, error) {
	lines := nonEmptyLines(string(data))
	if len(lines) != 2 || !strings.HasPrefix(lines[0], untrusted) {
		return PrivateKey{}, fmt.Errorf("%w secret key: want a comment line and the key (a minisign secret key file)", ErrMalformed)
	}
	b, err := base64.StdEncoding.DecodeString(lines[1])
	if err != nil || len(b) != secretKeyLen {
		return PrivateKey{}, fmt.Errorf("%w secret key: want the base64 of %d bytes", ErrMalformed, secretKeyLen)
	}
	if [2]byte(b[:2]) != algLegacy || string(b[4:6]) != "B2" {
		return PrivateKey{}, fmt.Errorf("%w secret key: algorithms %q/%q, want \"Ed\"/\"B2\"", ErrMalformed, b[:2], b[4:6])
	}
	rest := b[54:]
	switch kdf := b[2:4]; {
	case string(kdf) == "Sc":
		if len(password) == 0 {
			return PrivateKey{}, ErrPassword
		}
		salt := b[6:38]
		ops, mem := binary.LittleEndian.Uint64(b[38:46]), binary.LittleEndian.Uint64(b[46:54])
		n, r, p, err := scryptParams(ops, mem)
		if err != nil {
			return PrivateKey{}, err
		}
		stream, err := scrypt.Key(password, salt, n, r, p, len(rest))
		if err != nil {
			return PrivateKey{}, fmt.Errorf("minisign: deriving the key from the password: %w", err)
		}
		rest = bytes.Clone(rest)
		subtle.XORBytes(rest, rest, stream)
	case kdf[0] != 0 || kdf[1] != 0:
		return PrivateKey{}, fmt.Errorf("%w secret key: key derivation %q", ErrMalformed, kdf)
	}
	id, sk, sum := KeyID(rest[:8]), rest[8:8+ed25519.PrivateKeySize], rest[8+ed25519.PrivateKeySize:]
	want := secretChecksum(id, sk)
	// minisign leaves the checksum zero in keys saved without a password;
	// their damage shows in the consistency check below.
	unchecked := string(b[2:4]) != "Sc" && bytes.Equal(sum, make([]byte, len(sum)))
	if !unchecked && subtle.ConstantTimeCompare(sum, want[:]) != 1 {
		if string(b[2:4]) == "Sc" {
			return PrivateKey{}, fmt.Errorf("%w: wrong password", ErrPassword)
		}
		return PrivateKey{}, fmt.Errorf("%w secret key %s: its checksum does not match (the file is damaged)", ErrMalformed, hexID(id))
	}
	k := PrivateKey{ID: id, Key: ed25519.PrivateKey(append([]byte(nil), sk...))}
	// The public half stored in the key must be the one its seed makes.
	if !k.Key.Public().(ed25519.PublicKey).Equal(ed25519.NewKeyFromSeed(k.Key.Seed()).Public()) {
		return PrivateKey{}, fmt.Errorf("%w secret key %s: inconsistent key", ErrMalformed, hexID(id))
	}
	return k, nil
}

// File is the key as an unencrypted minisign secret key file (what
// `minisign -G -W` writes). Keep it as secret as the key.
func (k PrivateKey) File() []byte {
	b := make([]byte, 0, secretKeyLen)
	b = append(b, algLegacy[:]...)
	b = append(b, 0, 0, 'B', '2')
	b = append(b, make([]byte, 32+8+8)...) // no salt, no limits
	b = append(b, k.ID[:]...)
	b = append(b, k.Key...)
	sum := secretChecksum(k.ID, k.Key)
	b = append(b, sum[:]...)
	return []byte(untrusted + "minisign secret key\n" + base64.StdEncoding.EncodeToString(b) + "\n")
}

// scryptParams turns the limits stored in a key file into scrypt's N, r
// and p, the way libsodium's crypto_pwhash_scryptsalsa208sha256 (which
// minisign uses) does. Limits beyond what minisign writes are refused
// rather than allowed to take the machine's memory.
func scryptParams(ops, mem uint64) (n, r, p int, err error) {
	if ops > 1<<40 || mem > 4<<30 {
		return 0, 0, 0, fmt.Errorf("%w secret key: scrypt limits %d/%d are beyond minisign's", ErrMalformed, ops, mem)
	}
	ops = max(ops, 32768)
	r = 8
	var nLog2 uint
	if ops < mem/32 {
		p = 1
		maxN := ops / (uint64(r) * 4)
		for nLog2 = 1; nLog2 < 63; nLog2++ {
			if uint64(1)<<nLog2 > maxN/2 {
				break
			}
		}
	} else {
		maxN := mem / (uint64(r) * 128)
		for nLog2 = 1; nLog2 < 63; nLog2++ {
			if uint64(1)<<nLog2 > maxN/2 {
				break
			}
		}
		maxRP := min((ops/4)/(uint64(1)<<nLog2), 0x3fffffff)
		p = int(maxRP) / r
	}
	return 1 << nLog2, r, max(p, 1), nil
}

func secretChecksum(id KeyID, sk []byte) [32]byte {
	h, _ := blake2b.New256(nil)
	h.Write(algLegacy[:])
	h.Write(id[:])
	h.Write(sk)
	var out [32]byte
	h.Sum(out[:0])
	return out
}
