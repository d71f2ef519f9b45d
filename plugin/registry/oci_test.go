package registry

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	ggcr "github.com/google/go-containerregistry/pkg/registry"
)

// ociRegistry runs a real OCI distribution registry in-process on
// 127.0.0.1 (go-containerregistry's, in memory) and returns its host.
// While *corrupt is set, blobs are served with their last byte flipped.
func ociRegistry(t *testing.T, corrupt *atomic.Bool) string {
	t.Helper()
	reg := ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !corrupt.Load() || r.Method != http.MethodGet || !strings.Contains(r.URL.Path, "/blobs/") {
			reg.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		reg.ServeHTTP(rec, r)
		b := rec.Body.Bytes()
		if len(b) > 0 {
			b[len(b)-1] ^= 0xff
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestOCIRegistry(t *testing.T) {
	ctx := context.Background()
	var corrupt atomic.Bool
	host := ociRegistry(t, &corrupt)
	src, err := NewOCISource("oci", "oci://"+host+"/tools")
	if err != nil {
		t.Fatal(err)
	}
	p := newPublisher(t)
	// Published into a directory first (as a publisher checks it), then
	// pushed as OCI artifacts.
	for _, v := range []string{"1.0.0", "1.4.0", "2.0.0"} {
		p.publish("acme/echo", v, []byte("module "+v), "")
		if _, err := PublishOCI(ctx, src, filepath.Join(p.src, "acme-echo-"+v+".json"), p.key); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := PublishOCI(ctx, src, filepath.Join(p.src, "acme-echo-1.0.0.json"), p.key); err == nil || !strings.Contains(err.Error(), "already published") {
		t.Fatalf("republishing a tag: %v", err)
	}
	c := p.client(src)
	res, err := c.Resolve(ctx, mustRef(t, "acme/echo@^1"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Manifest.Version != "1.4.0" || res.Signer == "" || strings.Join(res.Versions, " ") != "1.0.0 1.4.0 2.0.0" {
		t.Fatalf("resolved %s, signer %q, versions %v", res.Manifest.Ref(), res.Signer, res.Versions)
	}
	in, err := c.Install(ctx, res, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(in.ArtifactPath); string(b) != "module 1.4.0" {
		t.Fatalf("installed %q", b)
	}
	// A registry (or a man in the middle) serving other bytes: refused,
	// nothing cached.
	corrupt.Store(true)
	c2 := p.client(src)
	src.manifests = nil
	if _, err := c2.Install(ctx, res, Options{}); err == nil {
		t.Fatal("installed corrupted bytes")
	}
	if ents, _ := os.ReadDir(filepath.Join(c2.Cache.Dir, "sha256")); len(ents) != 0 {
		t.Fatal("corrupted bytes were cached")
	}
	corrupt.Store(false)
	// search reads the catalog.
	ix, err := ReadIndex(ctx, src)
	if err != nil || strings.Join(ix.Tools["acme/echo"].Versions, " ") != "1.0.0 1.4.0 2.0.0" {
		t.Fatalf("index %+v %v", ix, err)
	}
	if _, err := c.Resolve(ctx, mustRef(t, "acme/none"), Options{}); err == nil || !strings.Contains(err.Error(), "no registry lists this tool") {
		t.Fatalf("unknown id: %v", err)
	}
	// A file the artifact does not have, a path that is not a version's.
	for _, rel := range []string{"acme/echo/1.0.0/nope.wasm", "acme/echo/1.0.0/../x", "index", "acme/echo/v1/manifest.json"} {
		if _, _, err := src.Open(ctx, rel, 1<<20); err == nil {
			t.Errorf("%s opened", rel)
		} else if rel == "acme/echo/1.0.0/nope.wasm" && !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: %v", rel, err)
		}
	}
	for _, ref := range []string{"https://x", "oci://", "oci://h@x/p"} {
		if _, err := NewOCISource("x", ref); err == nil {
			t.Errorf("%s accepted", ref)
		}
	}
}
