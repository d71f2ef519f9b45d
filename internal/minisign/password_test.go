//go:build !race

package minisign

import (
	"errors"
	"path/filepath"
	"testing"
)

// Under the race detector minisign's scrypt (1 GiB) takes about a minute;
// .ci/run runs this test in its pass without -race.

// TestPasswordProtectedKey: a key minisign saved with a password (scrypt)
// opens with it, and not without or with a wrong one.
func TestPasswordProtectedKey(t *testing.T) {
	bin := minisignTool(t)
	dir := t.TempDir()
	if err := run(t, dir, "s3cret\ns3cret\n", bin, "-G", "-p", "k.pub", "-s", "k.key"); err != nil {
		t.Fatal(err)
	}
	file := read(t, filepath.Join(dir, "k.key"))
	if _, err := ParsePrivateKey(file, nil); !errors.Is(err, ErrPassword) {
		t.Fatalf("without password: %v, want ErrPassword", err)
	}
	if _, err := ParsePrivateKey(file, []byte("wrong")); !errors.Is(err, ErrPassword) {
		t.Fatalf("wrong password: %v, want ErrPassword", err)
	}
	sk, err := ParsePrivateKey(file, []byte("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ParsePublicKey(string(read(t, filepath.Join(dir, "k.pub"))))
	if err != nil {
		t.Fatal(err)
	}
	if sk.Public().String() != pub.String() {
		t.Fatal("decrypted key does not match its public key")
	}
}
