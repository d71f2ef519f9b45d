package registry

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toolhost/toolhost/internal/minisign"
)

// publisher is a publisher's working directory: a key and tools to
// publish into a directory registry.
type publisher struct {
	t     *testing.T
	key   minisign.PrivateKey
	src   string // where manifests and artifacts are written before publishing
	root  string // the directory registry
	bytes map[string][]byte
}

func newPublisher(t *testing.T) *publisher {
	t.Helper()
	key, err := minisign.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &publisher{t: t, key: key, src: t.TempDir(), root: t.TempDir(), bytes: map[string][]byte{}}
}

// publish writes a wasm tool id@version with artifact content and
// publishes it.
func (p *publisher) publish(id, version string, content []byte, extra string) *Manifest {
	p.t.Helper()
	sum := sha256.Sum256(content)
	art := fmt.Sprintf("%s-%s.wasm", strings.ReplaceAll(id, "/", "-"), version)
	if err := os.WriteFile(filepath.Join(p.src, art), content, 0o644); err != nil {
		p.t.Fatal(err)
	}
	manifest := fmt.Sprintf(`{"manifest_version": 1, "id": %q, "version": %q, "description": "test tool %s", "license": "MIT", "kind": "wasm",
  "artifact": {"url": %q, "sha256": %q, "size_bytes": %d},
  "capability_requirements": {}, "limits": {}%s}`, id, version, id, art, hex.EncodeToString(sum[:]), len(content), extra)
	mf := filepath.Join(p.src, fmt.Sprintf("%s-%s.json", strings.ReplaceAll(id, "/", "-"), version))
	if err := os.WriteFile(mf, []byte(manifest), 0o644); err != nil {
		p.t.Fatal(err)
	}
	m, err := Publish(p.root, mf, p.key)
	if err != nil {
		p.t.Fatal(err)
	}
	return m
}

func (p *publisher) client(sources ...Source) *Client {
	if len(sources) == 0 {
		sources = []Source{&DirSource{RegistryName: "local", Root: p.root}}
	}
	return &Client{Sources: sources, Trust: []minisign.PublicKey{p.key.Public()}, Cache: &Cache{Dir: p.t.TempDir()}}
}

func mustRef(t *testing.T, s string) Ref {
	t.Helper()
	r, err := ParseRef(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestPublishResolveInstallLock(t *testing.T) {
	p := newPublisher(t)
	for _, v := range []string{"1.0.0", "1.2.0", "1.3.0-rc.1", "2.0.0"} {
		p.publish("acme/echo", v, []byte("module "+v), "")
	}
	c := p.client()
	ctx := context.Background()
	res, err := c.Resolve(ctx, mustRef(t, "acme/echo@^1.0"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Manifest.Version != "1.2.0" || res.Signer != p.key.Public().ID.String() || strings.Join(res.Versions, " ") != "1.0.0 1.2.0 1.3.0-rc.1 2.0.0" {
		t.Fatalf("resolved %s signed by %q, versions %v", res.Manifest.Ref(), res.Signer, res.Versions)
	}
	var got []string
	c.Progress = func(name string, size int64) (func(int64), func()) {
		var n int64
		return func(d int64) { n += d }, func() { got = append(got, fmt.Sprintf("%s %d/%d", name, n, size)) }
	}
	in, err := c.Install(ctx, res, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(in.ArtifactPath); err != nil || string(b) != "module 1.2.0" {
		t.Fatalf("cached artifact: %q %v", b, err)
	}
	if strings.Join(got, ";") != "acme-echo-1.2.0.wasm 12/12" {
		t.Fatalf("progress: %q", got)
	}
	// Installing again downloads nothing.
	got = nil
	if _, err := c.Install(ctx, res, Options{}); err != nil || len(got) != 0 {
		t.Fatalf("second install: %v, downloads %q", err, got)
	}

	lockPath := filepath.Join(t.TempDir(), LockFileName)
	lock, err := ReadLock(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	lock.Pin(in)
	if err := lock.Write(lockPath); err != nil {
		t.Fatal(err)
	}
	lock, err = ReadLock(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lock.Lookup(mustRef(t, "acme/echo@^1"), c.Cache, "linux", "amd64")
	if err != nil {
		t.Fatal(err)
	}
	if l.Version != "1.2.0" || l.ArtifactPath != in.ArtifactPath || l.Manifest.ID != "acme/echo" || l.Signer == "" || l.Unsigned {
		t.Fatalf("locked %+v", l)
	}
	for ref, want := range map[string]string{
		"acme/other":        "not locked",
		"acme/echo@^2":      "does not allow",
		"acme/echo@1.0.0":   "does not allow",
		"acme/echo@>=1.1.0": "",
	} {
		_, err := lock.Lookup(mustRef(t, ref), c.Cache, "linux", "amd64")
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", ref, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrNotLocked)):
			t.Errorf("%s: err = %v, want %q", ref, err, want)
		}
	}
	// A cache that lost the artifact, or whose artifact changed.
	if err := c.Cache.Verify(l.SHA256); err != nil {
		t.Fatal(err)
	}
	os.Chmod(in.ArtifactPath, 0o644)
	os.WriteFile(in.ArtifactPath, []byte("module 6.6.6"), 0o644)
	if err := c.Cache.Verify(l.SHA256); !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("tampered artifact: %v", err)
	}
	os.Remove(in.ArtifactPath)
	if _, err := lock.Lookup(mustRef(t, "acme/echo@^1"), c.Cache, "linux", "amd64"); err == nil || !strings.Contains(err.Error(), "missing from the cache") {
		t.Fatalf("missing artifact: %v", err)
	}
}

func TestSignatures(t *testing.T) {
	ctx := context.Background()
	ref := func() Ref { return mustRef(t, "acme/echo@1.0.0") }
	t.Run("untrusted key", func(t *testing.T) {
		p := newPublisher(t)
		p.publish("acme/echo", "1.0.0", []byte("x"), "")
		c := p.client()
		other, _ := minisign.GenerateKey(rand.Reader)
		c.Trust = []minisign.PublicKey{other.Public()}
		_, err := c.Resolve(ctx, ref(), Options{})
		if !errors.Is(err, ErrUnsigned) || !strings.Contains(err.Error(), p.key.Public().ID.String()) || !strings.Contains(err.Error(), "not trusted") {
			t.Fatalf("err = %v", err)
		}
		res, err := c.Resolve(ctx, ref(), Options{AllowUnsigned: true})
		if err != nil || res.Signer != "" || !strings.Contains(res.Unsigned, "not trusted") {
			t.Fatalf("allowed: %+v %v", res, err)
		}
	})
	t.Run("no signature", func(t *testing.T) {
		p := newPublisher(t)
		p.publish("acme/echo", "1.0.0", []byte("x"), "")
		os.Remove(filepath.Join(p.root, "acme/echo/1.0.0/manifest.json.minisig"))
		if _, err := p.client().Resolve(ctx, ref(), Options{}); !errors.Is(err, ErrUnsigned) || !strings.Contains(err.Error(), "no signature") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("manifest changed after signing", func(t *testing.T) {
		p := newPublisher(t)
		p.publish("acme/echo", "1.0.0", []byte("x"), "")
		mf := filepath.Join(p.root, "acme/echo/1.0.0/manifest.json")
		b, _ := os.ReadFile(mf)
		os.WriteFile(mf, bytes.Replace(b, []byte(`"MIT"`), []byte(`"BSD-3-Clause"`), 1), 0o644)
		if _, err := p.client().Resolve(ctx, ref(), Options{}); !errors.Is(err, ErrUnsigned) || !strings.Contains(err.Error(), "does not verify") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("artifact unsigned", func(t *testing.T) {
		p := newPublisher(t)
		p.publish("acme/echo", "1.0.0", []byte("x"), "")
		os.Remove(filepath.Join(p.root, "acme/echo/1.0.0/acme-echo-1.0.0.wasm.minisig"))
		c := p.client()
		res, err := c.Resolve(ctx, ref(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Install(ctx, res, Options{}); !errors.Is(err, ErrUnsigned) || !strings.Contains(err.Error(), "artifact") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("a registry serving another tool under the path", func(t *testing.T) {
		p := newPublisher(t)
		p.publish("acme/echo", "1.0.0", []byte("x"), "")
		p.publish("acme/evil", "1.0.0", []byte("y"), "")
		// acme/echo's directory now holds acme/evil's signed manifest.
		for _, f := range []string{"manifest.json", "manifest.json.minisig"} {
			b, _ := os.ReadFile(filepath.Join(p.root, "acme/evil/1.0.0", f))
			os.WriteFile(filepath.Join(p.root, "acme/echo/1.0.0", f), b, 0o644)
		}
		if _, err := p.client().Resolve(ctx, ref(), Options{}); err == nil || !strings.Contains(err.Error(), "serves acme/evil@1.0.0 under acme/echo@1.0.0") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestInstallRefusesBadArtifacts(t *testing.T) {
	ctx := context.Background()
	p := newPublisher(t)
	p.publish("acme/echo", "1.0.0", []byte("twelve bytes"), "")
	art := filepath.Join(p.root, "acme/echo/1.0.0/acme-echo-1.0.0.wasm")
	for name, content := range map[string]string{
		"longer":    "twelve bytes and more",
		"shorter":   "twelve",
		"same size": "TWELVE BYTES",
	} {
		t.Run(name, func(t *testing.T) {
			os.WriteFile(art, []byte(content), 0o644)
			c := p.client()
			res, err := c.Resolve(ctx, mustRef(t, "acme/echo"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Install(ctx, res, Options{})
			if err == nil {
				t.Fatal("installed")
			}
			// Nothing cached, nothing left behind.
			ents, _ := os.ReadDir(filepath.Join(c.Cache.Dir, "sha256"))
			tmps, _ := os.ReadDir(filepath.Join(c.Cache.Dir, "tmp"))
			if len(ents) != 0 || len(tmps) != 0 {
				t.Fatalf("after %v: cache holds %d files, %d temporary", err, len(ents), len(tmps))
			}
		})
	}
}

func TestHTTPRegistry(t *testing.T) {
	ctx := context.Background()
	p := newPublisher(t)
	content := bytes.Repeat([]byte("wasm"), 64<<10)
	p.publish("acme/big", "1.0.0", content, "")
	var cut sync.Map // paths whose body is cut halfway
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := cut.Load(r.URL.Path); ok {
			w.Header().Set("Content-Length", fmt.Sprint(len(content)))
			w.Write(content[:len(content)/2])
			if hj, ok := w.(http.Hijacker); ok {
				c, _, _ := hj.Hijack()
				c.Close()
			}
			return
		}
		http.FileServer(http.Dir(p.root)).ServeHTTP(w, r)
	}))
	defer srv.Close()
	// HTTPS with the test server's certificate, trusted by the client.
	src, err := NewHTTPSource("web", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	src.Client = srv.Client()
	c := p.client(src)
	res, err := c.Resolve(ctx, mustRef(t, "acme/big@1"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	cut.Store("/acme/big/1.0.0/acme-big-1.0.0.wasm", true)
	if _, err := c.Install(ctx, res, Options{}); err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("cut download: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(c.Cache.Dir, "sha256")); len(ents) != 0 {
		t.Fatalf("a partial download was cached")
	}
	cut.Delete("/acme/big/1.0.0/acme-big-1.0.0.wasm")
	// Concurrent installs of the same artifact all succeed, with one file.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Install(ctx, res, Options{})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if b, err := os.ReadFile(c.Cache.Path(res.Manifest.Artifact.SHA256)); err != nil || !bytes.Equal(b, content) {
		t.Fatalf("cached: %d bytes, %v", len(b), err)
	}
	for _, base := range []string{"http://example.com/", "ftp://127.0.0.1/", "https://user:pw@example.com/"} {
		if _, err := NewHTTPSource("x", base); err == nil {
			t.Errorf("%s accepted", base)
		}
	}
}

func TestSourcesAndIndex(t *testing.T) {
	ctx := context.Background()
	p := newPublisher(t)
	p.publish("acme/echo", "1.0.0", []byte("x"), "")
	p.publish("acme/echo", "1.1.0", []byte("y"), `, "deprecated": {"message": "use 2", "successor": "acme/echo@^2"}`)
	b, _ := os.ReadFile(filepath.Join(p.root, indexFile))
	var ix Index
	json.Unmarshal(b, &ix)
	if e := ix.Tools["acme/echo"]; strings.Join(e.Versions, ",") != "1.0.0,1.1.0" || strings.Join(e.Deprecated, ",") != "1.1.0" || e.Description != "test tool acme/echo" {
		t.Fatalf("index %+v", ix)
	}
	// Republishing the same bytes is fine; other bytes are refused.
	p.publish("acme/echo", "1.0.0", []byte("x"), "")
	os.WriteFile(filepath.Join(p.src, "acme-echo-1.0.0.wasm"), []byte("z"), 0o644)
	mf := filepath.Join(p.src, "acme-echo-1.0.0.json")
	b, _ = os.ReadFile(mf)
	os.WriteFile(mf, bytes.Replace(b, []byte(`"MIT"`), []byte(`"ISC"`), 1), 0o644)
	if _, err := Publish(p.root, mf, p.key); err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("changed artifact: %v", err)
	}
	d := &DirSource{RegistryName: "local", Root: p.root}
	for _, rel := range []string{"../etc/passwd", "/etc/passwd", "acme/../../x"} {
		if _, _, err := d.Open(ctx, rel, 1<<20); err == nil || !strings.Contains(err.Error(), "not a path inside") {
			t.Errorf("%s: %v", rel, err)
		}
	}
	// The first registry that lists an id serves it.
	q := newPublisher(t)
	q.key = p.key
	q.publish("acme/echo", "9.0.0", []byte("shadow"), "")
	c := p.client(&DirSource{RegistryName: "first", Root: p.root}, &DirSource{RegistryName: "second", Root: q.root})
	res, err := c.Resolve(ctx, mustRef(t, "acme/echo"), Options{})
	if err != nil || res.Manifest.Version != "1.1.0" || res.Source.Name() != "first" {
		t.Fatalf("resolved %v from %v: %v", res.Manifest.Ref(), res.Source.Name(), err)
	}
	if _, err := c.Resolve(ctx, mustRef(t, "acme/nothing"), Options{}); err == nil || !strings.Contains(err.Error(), "searched first, second") {
		t.Fatalf("unknown id: %v", err)
	}
	if _, err := c.Resolve(ctx, mustRef(t, "acme/echo@^3"), Options{}); err == nil || !strings.Contains(err.Error(), "has no version that \"^3\" allows (it has 1.0.0, 1.1.0)") {
		t.Fatalf("no allowed version: %v", err)
	}
}

// TestMinisignSignedTool: a publisher who signs with the real minisign tool
// (Debian's package) ships a tool toolhost installs.
func TestMinisignSignedTool(t *testing.T) {
	bin, err := exec.LookPath("minisign")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("minisign is not installed (apt-get install minisign)")
		}
		t.Skip("minisign is not installed")
	}
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("minisign %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("-G", "-W", "-p", "mk.pub", "-s", "mk.key")
	b, err := os.ReadFile(filepath.Join(dir, "mk.pub"))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := minisign.ParsePublicKey(string(b))
	if err != nil {
		t.Fatal(err)
	}
	p := newPublisher(t)
	p.publish("acme/echo", "1.0.0", []byte("signed by minisign"), "")
	// Re-sign every file with minisign, replacing toolhost's signatures.
	vd := filepath.Join(p.root, "acme", "echo", "1.0.0")
	for _, f := range []string{"manifest.json", "acme-echo-1.0.0.wasm"} {
		os.Remove(filepath.Join(vd, f+".minisig"))
		run("-S", "-s", "mk.key", "-m", filepath.Join(vd, f))
	}
	c := p.client()
	c.Trust = []minisign.PublicKey{pub}
	res, err := c.Resolve(context.Background(), mustRef(t, "acme/echo"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Signer != pub.ID.String() {
		t.Fatalf("signer %q, want minisign's key %s", res.Signer, pub.ID)
	}
	if _, err := c.Install(context.Background(), res, Options{}); err != nil {
		t.Fatal(err)
	}
}
