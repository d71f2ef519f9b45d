// Package registry is how third parties ship tools to toolhost: signed,
// versioned manifests that name an artifact (a wasm module, or one native
// plugin binary per platform) by URL, size and sha256.
//
// A manifest (Manifest, schema in manifest.schema.json, published as
// docs/tool-manifest.schema.json) is one version of one tool. It travels
// with a minisign signature (internal/minisign), and its artifact with
// another; hosts verify both offline against the keys their configuration
// trusts. Tools are named by reference: "acme/ocr@1.2.0", "acme/ocr@^1.2"
// (ParseRef, Constraint).
//
// A Client resolves a reference against registries (a directory,
// DirSource, or an HTTPS base URL, HTTPSource; one layout, which Publish
// writes), verifies the manifest's and the artifact's signatures against
// trusted keys, and installs the artifact into a content-addressed Cache
// that never keeps a partial download. A Lock (toolhost.lock) pins each
// installed id; Lock.Lookup resolves a reference offline at start.
// Manifest.Ungranted is the composition rule. docs/registry.md says what
// is built and what is not (OCI sources).
package registry
