package plugin

import (
	"bytes"
	"container/list"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// ErrArtifactNotFound is returned for an unknown or expired artifact ID.
var ErrArtifactNotFound = errors.New("artifact not found")

// ArtifactStore keeps full outputs and files that tools produce, so that a
// truncated result can point at the whole. Implementations must be safe for
// concurrent use.
type ArtifactStore interface {
	// Put stores data and returns its reference.
	Put(ctx context.Context, meta ArtifactMeta, data []byte) (ArtifactRef, error)
	// Open returns the artifact with the given ID.
	Open(ctx context.Context, id string) (ArtifactRef, io.ReadCloser, error)
}

// ArtifactMeta describes an artifact being stored.
type ArtifactMeta struct {
	Name     string
	MIMEType string
	CallID   string
	Tool     string
}

func newArtifactID() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return "art_" + hex.EncodeToString(b[:])
}

func validArtifactID(id string) bool {
	h, ok := strings.CutPrefix(id, "art_")
	if !ok || len(h) != 24 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}

// MemoryArtifacts is an in-memory ArtifactStore holding at most MaxBytes,
// dropping the oldest artifacts first.
type MemoryArtifacts struct {
	max   int64
	mu    sync.Mutex
	size  int64
	order *list.List // of *memArtifact, oldest first
	byID  map[string]*list.Element
}

type memArtifact struct {
	ref  ArtifactRef
	data []byte
}

// NewMemoryArtifacts returns a store that keeps up to maxBytes (64 MiB if
// maxBytes ≤ 0).
func NewMemoryArtifacts(maxBytes int64) *MemoryArtifacts {
	if maxBytes <= 0 {
		maxBytes = 64 << 20
	}
	return &MemoryArtifacts{max: maxBytes, order: list.New(), byID: map[string]*list.Element{}}
}

// Put implements ArtifactStore. An artifact larger than the whole store is refused.
func (m *MemoryArtifacts) Put(_ context.Context, meta ArtifactMeta, data []byte) (ArtifactRef, error) {
	if int64(len(data)) > m.max {
		return ArtifactRef{}, fmt.Errorf("artifact of %s exceeds the artifact store's %s", FormatSize(int64(len(data))), FormatSize(m.max))
	}
	ref := ArtifactRef{ID: newArtifactID(), Name: meta.Name, MIMEType: meta.MIMEType, Size: int64(len(data))}
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.size+ref.Size > m.max {
		old := m.order.Front()
		a := old.Value.(*memArtifact)
		m.order.Remove(old)
		delete(m.byID, a.ref.ID)
		m.size -= a.ref.Size
	}
	m.byID[ref.ID] = m.order.PushBack(&memArtifact{ref: ref, data: bytes.Clone(data)})
	m.size += ref.Size
	return ref, nil
}

// Open implements ArtifactStore.
func (m *MemoryArtifacts) Open(_ context.Context, id string) (ArtifactRef, io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.byID[id]
	if !ok {
		return ArtifactRef{}, nil, fmt.Errorf("%q: %w", id, ErrArtifactNotFound)
	}
	a := e.Value.(*memArtifact)
	return a.ref, io.NopCloser(bytes.NewReader(a.data)), nil
}

// DirArtifacts is an ArtifactStore in a directory, so that artifacts outlive
// the process (the CLI prints an ID that `host artifact ID` reads later).
// The directory is created 0700 and files 0600; artifacts older than MaxAge
// are removed when new ones are stored.
type DirArtifacts struct {
	dir    string
	maxAge time.Duration
	mu     sync.Mutex
	lastGC time.Time
}

// NewDirArtifacts returns a store in dir, keeping artifacts for maxAge
// (7 days if ≤ 0).
func NewDirArtifacts(dir string, maxAge time.Duration) (*DirArtifacts, error) {
	if maxAge <= 0 {
		maxAge = 7 * 24 * time.Hour
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("artifact store: %w", err)
	}
	return &DirArtifacts{dir: dir, maxAge: maxAge}, nil
}

// Put implements ArtifactStore.
func (d *DirArtifacts) Put(_ context.Context, meta ArtifactMeta, data []byte) (ArtifactRef, error) {
	d.gc()
	ref := ArtifactRef{ID: newArtifactID(), Name: meta.Name, MIMEType: meta.MIMEType, Size: int64(len(data))}
	mj, err := json.Marshal(ref)
	if err != nil {
		return ArtifactRef{}, err
	}
	base := filepath.Join(d.dir, ref.ID)
	if err := os.WriteFile(base+".data", data, 0o600); err != nil {
		return ArtifactRef{}, fmt.Errorf("artifact store: %w", err)
	}
	if err := os.WriteFile(base+".json", mj, 0o600); err != nil {
		os.Remove(base + ".data")
		return ArtifactRef{}, fmt.Errorf("artifact store: %w", err)
	}
	return ref, nil
}

// Open implements ArtifactStore.
func (d *DirArtifacts) Open(_ context.Context, id string) (ArtifactRef, io.ReadCloser, error) {
	if !validArtifactID(id) {
		return ArtifactRef{}, nil, fmt.Errorf("%q is not an artifact ID: %w", id, ErrArtifactNotFound)
	}
	base := filepath.Join(d.dir, id)
	mj, err := os.ReadFile(base + ".json")
	if errors.Is(err, os.ErrNotExist) {
		return ArtifactRef{}, nil, fmt.Errorf("%q: %w", id, ErrArtifactNotFound)
	} else if err != nil {
		return ArtifactRef{}, nil, err
	}
	var ref ArtifactRef
	if err := json.Unmarshal(mj, &ref); err != nil {
		return ArtifactRef{}, nil, fmt.Errorf("artifact %s: corrupt metadata: %v", id, err)
	}
	f, err := os.Open(base + ".data")
	if err != nil {
		return ArtifactRef{}, nil, err
	}
	return ref, f, nil
}

// gc removes expired artifacts, at most once a minute.
func (d *DirArtifacts) gc() {
	d.mu.Lock()
	if time.Since(d.lastGC) < time.Minute {
		d.mu.Unlock()
		return
	}
	d.lastGC = time.Now()
	d.mu.Unlock()
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return
	}
	cutoff := time.Now().Add(-d.maxAge)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "art_") {
			continue
		}
		if info, err := e.Info(); err == nil && info.ModTime().Before(cutoff) {
			os.Remove(filepath.Join(d.dir, e.Name()))
		}
	}
}
