package minisign

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// minisignTool returns the path of the minisign binary (Debian's package,
// installed by .ci/run). Interoperability is the point of these tests: in
// CI they must run, so a missing binary fails there.
func minisignTool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("minisign")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("minisign is not installed (apt-get install minisign)")
		}
		t.Skip("minisign is not installed (apt-get install minisign)")
	}
	return p
}

func run(t *testing.T, dir, stdin string, name string, args ...string) error {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Logf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return err
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMinisignSignsToolhostVerifies: keys and signatures made by the
// minisign tool, prehashed (its default) and legacy (-l), verify here; any
// change to the data, the trusted comment or the key is refused.
func TestMinisignSignsToolhostVerifies(t *testing.T) {
	bin := minisignTool(t)
	dir := t.TempDir()
	data := []byte("an artifact\x00with binary bytes\n")
	if err := os.WriteFile(filepath.Join(dir, "a.wasm"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(t, dir, "", bin, "-G", "-W", "-p", "k.pub", "-s", "k.key"); err != nil {
		t.Fatal(err)
	}
	pub, err := ParsePublicKey(string(read(t, filepath.Join(dir, "k.pub"))))
	if err != nil {
		t.Fatal(err)
	}
	sk, err := ParsePrivateKey(read(t, filepath.Join(dir, "k.key")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if sk.Public().String() != pub.String() {
		t.Fatalf("secret key's public half %s, public key file %s", sk.Public(), pub)
	}
	// The bare base64 form, as in HCL, reads the same.
	if k, err := ParsePublicKey(strings.Split(string(read(t, filepath.Join(dir, "k.pub"))), "\n")[1]); err != nil || k.String() != pub.String() {
		t.Fatalf("bare key: %v %v", k, err)
	}
	for _, legacy := range []bool{false, true} {
		args := []string{"-S", "-s", "k.key", "-m", "a.wasm", "-t", "acme/ocr 1.2.0"}
		if legacy {
			args = append(args, "-l")
		}
		if err := run(t, dir, "", bin, args...); err != nil {
			t.Fatal(err)
		}
		sig, err := ParseSignature(read(t, filepath.Join(dir, "a.wasm.minisig")))
		if err != nil {
			t.Fatal(err)
		}
		if sig.TrustedComment != "acme/ocr 1.2.0" {
			t.Errorf("trusted comment %q", sig.TrustedComment)
		}
		if err := pub.Verify(data, sig); err != nil {
			t.Fatalf("legacy=%v: %v", legacy, err)
		}
		err = pub.VerifyReader(bytes.NewReader(data), sig)
		if legacy != (err != nil) {
			t.Fatalf("legacy=%v: VerifyReader: %v", legacy, err)
		}
		tampered := bytes.Clone(data)
		tampered[3] ^= 1
		if err := pub.Verify(tampered, sig); !errors.Is(err, ErrInvalid) {
			t.Fatalf("tampered data: %v, want ErrInvalid", err)
		}
		forged := *sig
		forged.TrustedComment = "acme/ocr 9.9.9"
		if err := pub.Verify(data, &forged); !errors.Is(err, ErrInvalid) {
			t.Fatalf("changed trusted comment: %v, want ErrInvalid", err)
		}
		other, _ := GenerateKey(rand.Reader)
		if err := other.Public().Verify(data, sig); !errors.Is(err, ErrKeyMismatch) {
			t.Fatalf("other key: %v, want ErrKeyMismatch", err)
		}
		// Another key that claims the same ID is caught by the signature.
		impostor := other.Public()
		impostor.ID = pub.ID
		if err := impostor.Verify(data, sig); !errors.Is(err, ErrInvalid) {
			t.Fatalf("impostor key: %v, want ErrInvalid", err)
		}
	}
}

// TestToolhostSignsMinisignVerifies: a key pair made here is usable by the
// minisign tool (it signs with the secret key file), and signatures made
// here verify with `minisign -V`.
func TestToolhostSignsMinisignVerifies(t *testing.T) {
	bin := minisignTool(t)
	dir := t.TempDir()
	sk, err := GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("manifest "), 1000)
	for name, b := range map[string][]byte{"m.json": data, "k.pub": sk.Public().File(), "k.key": sk.File()} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sig, err := sk.SignReader(bytes.NewReader(data), "toolhost test")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "m.json.minisig"), sig.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(t, dir, "", bin, "-V", "-p", "k.pub", "-m", "m.json"); err != nil {
		t.Fatal("minisign refused toolhost's signature")
	}
	// minisign signs with a secret key file written here.
	if err := run(t, dir, "", bin, "-S", "-s", "k.key", "-m", "m.json", "-x", "by-minisign.sig"); err != nil {
		t.Fatal("minisign could not use toolhost's secret key file")
	}
	s2, err := ParseSignature(read(t, filepath.Join(dir, "by-minisign.sig")))
	if err != nil {
		t.Fatal(err)
	}
	if err := sk.Public().Verify(data, s2); err != nil {
		t.Fatal(err)
	}
	// A changed byte is refused by minisign too: the test can tell.
	data[0] ^= 1
	if err := os.WriteFile(filepath.Join(dir, "m.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(t, dir, "", bin, "-V", "-p", "k.pub", "-m", "m.json"); err == nil {
		t.Fatal("minisign accepted a signature of changed data")
	}
}

func TestMalformed(t *testing.T) {
	sk, _ := GenerateKey(rand.Reader)
	good, _ := sk.Sign([]byte("x"), "c")
	lines := strings.Split(strings.TrimSpace(string(good.Marshal())), "\n")
	for name, in := range map[string]string{
		"empty":              "",
		"three lines":        strings.Join(lines[:3], "\n"),
		"no comment prefix":  "comment\n" + strings.Join(lines[1:], "\n"),
		"bad base64":         lines[0] + "\n!!!\n" + strings.Join(lines[2:], "\n"),
		"short signature":    lines[0] + "\nRUQ=\n" + strings.Join(lines[2:], "\n"),
		"no trusted comment": strings.Join(lines[:2], "\n") + "\nnot trusted\n" + lines[3],
		"bad global":         strings.Join(lines[:3], "\n") + "\nAAAA\n",
		"huge":               strings.Repeat("a", 70<<10),
	} {
		if _, err := ParseSignature([]byte(in)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
	for name, in := range map[string]string{
		"empty":      "",
		"short":      "RWQ=",
		"not base64": "RWQ!",
		"secret key": string(sk.File()),
	} {
		if _, err := ParsePublicKey(in); !errors.Is(err, ErrMalformed) {
			t.Errorf("public key %s: %v, want ErrMalformed", name, err)
		}
	}
	damaged := sk.File()
	i := bytes.IndexByte(damaged, '\n') + 120 // inside the secret key
	damaged[i] ^= 'A' ^ 'B'
	if _, err := ParsePrivateKey(damaged, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("damaged secret key: %v, want ErrMalformed", err)
	}
	if _, err := sk.Sign([]byte("x"), "two\nlines"); err == nil {
		t.Error("a two-line trusted comment was signed")
	}
}

func FuzzParse(f *testing.F) {
	sk, _ := GenerateKey(rand.Reader)
	sig, _ := sk.Sign([]byte("x"), "comment")
	f.Add(sig.Marshal())
	f.Add(sk.File())
	f.Add(sk.Public().File())
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := ParseSignature(b); err == nil {
			again, err := ParseSignature(s.Marshal())
			if err != nil || *again != *s {
				t.Fatalf("signature does not survive Marshal: %v", err)
			}
			_ = sk.Public().Verify(b, s)
		}
		if k, err := ParsePublicKey(string(b)); err == nil {
			if again, err := ParsePublicKey(k.String()); err != nil || again.String() != k.String() {
				t.Fatalf("public key does not survive String: %v", err)
			}
		}
		_, _ = ParsePrivateKey(b, nil)
	})
}
