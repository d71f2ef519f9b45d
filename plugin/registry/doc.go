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
// This package reads and checks manifests and references. Fetching from a
// directory, HTTPS or OCI registry, the content-addressed cache and the
// lockfile build on it (docs/registry.md says what exists today).
package registry
