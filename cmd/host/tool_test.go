package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	ggcr "github.com/google/go-containerregistry/pkg/registry"

	"github.com/toolhost/toolhost/extism/builtin"
)

// registryWorld is a publisher with a key and a directory registry, and an
// operator's configuration that names a tool from it by reference.
type registryWorld struct {
	t        *testing.T
	dir      string
	key, pub string // key files
	pubKey   string // the public key's base64 line
	registry string
	config   string
	module   []byte
}

func newRegistryWorld(t *testing.T) *registryWorld {
	t.Helper()
	dir := t.TempDir()
	w := &registryWorld{t: t, dir: dir, registry: filepath.Join(dir, "registry"), config: filepath.Join(dir, "config.hcl")}
	// The artifact: the built-in Rust module that serves filesystem.list
	// (small, so it compiles fast under the race detector).
	m, ok := builtin.LookupTool("filesystem", "filesystem.list")
	if !ok {
		t.Fatal("no built-in filesystem.list module")
	}
	w.module = m
	os.MkdirAll(filepath.Join(dir, "pub"), 0o755)
	os.MkdirAll(filepath.Join(dir, "workspace"), 0o755)
	os.WriteFile(filepath.Join(dir, "workspace", "hello.txt"), []byte("hi"), 0o644)
	r := runCLI(t, "", "tool", "keygen", "-o", filepath.Join(dir, "pub", "acme"))
	if r.code != 0 {
		t.Fatalf("keygen: %d %s", r.code, r.stderr)
	}
	w.key, w.pub = filepath.Join(dir, "pub", "acme.key"), filepath.Join(dir, "pub", "acme.pub")
	b, err := os.ReadFile(w.pub)
	if err != nil {
		t.Fatal(err)
	}
	w.pubKey = strings.TrimSpace(strings.Split(string(b), "\n")[1])
	return w
}

// publish writes and publishes acme/fs at version, asking for extra
// capabilities (JSON members of capability_requirements) beside the mount.
func (w *registryWorld) publish(version, extra string) cliResult {
	w.t.Helper()
	sum := sha256.Sum256(w.module)
	art := "fs-" + version + ".wasm"
	os.WriteFile(filepath.Join(w.dir, "pub", art), w.module, 0o644)
	manifest := fmt.Sprintf(`{"manifest_version": 1, "id": "acme/fs", "version": %q,
  "description": "Lists a directory.", "license": "Apache-2.0", "kind": "wasm", "tool": "filesystem.list",
  "artifact": {"url": %q, "sha256": %q, "size_bytes": %d},
  "capability_requirements": {"mounts": [{"guest_path": "/workspace", "read_only": true}]%s},
  "limits": {"timeout": "10s"}}`, version, art, hex.EncodeToString(sum[:]), len(w.module), extra)
	mf := filepath.Join(w.dir, "pub", "fs-"+version+".json")
	os.WriteFile(mf, []byte(manifest), 0o644)
	return runCLI(w.t, "", "tool", "publish", "-k", w.key, "-r", w.registry, mf)
}

// publishDeprecated publishes acme/fs at version, deprecated in favour of
// acme/fs@^2.
func (w *registryWorld) publishDeprecated(version string) cliResult {
	w.t.Helper()
	sum := sha256.Sum256(w.module)
	mf := filepath.Join(w.dir, "pub", "fs-"+version+".json")
	os.WriteFile(mf, []byte(fmt.Sprintf(`{"manifest_version": 1, "id": "acme/fs", "version": %q,
  "description": "Lists a directory.", "license": "Apache-2.0", "kind": "wasm", "tool": "filesystem.list",
  "artifact": {"url": "fs-1.0.0.wasm", "sha256": %q, "size_bytes": %d},
  "capability_requirements": {"mounts": [{"guest_path": "/workspace", "read_only": true}]},
  "limits": {}, "deprecated": {"message": "lists too slowly", "successor": "acme/fs@^2"}}`, version, hex.EncodeToString(sum[:]), len(w.module))), 0o644)
	return runCLI(w.t, "", "tool", "publish", "-k", w.key, "-r", w.registry, mf)
}

// writeConfig writes the operator's configuration; toolExtra goes inside
// the tool block, trusted is the key list.
func (w *registryWorld) writeConfig(ref, toolExtra, trusted string) {
	w.t.Helper()
	cfg := fmt.Sprintf(`host {
  workspace = "./workspace"
  cache_dir = "./cache"
  log_level = "off"
}
registry "local" {
  path = "./registry"
}
trust {
  keys = [%s]
}
grants {
  mount {
    path      = "./workspace"
    read_only = true
  }
}
tool "ws.list" {
  tier = "read_only"
  wasm {
    tool_ref = %q
  }
%s
}
`, trusted, ref, toolExtra)
	if err := os.WriteFile(w.config, []byte(cfg), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

const workspaceMount = `  mount {
    host_path  = "./workspace"
    guest_path = "/workspace"
    read_only  = true
  }`

func TestToolRegistryEndToEnd(t *testing.T) {
	w := newRegistryWorld(t)
	if r := w.publish("1.0.0", ""); r.code != 0 || !strings.Contains(r.stdout, "published acme/fs@1.0.0") {
		t.Fatalf("publish: %d %s %s", r.code, r.stdout, r.stderr)
	}
	w.writeConfig("acme/fs@^1", workspaceMount, fmt.Sprintf("%q", w.pubKey))
	cfg := "--config=" + w.config

	// Not installed yet: validate says so at the reference, with the fix.
	r := runCLI(t, "", "validate", cfg)
	if r.code != 2 || !strings.Contains(r.stderr, "Tool reference not installed") || !strings.Contains(r.stderr, "host tool install acme/fs@^1") || !strings.Contains(r.stderr, "tool_ref = ") {
		t.Fatalf("validate before install: %d\n%s", r.code, r.stderr)
	}
	r = runCLI(t, "", "tool", "search", cfg)
	if r.code != 0 || !strings.Contains(r.stdout, "acme/fs") || !strings.Contains(r.stdout, "Lists a directory.") {
		t.Fatalf("search: %d %s %s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, "", "tool", "info", "acme/fs", cfg)
	if r.code != 0 || !strings.Contains(r.stdout, "signed by:  trusted key") || !strings.Contains(r.stdout, "mount /workspace (read-only)") {
		t.Fatalf("info: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// Install everything the configuration references.
	r = runCLI(t, "", "tool", "install", cfg)
	if r.code != 0 || !strings.Contains(r.stdout, "installed acme/fs@1.0.0") || !strings.Contains(r.stdout, `tool "ws.list" grants everything it asks for`) ||
		!strings.Contains(r.stderr, "downloading fs-1.0.0.wasm") {
		t.Fatalf("install: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	lock, err := os.ReadFile(filepath.Join(w.dir, "toolhost.lock"))
	if err != nil || !strings.Contains(string(lock), `"version": "1.0.0"`) {
		t.Fatalf("lock: %s %v", lock, err)
	}
	r = runCLI(t, "", "call", cfg, "ws.list", `{"path":"."}`)
	if r.code != 0 || !strings.Contains(r.stdout, "hello.txt") {
		t.Fatalf("call: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r = runCLI(t, "", "tool", "verify", cfg); r.code != 0 || !strings.Contains(r.stdout, "acme/fs@1.0.0: ok") {
		t.Fatalf("verify: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r = runCLI(t, "", "doctor", cfg); r.code != 0 || !strings.Contains(r.stdout, "acme/fs                1.0.0: ok") || !strings.Contains(r.stdout, "(1 pinned)") {
		t.Fatalf("doctor: %d %s %s", r.code, r.stdout, r.stderr)
	}

	// A new version: update moves the pin and says what changed; doctor
	// shows the deprecated pin with its successor.
	if r := w.publish("1.1.0", `, "hosts": ["api.example.com"]`); r.code != 0 {
		t.Fatalf("publish 1.1.0: %s", r.stderr)
	}
	r = runCLI(t, "", "tool", "update", cfg)
	if r.code != 0 || !strings.Contains(r.stdout, "acme/fs 1.0.0 -> 1.1.0") ||
		!strings.Contains(r.stdout, "capabilities asked for: mount /workspace (read-only) -> mount /workspace (read-only), host api.example.com") ||
		!strings.Contains(r.stdout, `does not grant: host api.example.com`) {
		t.Fatalf("update: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r = runCLI(t, "", "doctor", cfg); !strings.Contains(r.stdout, "1.1.0: ok") {
		t.Fatalf("doctor after update: %s", r.stdout)
	}
	// 1.1.0 asks for a host the tool is not granted: it does not load.
	r = runCLI(t, "", "validate", cfg)
	if r.code != 2 || !strings.Contains(r.stderr, "Capabilities not granted") || !strings.Contains(r.stderr, "host api.example.com") {
		t.Fatalf("validate after update: %d\n%s", r.code, r.stderr)
	}
	// Pinned back to 1.0.0 by the reference, it loads again.
	w.writeConfig("acme/fs@1.0.0", workspaceMount, fmt.Sprintf("%q", w.pubKey))
	if r = runCLI(t, "", "tool", "install", cfg); r.code != 0 || !strings.Contains(r.stdout, "acme/fs 1.1.0 -> 1.0.0") {
		t.Fatalf("install 1.0.0 again: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r = runCLI(t, "", "validate", cfg); r.code != 0 {
		t.Fatalf("validate: %d %s", r.code, r.stderr)
	}

	// A deprecated version says so at install and in doctor, with its
	// successor.
	if r := w.publish("1.2.0", `}, "deprecated": {"message": "lists too slowly", "successor": "acme/fs@^2"`+"\n"+`, "x": {`); r.code == 0 {
		t.Fatal("a manifest with an unknown member was published")
	}
	if r := w.publishDeprecated("1.2.0"); r.code != 0 {
		t.Fatalf("publish 1.2.0: %s", r.stderr)
	}
	w.writeConfig("acme/fs@1.2.0", workspaceMount, fmt.Sprintf("%q", w.pubKey))
	if r = runCLI(t, "", "tool", "install", cfg); r.code != 0 || !strings.Contains(r.stdout, "DEPRECATED: lists too slowly (use acme/fs@^2)") {
		t.Fatalf("install of a deprecated version: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r = runCLI(t, "", "doctor", cfg); !strings.Contains(r.stdout, "1.2.0: DEPRECATED: lists too slowly (use acme/fs@^2)") {
		t.Fatalf("doctor with a deprecated pin: %s", r.stdout)
	}

	// The cached bytes changed: the host refuses to run them.
	sum := sha256.Sum256(w.module)
	cached := filepath.Join(w.dir, "cache", "registry", "sha256", hex.EncodeToString(sum[:]))
	os.Chmod(cached, 0o644)
	bad := append([]byte(nil), w.module...)
	bad[len(bad)-1] ^= 1
	os.WriteFile(cached, bad, 0o644)
	if r = runCLI(t, "", "tool", "verify", cfg); r.code != 1 || !strings.Contains(r.stdout, "BAD") {
		t.Fatalf("verify of changed bytes: %d %s", r.code, r.stdout)
	}
	if r = runCLI(t, "", "call", cfg, "ws.list", `{"path":"."}`); r.code == 0 || !strings.Contains(r.stderr, "sha256 mismatch") {
		t.Fatalf("call with changed bytes: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

func TestToolRegistryTrust(t *testing.T) {
	w := newRegistryWorld(t)
	if r := w.publish("1.0.0", ""); r.code != 0 {
		t.Fatal(r.stderr)
	}
	// Another publisher's key is trusted, not this one's.
	other := newRegistryWorld(t)
	w.writeConfig("acme/fs@1", workspaceMount, fmt.Sprintf("%q", other.pubKey))
	cfg := "--config=" + w.config
	r := runCLI(t, "", "tool", "install", cfg)
	if r.code == 0 || !strings.Contains(r.stderr, "not signed by a trusted key") || !strings.Contains(r.stderr, "allow_unsigned") {
		t.Fatalf("install from an untrusted signer: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "toolhost.lock")); err == nil {
		t.Fatal("a refused install wrote the lock")
	}
	// allow_unsigned: installed, loudly, and it runs.
	w.writeConfig("acme/fs@1", workspaceMount+"\n  allow_unsigned = true", fmt.Sprintf("%q", other.pubKey))
	r = runCLI(t, "", "tool", "install", cfg)
	if r.code != 0 || !strings.Contains(r.stderr, "WARNING: acme/fs@1.0.0 is not verified") {
		t.Fatalf("install with allow_unsigned: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r = runCLI(t, "", "validate", cfg); r.code != 0 {
		t.Fatalf("validate with allow_unsigned: %d %s", r.code, r.stderr)
	}
	// Without it again, the unsigned pin does not load.
	w.writeConfig("acme/fs@1", workspaceMount, fmt.Sprintf("%q", other.pubKey))
	if r = runCLI(t, "", "validate", cfg); r.code != 2 || !strings.Contains(r.stderr, "Unsigned tool") {
		t.Fatalf("validate of an unsigned pin: %d %s", r.code, r.stderr)
	}
	// sign and verify, as with minisign -S / -V.
	f := filepath.Join(w.dir, "pub", "notes.txt")
	os.WriteFile(f, []byte("release notes"), 0o644)
	if r = runCLI(t, "", "tool", "sign", "-k", w.key, f); r.code != 0 {
		t.Fatalf("sign: %s", r.stderr)
	}
	if r = runCLI(t, "", "tool", "verify", "-p", w.pub, f); r.code != 0 || !strings.Contains(r.stdout, "signed by trusted key") {
		t.Fatalf("verify: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r = runCLI(t, "", "tool", "verify", "-p", other.pub, f); r.code != 1 || !strings.Contains(r.stdout, "not trusted") {
		t.Fatalf("verify with another key: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// Bad references and blocks are reported at their attribute.
	w.writeConfig("Acme/FS", workspaceMount, fmt.Sprintf("%q", w.pubKey))
	if r = runCLI(t, "", "validate", cfg); r.code != 2 || !strings.Contains(r.stderr, "Invalid tool reference") || !strings.Contains(r.stderr, "line 21") {
		t.Fatalf("bad reference: %d %s", r.code, r.stderr)
	}
	w.writeConfig("acme/fs", workspaceMount, `"RWQnotakey"`)
	if r = runCLI(t, "", "validate", cfg); r.code != 2 || !strings.Contains(r.stderr, "Invalid public key") {
		t.Fatalf("bad key: %d %s", r.code, r.stderr)
	}
}

// TestToolRegistryOCI: a tool pushed to an OCI registry (a real one,
// in-process on 127.0.0.1) with `host tool publish --oci` installs and
// runs like one from a directory.
func TestToolRegistryOCI(t *testing.T) {
	srv := httptest.NewServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	oci := "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/tools"
	w := newRegistryWorld(t)
	w.publish("1.0.0", "") // writes the manifest; the directory registry is not used below
	r := runCLI(t, "", "tool", "publish", "-k", w.key, "--oci", oci, filepath.Join(w.dir, "pub", "fs-1.0.0.json"))
	if r.code != 0 || !strings.Contains(r.stdout, "published acme/fs@1.0.0 into "+oci) {
		t.Fatalf("publish --oci: %d %s %s", r.code, r.stdout, r.stderr)
	}
	w.writeConfig("acme/fs@^1", workspaceMount, fmt.Sprintf("%q", w.pubKey))
	cfgText, _ := os.ReadFile(w.config)
	os.WriteFile(w.config, []byte(strings.Replace(string(cfgText), `path = "./registry"`, fmt.Sprintf("url = %q", oci), 1)), 0o644)
	cfg := "--config=" + w.config
	if r = runCLI(t, "", "tool", "search", cfg); r.code != 0 || !strings.Contains(r.stdout, "acme/fs") {
		t.Fatalf("search: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r = runCLI(t, "", "tool", "install", cfg); r.code != 0 || !strings.Contains(r.stdout, "installed acme/fs@1.0.0") {
		t.Fatalf("install: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r = runCLI(t, "", "call", cfg, "ws.list", `{"path":"."}`); r.code != 0 || !strings.Contains(r.stdout, "hello.txt") {
		t.Fatalf("call: %d %s %s", r.code, r.stdout, r.stderr)
	}
}

// snapshot is the lockfile's bytes and the cache's file names.
func (w *registryWorld) snapshot() string {
	w.t.Helper()
	lock, _ := os.ReadFile(filepath.Join(w.dir, "toolhost.lock"))
	var files []string
	filepath.WalkDir(filepath.Join(w.dir, "cache", "registry"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	return string(lock) + "\n" + strings.Join(files, "\n")
}

// TestToolInstallBadInput: every bad input from a registry gets a clear
// error, and after each the cache and the lockfile are as they were.
func TestToolInstallBadInput(t *testing.T) {
	w := newRegistryWorld(t)
	if r := w.publish("1.0.0", ""); r.code != 0 {
		t.Fatal(r.stderr)
	}
	trusted := fmt.Sprintf("%q", w.pubKey)
	w.writeConfig("acme/fs@^1", workspaceMount, trusted)
	cfg := "--config=" + w.config
	if r := runCLI(t, "", "tool", "install", cfg); r.code != 0 {
		t.Fatal(r.stderr)
	}
	before := w.snapshot()
	other := newRegistryWorld(t)
	keyID := strings.TrimSpace(strings.TrimPrefix(strings.Split(runCLI(t, "", "tool", "info", "acme/fs@1.0.0", cfg).stdout, "trusted key ")[1][:16], ""))
	versionDir := filepath.Join(w.registry, "acme", "fs", "1.1.0")
	// 1.1.0's module differs from 1.0.0's (a custom section more), so that
	// installing it downloads.
	module2 := append(append([]byte(nil), w.module...), 0, 12, 11)
	module2 = append(module2, "toolhost-v2"...)
	// publishSigned puts a hand-written manifest (and the module) into the
	// registry as version 1.1.0, signed with key.
	publishSigned := func(t *testing.T, manifest, key string) {
		os.MkdirAll(versionDir, 0o755)
		mf := filepath.Join(versionDir, "manifest.json")
		os.WriteFile(mf, []byte(manifest), 0o644)
		os.WriteFile(filepath.Join(versionDir, "fs.wasm"), module2, 0o644)
		if r := runCLI(t, "", "tool", "sign", "-k", key, mf, filepath.Join(versionDir, "fs.wasm")); r.code != 0 {
			t.Fatal(r.stderr)
		}
		ix, _ := os.ReadFile(filepath.Join(w.registry, "index.json"))
		os.WriteFile(filepath.Join(w.registry, "index.json"), []byte(strings.Replace(string(ix), `"1.0.0"`, `"1.0.0", "1.1.0"`, 1)), 0o644)
	}
	sum := sha256.Sum256(module2)
	good := fmt.Sprintf(`{"manifest_version": 1, "id": "acme/fs", "version": "1.1.0", "description": "d", "license": "MIT", "kind": "wasm",
  "tool": "filesystem.list", "artifact": {"url": "fs.wasm", "sha256": %q, "size_bytes": %d},
  "capability_requirements": {"mounts": [{"guest_path": "/workspace", "read_only": true}]}, "limits": {}}`, hex.EncodeToString(sum[:]), len(module2))
	serve := func(t *testing.T, h http.HandlerFunc) string {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	cases := []struct {
		name  string
		setup func(t *testing.T) // changes the registry or the configuration
		ref   string
		want  string
	}{
		{"tampered artifact", func(t *testing.T) {
			publishSigned(t, good, w.key)
			bad := append([]byte(nil), module2...)
			bad[100] ^= 1
			os.WriteFile(filepath.Join(versionDir, "fs.wasm"), bad, 0o644)
		}, "acme/fs@1.1.0", "sha256 mismatch"},
		{"tampered manifest", func(t *testing.T) {
			publishSigned(t, good, w.key)
			os.WriteFile(filepath.Join(versionDir, "manifest.json"), []byte(strings.Replace(good, `"d"`, `"e"`, 1)), 0o644)
		}, "acme/fs@1.1.0", "does not verify"},
		{"wrong key", func(t *testing.T) { publishSigned(t, good, other.key) }, "acme/fs@1.1.0", "which is not trusted"},
		{"revoked key", func(t *testing.T) {
			publishSigned(t, good, w.key)
			w.writeConfig("acme/fs@^1", workspaceMount, trusted+"]\n  revoked = ["+fmt.Sprintf("%q", keyID))
		}, "acme/fs@1.1.0", "is revoked"},
		{"expired key", func(t *testing.T) {
			publishSigned(t, good, w.key)
			w.writeConfig("acme/fs@^1", workspaceMount, trusted+"]\n  expires = { "+fmt.Sprintf("%q", keyID)+` = "2001-01-01" }`+"\n  revoked = [")
		}, "acme/fs@1.1.0", ""},
		{"size mismatch", func(t *testing.T) {
			publishSigned(t, good, w.key)
			os.WriteFile(filepath.Join(versionDir, "fs.wasm"), append(append([]byte(nil), module2...), 0), 0o644)
		}, "acme/fs@1.1.0", "more than the"},
		{"manifest fails its schema", func(t *testing.T) {
			publishSigned(t, strings.Replace(good, `"license": "MIT"`, `"license": 7`, 1), w.key)
		}, "acme/fs@1.1.0", "invalid tool manifest"},
		{"path leaving the version", func(t *testing.T) {
			publishSigned(t, strings.Replace(good, `"url": "fs.wasm"`, `"url": "../1.0.0/fs-1.0.0.wasm"`, 1), w.key)
		}, "acme/fs@1.1.0", "invalid tool manifest"},
		{"version that does not exist", func(t *testing.T) {}, "acme/fs@1.9.9", `has no version that "1.9.9" allows (it has 1.0.0)`},
		{"registry down", func(t *testing.T) {
			w.writeConfig("acme/fs@^1", workspaceMount, trusted)
			b, _ := os.ReadFile(w.config)
			os.WriteFile(w.config, []byte(strings.Replace(string(b), `path = "./registry"`, `url = "http://127.0.0.1:1/"`, 1)), 0o644)
		}, "acme/fs@1.1.0", "connection refused"},
		{"registry answering garbage", func(t *testing.T) {
			u := serve(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html>not json") })
			b, _ := os.ReadFile(w.config)
			os.WriteFile(w.config, []byte(strings.Replace(string(b), `path = "./registry"`, fmt.Sprintf("url = %q", u), 1)), 0o644)
		}, "acme/fs@1.1.0", "index.json: invalid character"},
		{"registry with an endless body", func(t *testing.T) {
			u := serve(t, func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, `{"index_version": 1, "tools": {"acme/fs": {"description": "`)
				chunk := []byte(strings.Repeat("a", 64<<10))
				for i := 0; i < 1024; i++ { // 64 MiB, more than any index may have
					if _, err := w.Write(chunk); err != nil {
						return
					}
				}
			})
			b, _ := os.ReadFile(w.config)
			os.WriteFile(w.config, []byte(strings.Replace(string(b), `path = "./registry"`, fmt.Sprintf("url = %q", u), 1)), 0o644)
		}, "acme/fs@1.1.0", "more than"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			os.RemoveAll(versionDir)
			ix, _ := os.ReadFile(filepath.Join(w.registry, "index.json"))
			defer os.WriteFile(filepath.Join(w.registry, "index.json"), ix, 0o644)
			w.writeConfig("acme/fs@^1", workspaceMount, trusted)
			tc.setup(t)
			r := runCLI(t, "", "tool", "install", tc.ref, cfg)
			want := tc.want
			if tc.name == "expired key" {
				want = "which expired on 2001-01-01"
			}
			if r.code == 0 || !strings.Contains(r.stderr, want) {
				t.Fatalf("install: exit %d, stderr:\n%s\nwant %q", r.code, r.stderr, want)
			}
			if after := w.snapshot(); after != before {
				t.Fatalf("the lock or the cache changed:\nbefore: %s\nafter:  %s", before, after)
			}
		})
	}
	// A pin signed by a key revoked since: the tool no longer loads.
	w.writeConfig("acme/fs@^1", workspaceMount, trusted+"]\n  revoked = ["+fmt.Sprintf("%q", keyID))
	if r := runCLI(t, "", "validate", cfg); r.code != 2 || !strings.Contains(r.stderr, "Signer no longer trusted") || !strings.Contains(r.stderr, "is revoked") {
		t.Fatalf("validate with the signer revoked: %d %s", r.code, r.stderr)
	}
}

// TestToolRegistrySubprocess: a native plugin (the git example, built for
// this platform) published with one binary per os/arch installs the
// host's binary, pinned in the lock, and runs in the subprocess tier; a
// manifest without this platform says which platforms it has.
func TestToolRegistrySubprocess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the subprocess tier runs on Linux")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	w := newRegistryWorld(t)
	os.Chmod(filepath.Dir(w.dir), 0o755) // reachable by the uid plugins run as
	bin := filepath.Join(w.dir, "pub", "git-plugin")
	if out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, "../../examples/plugins/git").CombinedOutput(); err != nil {
		t.Fatalf("building the git plugin: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(bin)
	sum := sha256.Sum256(b)
	repo := filepath.Join(w.dir, "workspace")
	for _, args := range [][]string{{"init", "-q"}, {"add", "hello.txt"}, {"commit", "-q", "-m", "first commit"}} {
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=Ada", "-c", "user.email=ada@example.com"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	plat := runtime.GOOS + "/" + runtime.GOARCH
	manifest := func(version, platform string) string {
		mf := filepath.Join(w.dir, "pub", "git-"+version+".json")
		os.WriteFile(mf, []byte(fmt.Sprintf(`{"manifest_version": 1, "id": "acme/git", "version": %q,
  "description": "git history", "license": "MIT", "kind": "subprocess", "tool": "git_log",
  "artifacts": {%q: {"url": "git-plugin", "sha256": %q, "size_bytes": %d}},
  "capability_requirements": {"subprocess": true, "mounts": [{"guest_path": "/workspace", "read_only": true}]}, "limits": {}}`,
			version, platform, hex.EncodeToString(sum[:]), len(b))), 0o644)
		return mf
	}
	for _, v := range []struct{ version, platform string }{{"1.0.0", plat}, {"2.0.0", "freebsd/riscv64"}} {
		if r := runCLI(t, "", "tool", "publish", "-k", w.key, "-r", w.registry, manifest(v.version, v.platform)); r.code != 0 {
			t.Fatalf("publish: %s", r.stderr)
		}
	}
	cfg := fmt.Sprintf(`host {
  cache_dir = "./cache"
  log_level = "off"
}
registry "local" {
  path = "./registry"
}
trust {
  keys = [%q]
}
grants {
  capabilities = ["tool.exec.subprocess"]
  mount {
    path      = "./workspace"
    read_only = true
  }
}
tool "git_log" {
  tier = "read_only"
  subprocess {
    tool_ref = "acme/git@1"
  }
  mount {
    host_path  = "./workspace"
    guest_path = "/workspace"
    read_only  = true
  }
}
`, w.pubKey)
	os.WriteFile(w.config, []byte(cfg), 0o644)
	flag := "--config=" + w.config
	if r := runCLI(t, "", "tool", "install", "acme/git@2", flag); r.code == 0 || !strings.Contains(r.stderr, "has no binary for "+plat+"; it is built for freebsd/riscv64") {
		t.Fatalf("install of a version without this platform: %d %s", r.code, r.stderr)
	}
	if r := runCLI(t, "", "tool", "install", flag); r.code != 0 || !strings.Contains(r.stdout, "installed acme/git@1.0.0") {
		t.Fatalf("install: %d %s %s", r.code, r.stdout, r.stderr)
	}
	lock, _ := os.ReadFile(filepath.Join(w.dir, "toolhost.lock"))
	if !strings.Contains(string(lock), `"platform": "`+plat+`"`) {
		t.Fatalf("lock: %s", lock)
	}
	r := runCLI(t, "", "call", flag, "git_log", fmt.Sprintf(`{"repo":%q}`, repo))
	if r.code != 0 || !strings.Contains(r.stdout, "Ada: first commit") {
		t.Fatalf("call: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestLocalToolWithManifest: a tool shipped beside the application (path
// plus a manifest) follows a registry's rules: signatures by a trusted
// key, the manifest's size and sha256, the composition rule.
func TestLocalToolWithManifest(t *testing.T) {
	w := newRegistryWorld(t)
	tools := filepath.Join(w.dir, "tools")
	os.MkdirAll(tools, 0o755)
	art := filepath.Join(tools, "fs.wasm")
	os.WriteFile(art, w.module, 0o644)
	sum := sha256.Sum256(w.module)
	mf := filepath.Join(tools, "fs.json")
	writeManifest := func(extra string) {
		os.WriteFile(mf, []byte(fmt.Sprintf(`{"manifest_version": 1, "id": "app/fs", "version": "1.0.0", "description": "d", "license": "MIT",
  "kind": "wasm", "tool": "filesystem.list", "artifact": {"url": "fs.wasm", "sha256": %q, "size_bytes": %d},
  "capability_requirements": {"mounts": [{"guest_path": "/workspace", "read_only": true}]%s}, "limits": {}}`, hex.EncodeToString(sum[:]), len(w.module), extra)), 0o644)
		if r := runCLI(t, "", "tool", "sign", "-k", w.key, mf, art); r.code != 0 {
			t.Fatal(r.stderr)
		}
	}
	writeManifest("")
	config := func(extra string) {
		os.WriteFile(w.config, []byte(fmt.Sprintf(`host {
  workspace = "./workspace"
  cache_dir = "./cache"
  log_level = "off"
}
trust {
  keys = [%q]
}
grants {
  mount {
    path      = "./workspace"
    read_only = true
  }
}
tool "ws.list" {
  tier = "read_only"
  wasm {
    path     = "./tools/fs.wasm"
    manifest = "./tools/fs.json"
  }
%s
%s
}
`, w.pubKey, workspaceMount, extra)), 0o644)
	}
	config("")
	cfg := "--config=" + w.config
	if r := runCLI(t, "", "call", cfg, "ws.list", `{"path":"."}`); r.code != 0 || !strings.Contains(r.stdout, "hello.txt") {
		t.Fatalf("call: %d %s %s", r.code, r.stdout, r.stderr)
	}
	os.Remove(art + ".minisig")
	if r := runCLI(t, "", "validate", cfg); r.code != 2 || !strings.Contains(r.stderr, "Tool manifest refused") || !strings.Contains(r.stderr, "the artifact is not signed by a trusted") {
		t.Fatalf("unsigned artifact: %d %s", r.code, r.stderr)
	}
	config("  allow_unsigned = true")
	if r := runCLI(t, "", "validate", cfg); r.code != 0 {
		t.Fatalf("allow_unsigned: %d %s", r.code, r.stderr)
	}
	config("")
	writeManifest(`, "hosts": ["api.example.com"]`)
	if r := runCLI(t, "", "validate", cfg); r.code != 2 || !strings.Contains(r.stderr, "Capabilities not granted") {
		t.Fatalf("ungranted capability: %d %s", r.code, r.stderr)
	}
	writeManifest("")
	bad := append([]byte(nil), w.module...)
	bad[200] ^= 1
	os.WriteFile(art, bad, 0o644)
	if r := runCLI(t, "", "validate", cfg); r.code != 2 || !strings.Contains(r.stderr, "the manifest says") {
		t.Fatalf("changed artifact: %d %s", r.code, r.stderr)
	}
}
