package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

const wasmManifest = `{
  "manifest_version": 1,
  "id": "acme/ocr",
  "version": "1.2.0",
  "displayName": "Optical character recognition",
  "description": "Extracts text from images.",
  "license": "Apache-2.0",
  "kind": "wasm",
  "artifact": {"url": "ocr-1.2.0.wasm", "sha256": "` + sha + `", "size_bytes": 2400000},
  "capability_requirements": {"mounts": [{"guest_path": "/workspace", "read_only": true}], "hosts": ["api.example.com:443"], "secrets": ["OCR_KEY"]},
  "wasi_imports": ["wasi_snapshot_preview1", "extism:host/env"],
  "limits": {"memory": "128MiB", "timeout": "20s", "fuel": 5000000000},
  "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
  "output_schema": {"type": "object"},
  "model_dependencies": [{"id": "glm-ocr-1.5-q8", "sha256": "` + sha + `"}],
  "validated_at": "2026-11-24",
  "validated_by": "acme release team"
}`

const sha = "9f2c7a3d55b0e1f6c2a4d8e9b1c3f5a7d9e1b3c5a7f9d1e3b5c7a9f1d3e5b7c9"

func TestParseManifest(t *testing.T) {
	m, err := ParseManifest([]byte(wasmManifest))
	if err != nil {
		t.Fatal(err)
	}
	if m.Ref() != "acme/ocr@1.2.0" || m.Artifact.SizeBytes != 2400000 || m.Requires.Mounts[0].GuestPath != "/workspace" || m.Limits.Fuel != 5e9 {
		t.Fatalf("parsed %+v", m)
	}
	a, err := m.ArtifactFor("windows", "arm64")
	if err != nil || a.URL != "ocr-1.2.0.wasm" {
		t.Fatalf("a wasm module serves every platform: %v %v", a, err)
	}

	sub := strings.Replace(wasmManifest, `"kind": "wasm",
  "artifact": {"url": "ocr-1.2.0.wasm", "sha256": "`+sha+`", "size_bytes": 2400000},`, `"kind": "subprocess",
  "artifacts": {"linux/amd64": {"url": "bin/linux-amd64/ocr", "sha256": "`+sha+`", "size_bytes": 9000000},
                "darwin/arm64": {"url": "https://cdn.example.com/ocr/darwin-arm64/ocr", "sha256": "`+sha+`", "size_bytes": 9100000}},`, 1)
	m, err = ParseManifest([]byte(sub))
	if err != nil {
		t.Fatal(err)
	}
	if a, err := m.ArtifactFor("linux", "amd64"); err != nil || a.URL != "bin/linux-amd64/ocr" {
		t.Fatalf("linux/amd64: %v %v", a, err)
	}
	_, err = m.ArtifactFor("linux", "arm64")
	if err == nil || !strings.Contains(err.Error(), "no binary for linux/arm64; it is built for darwin/arm64, linux/amd64") {
		t.Fatalf("missing platform: %v", err)
	}
}

func TestBadManifests(t *testing.T) {
	edit := func(old, new string) string {
		if !strings.Contains(wasmManifest, old) {
			t.Fatalf("test bug: %q not in the manifest", old)
		}
		return strings.Replace(wasmManifest, old, new, 1)
	}
	cases := []struct {
		name, doc, want string
	}{
		{"not JSON", `{"id":`, ""},
		{"parent directory", edit(`"ocr-1.2.0.wasm"`, `"../../etc/passwd"`), `".." would leave the registry`},
		{"hidden parent", edit(`"ocr-1.2.0.wasm"`, `"tools/../../x.wasm"`), `".." would leave the registry`},
		{"absolute path", edit(`"ocr-1.2.0.wasm"`, `"/etc/passwd"`), "absolute path"},
		{"plain http", edit(`"ocr-1.2.0.wasm"`, `"http://cdn.example.com/ocr.wasm"`), "want an https URL"},
		{"file URL", edit(`"ocr-1.2.0.wasm"`, `"file:///etc/passwd"`), "want an https URL"},
		{"credentials", edit(`"ocr-1.2.0.wasm"`, `"https://user:pw@cdn.example.com/x"`), "credentials"},
		{"backslash", edit(`"ocr-1.2.0.wasm"`, `"..\\\\x.wasm"`), "backslash"},
		{"upper-case sha", edit(`"sha256": "`+sha+`", "size_bytes": 2400000`, `"sha256": "`+strings.ToUpper(sha)+`", "size_bytes": 2400000`), "artifact.sha256"},
		{"zero size", edit(`"size_bytes": 2400000`, `"size_bytes": 0`), "size_bytes"},
		{"huge size", edit(`"size_bytes": 2400000`, `"size_bytes": 4294967296`), "size_bytes"},
		{"v prefix", edit(`"version": "1.2.0"`, `"version": "v1.2.0"`), "version"},
		{"two-part version", edit(`"version": "1.2.0"`, `"version": "1.2"`), "version"},
		{"upper-case id", edit(`"id": "acme/ocr"`, `"id": "Acme/OCR"`), "id"},
		{"id without publisher", edit(`"id": "acme/ocr"`, `"id": "ocr"`), "id"},
		{"unknown field", edit(`"license"`, `"licence": "MIT", "license"`), "licence"},
		{"wasm with per-platform artifacts", edit(`"kind": "wasm",`, `"kind": "wasm", "artifacts": {"linux/amd64": {"url": "x", "sha256": "`+sha+`", "size_bytes": 1}},`), "kind wasm takes artifact"},
		{"subprocess with one artifact", edit(`"kind": "wasm"`, `"kind": "subprocess"`), "kind subprocess needs artifacts"},
		{"unknown platform", edit(`"kind": "wasm",
  "artifact": {"url": "ocr-1.2.0.wasm", "sha256": "`+sha+`", "size_bytes": 2400000},`, `"kind": "subprocess", "artifacts": {"plan9/mips": {"url": "x", "sha256": "`+sha+`", "size_bytes": 1}},`), "plan9/mips"},
		{"bad host rule", edit(`"api.example.com:443"`, `"api.example.com:99999"`), "capability_requirements.hosts[0]"},
		{"mount at /", edit(`"guest_path": "/workspace"`, `"guest_path": "/"`), "guest_path"},
		{"mount not clean", edit(`"guest_path": "/workspace"`, `"guest_path": "/a/../b"`), "guest_path"},
		{"bad memory", edit(`"memory": "128MiB"`, `"memory": "lots"`), "limits.memory"},
		{"bad timeout", edit(`"timeout": "20s"`, `"timeout": "-1s"`), "limits.timeout"},
		{"bad input schema", edit(`"input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}`, `"input_schema": {"type": "object", "properties": {"path": {"type": 7}}}`), "input_schema"},
		{"raw export without schema", edit(`"input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},`, `"export": "count_vowels",`), "export (raw mode) needs input_schema"},
		{"bad successor", edit(`"validated_by": "acme release team"`, `"validated_by": "x", "deprecated": {"message": "use ocr2", "successor": "OCR2@^2"}`), "deprecated.successor"},
		{"deprecated without message", edit(`"validated_by": "acme release team"`, `"validated_by": "x", "deprecated": {"successor": "acme/ocr2@^2"}`), "message"},
		{"manifest version 2", edit(`"manifest_version": 1`, `"manifest_version": 2`), "manifest_version"},
		{"too large", wasmManifest + strings.Repeat(" ", MaxManifestSize), "more than"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseManifest([]byte(tc.doc))
			if !errors.Is(err, ErrInvalidManifest) {
				t.Fatalf("err = %v, want ErrInvalidManifest", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

// TestPublishedSchema: docs/tool-manifest.schema.json is the schema the
// code checks manifests against.
func TestPublishedSchema(t *testing.T) {
	b, err := os.ReadFile("../../docs/tool-manifest.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, ManifestSchema()) {
		t.Fatal("docs/tool-manifest.schema.json differs from plugin/registry/manifest.schema.json: copy it over")
	}
}

func TestRefs(t *testing.T) {
	versions := []string{"0.1.0", "0.1.5", "0.2.0", "1.0.0", "1.2.0", "1.2.7", "1.3.0-beta.1", "1.9.3", "2.0.0", "2.1.0-rc.1"}
	cases := []struct {
		ref, best string // best "" = none
	}{
		{"acme/ocr", "2.0.0"},
		{"acme/ocr@latest", "2.0.0"},
		{"acme/ocr@*", "2.0.0"},
		{"acme/ocr@1.2.0", "1.2.0"},
		{"acme/ocr@1.3.0-beta.1", "1.3.0-beta.1"},
		{"acme/ocr@^1.2", "1.9.3"},
		{"acme/ocr@^1", "1.9.3"},
		{"acme/ocr@^0.1", "0.1.5"},
		{"acme/ocr@^0.1.2", "0.1.5"},
		{"acme/ocr@^0.0.3", ""},
		{"acme/ocr@~1.2", "1.2.7"},
		{"acme/ocr@~1.2.3", "1.2.7"},
		{"acme/ocr@~1", "1.9.3"},
		{"acme/ocr@1.2", "1.2.7"},
		{"acme/ocr@1", "1.9.3"},
		{"acme/ocr@>=1.2.0 <1.9.0", "1.2.7"},
		{"acme/ocr@>=1.2.0,<1.9.0", "1.2.7"},
		{"acme/ocr@>1.2.7", "2.0.0"},
		{"acme/ocr@<=1.0.0", "1.0.0"},
		{"acme/ocr@^3", ""},
		{"acme/ocr@4.0.0", ""},
	}
	for _, tc := range cases {
		r, err := ParseRef(tc.ref)
		if err != nil {
			t.Errorf("%s: %v", tc.ref, err)
			continue
		}
		if r.String() != tc.ref {
			t.Errorf("%s: String = %q", tc.ref, r.String())
		}
		got, ok := r.Constraint.Best(versions)
		if got != tc.best || ok != (tc.best != "") {
			t.Errorf("%s: best %q, want %q", tc.ref, got, tc.best)
		}
	}
	for _, bad := range []string{"", "ocr", "Acme/ocr", "acme/ocr@", "acme/ocr@^", "acme/ocr@^x", "acme/ocr@1.2.3.4", "acme/ocr@!1", "acme/ocr@>=1.2.0-rc.1", "../x@1.0.0", "acme/ocr@1.0.0@2"} {
		if bad == "acme/ocr@" {
			continue // empty constraint: any release
		}
		if _, err := ParseRef(bad); err == nil {
			t.Errorf("ParseRef(%q) succeeded", bad)
		}
	}
}

// FuzzParseManifest: a manifest from a registry is untrusted input. The
// parser never panics, and what it accepts survives a round trip.
func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(wasmManifest))
	f.Add([]byte(`{"manifest_version":1,"id":"a/b","version":"0.0.1","description":"d","license":"MIT","kind":"subprocess","artifacts":{"linux/amd64":{"url":"x","sha256":"` + sha + `","size_bytes":1}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest(b)
		if err != nil {
			return
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseManifest(out); err != nil {
			t.Fatalf("accepted %s, but not its re-encoding %s: %v", b, out, err)
		}
		for _, d := range []string{"linux/amd64", "darwin/arm64"} {
			goos, goarch, _ := strings.Cut(d, "/")
			if a, err := m.ArtifactFor(goos, goarch); err == nil && checkURL(a.URL) != nil {
				t.Fatalf("artifact URL %q passed the parser but not checkURL", a.URL)
			}
		}
	})
}
