package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/toolhost/toolhost/internal/atomicfile"
)

// LockFileName is the lockfile's name, beside the configuration file.
const LockFileName = "toolhost.lock"

// Lock pins every installed tool: the version a reference resolved to,
// the digests of its manifest and artifact, and who signed them. The host
// runs a tool by reference only as its lock says, and only if the cached
// bytes still have the pinned digest.
type Lock struct {
	LockVersion int                   `json:"lock_version"`
	Tools       map[string]LockedTool `json:"tools"`
}

// LockedTool is one pinned tool id.
type LockedTool struct {
	Version  string `json:"version"`
	Kind     string `json:"kind"`
	Registry string `json:"registry"`
	// ManifestSHA256 is the digest of the manifest as signed (kept in the
	// cache beside the artifact).
	ManifestSHA256 string `json:"manifest_sha256"`
	// Platform is the os/arch of a subprocess tool's binary.
	Platform  string `json:"platform,omitempty"`
	SHA256    string `json:"sha256"`
	SizeBytes int64  `json:"size_bytes"`
	// Signer is the key ID that signed the manifest; empty when the
	// operator allowed an unsigned tool (Unsigned is then true).
	Signer   string `json:"signer,omitempty"`
	Unsigned bool   `json:"unsigned,omitempty"`
}

// ReadLock reads a lockfile; a missing file is an empty lock.
func ReadLock(name string) (*Lock, error) {
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return &Lock{LockVersion: 1, Tools: map[string]LockedTool{}}, nil
	}
	if err != nil {
		return nil, err
	}
	var l Lock
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if l.LockVersion != 1 {
		return nil, fmt.Errorf("%s: lock_version %d, this host reads 1", name, l.LockVersion)
	}
	for id, t := range l.Tools {
		if !idPattern.MatchString(id) || !versionPattern.MatchString(t.Version) || !isDigest(t.SHA256) || !isDigest(t.ManifestSHA256) {
			return nil, fmt.Errorf("%s: the entry for %q is malformed", name, id)
		}
	}
	if l.Tools == nil {
		l.Tools = map[string]LockedTool{}
	}
	return &l, nil
}

func isDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Write writes the lock atomically (keys sorted, so diffs stay small).
func (l *Lock) Write(name string) error {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	return atomicfile.WriteFile(name, b, atomicfile.Options{Perm: 0o644})
}

// Pin records an installed tool.
func (l *Lock) Pin(in *Installed) {
	l.Tools[in.Manifest.ID] = LockedTool{
		Version:        in.Manifest.Version,
		Kind:           in.Manifest.Kind,
		Registry:       in.Source.Name(),
		ManifestSHA256: in.ManifestSHA256,
		Platform:       in.Platform,
		SHA256:         in.Artifact.SHA256,
		SizeBytes:      in.Artifact.SizeBytes,
		Signer:         in.Signer,
		Unsigned:       in.Signer == "" || in.ArtifactUnsigned != "",
	}
}

// Locked is a tool reference resolved through the lock and the cache,
// ready to load.
type Locked struct {
	LockedTool
	Manifest     *Manifest
	ArtifactPath string
}

// ErrNotLocked is wrapped by Lookup's error for a reference the lock does
// not pin, or pins at a version the reference no longer allows.
var ErrNotLocked = errors.New("not locked")

// Lookup resolves ref offline: the lock's pin, which ref must allow, and
// the cached manifest and artifact, whose digests must match the pin.
// goos/goarch must be the pinned platform for a subprocess tool.
func (l *Lock) Lookup(ref Ref, cache *Cache, goos, goarch string) (*Locked, error) {
	t, ok := l.Tools[ref.ID]
	if !ok {
		return nil, fmt.Errorf("%s is %w in %s: run `host tool install %s`", ref, ErrNotLocked, LockFileName, ref)
	}
	if !ref.Constraint.Allows(t.Version) {
		return nil, fmt.Errorf("%s pins %s@%s, which %q does not allow (%w at an allowed version): run `host tool update %s`", LockFileName, ref.ID, t.Version, ref.Constraint.String(), ErrNotLocked, ref.ID)
	}
	if t.Platform != "" && t.Platform != goos+"/"+goarch {
		return nil, fmt.Errorf("%s pins the %s binary of %s@%s; this host is %s/%s: run `host tool install %s` here", LockFileName, t.Platform, ref.ID, t.Version, goos, goarch, ref)
	}
	raw, err := os.ReadFile(cache.Path(t.ManifestSHA256))
	if err != nil {
		return nil, fmt.Errorf("%s@%s: its manifest is missing from the cache (%s): run `host tool install %s`", ref.ID, t.Version, cache.Dir, ref)
	}
	if got := sha256Hex(raw); got != t.ManifestSHA256 {
		return nil, fmt.Errorf("%s@%s: the cached manifest has sha256 %s, %s pins %s; refusing it", ref.ID, t.Version, got, LockFileName, t.ManifestSHA256)
	}
	m, err := ParseManifest(raw)
	if err != nil {
		return nil, err
	}
	if !cache.Has(t.SHA256, t.SizeBytes) {
		return nil, fmt.Errorf("%s@%s: its artifact is missing from the cache (%s): run `host tool install %s`", ref.ID, t.Version, cache.Dir, ref)
	}
	// The artifact's bytes are checked by the adapter that loads it,
	// against t.SHA256 (a pinned sha256 on the source).
	return &Locked{LockedTool: t, Manifest: m, ArtifactPath: cache.Path(t.SHA256)}, nil
}
