package plugin_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolhost/toolhost/plugin"
)

func TestTruncate(t *testing.T) {
	tests := []struct {
		name string
		s    string
		max  int
		// want is the whole output when not empty; otherwise the general
		// invariants are checked.
		want string
	}{
		{name: "fits", s: "hello", max: 5, want: "hello"},
		{name: "empty", s: "", max: 64, want: ""},
		{name: "max zero leaves it", s: "hello", max: 0, want: "hello"},
		{name: "negative max leaves it", s: "hello", max: -1, want: "hello"},
		{name: "one over", s: strings.Repeat("a", 101), max: 100},
		{name: "ascii", s: strings.Repeat("0123456789", 1000), max: 200,
			// marker budget: len("\n[... truncated  bytes ...]\n") + 5 digits = 33;
			// 167 left: head 133, tail 34.
			want: strings.Repeat("0123456789", 13) + "012\n[... truncated 9833 bytes ...]\n" + strings.Repeat("0123456789", 10)[66:]},
		{name: "4-byte runes", s: strings.Repeat("😀", 1000), max: 100},
		{name: "mixed runes", s: strings.Repeat("a€😀ñ", 500), max: 333},
		{name: "lines", s: strings.Repeat("a line of text\n", 200), max: 500},
		{name: "one long line", s: strings.Repeat("x", 5000) + "\n" + strings.Repeat("y", 5000), max: 1000},
		{name: "invalid UTF-8 stays safe", s: strings.Repeat("\xff\xfe", 500), max: 100},
		{name: "at 64", s: strings.Repeat("é", 10000), max: 64},
		{name: "tiny max", s: strings.Repeat("z", 1000), max: 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, omitted := plugin.Truncate(tc.s, tc.max)
			if tc.want != "" || len(tc.s) <= tc.max || tc.max <= 0 {
				if got != tc.want {
					t.Fatalf("Truncate =\n%q\nwant\n%q", got, tc.want)
				}
				if len(tc.s) <= tc.max || tc.max <= 0 {
					if omitted != 0 {
						t.Errorf("omitted = %d for an untouched string", omitted)
					}
					return
				}
			}
			checkTruncated(t, tc.s, got, tc.max, omitted)
		})
	}
	t.Run("head 80 %, tail 20 %", func(t *testing.T) {
		s := strings.Repeat("x", 100_000)
		got, _ := plugin.Truncate(s, 10_000)
		head, tail, _, err := parseTruncated(s, got)
		if err != nil {
			t.Fatal(err)
		}
		budget := 10_000 - len("\n[... truncated  bytes ...]\n") - len("100000")
		if len(head) != budget*8/10 || len(tail) != budget-budget*8/10 {
			t.Errorf("head %d, tail %d; want %d and %d", len(head), len(tail), budget*8/10, budget-budget*8/10)
		}
	})
	t.Run("cuts move to line ends", func(t *testing.T) {
		s := strings.Repeat("0123456789abcdef\n", 1000)
		got, _ := plugin.Truncate(s, 2000)
		head, tail, _, err := parseTruncated(s, got)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(head, "\n") || !strings.HasPrefix(tail, "0123") {
			t.Errorf("cuts split lines: head ends %q, tail starts %q", head[len(head)-5:], tail[:5])
		}
		if strings.Contains(got, "\n\n[...") {
			t.Error("an empty line before the marker")
		}
	})
}

// checkTruncated checks Truncate's promises: within max (when max ≥ 64),
// valid UTF-8 kept valid, and head + omitted + tail = the input.
func checkTruncated(t testing.TB, s, got string, max, omitted int) {
	t.Helper()
	if max >= 64 && len(got) > max {
		t.Fatalf("len %d > max %d", len(got), max)
	}
	if utf8.ValidString(s) && !utf8.ValidString(got) {
		t.Fatalf("valid UTF-8 in, invalid out: %q", got)
	}
	_, _, n, err := parseTruncated(s, got)
	if err != nil {
		t.Fatal(err)
	}
	if n != omitted {
		t.Fatalf("marker says %d, Truncate returned %d", n, omitted)
	}
}

func TestMemoryArtifacts(t *testing.T) {
	ctx := context.Background()
	m := plugin.NewMemoryArtifacts(100)
	data := []byte(strings.Repeat("a", 60))
	a, err := m.Put(ctx, plugin.ArtifactMeta{Name: "a.txt", MIMEType: "text/plain", CallID: "c1", Tool: "t"}, data)
	if err != nil {
		t.Fatal(err)
	}
	data[0] = 'X' // the store keeps its own copy
	if a.Name != "a.txt" || a.MIMEType != "text/plain" || a.Size != 60 || !strings.HasPrefix(a.ID, "art_") {
		t.Errorf("ref = %+v", a)
	}
	if got := readArtifact(t, m, a.ID); got != strings.Repeat("a", 60) {
		t.Errorf("artifact = %q", got)
	}
	b, err := m.Put(ctx, plugin.ArtifactMeta{}, []byte(strings.Repeat("b", 40)))
	if err != nil {
		t.Fatal(err)
	}
	if a.ID == b.ID {
		t.Fatal("two artifacts share an ID")
	}
	// 60 + 40 fill the store; one more byte evicts the oldest.
	c, err := m.Put(ctx, plugin.ArtifactMeta{}, []byte("c"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Open(ctx, a.ID); !errors.Is(err, plugin.ErrArtifactNotFound) {
		t.Errorf("oldest artifact not evicted: %v", err)
	}
	if readArtifact(t, m, b.ID) != strings.Repeat("b", 40) || readArtifact(t, m, c.ID) != "c" {
		t.Error("newer artifacts lost")
	}
	if _, err := m.Put(ctx, plugin.ArtifactMeta{}, make([]byte, 101)); err == nil {
		t.Error("an artifact larger than the store was kept")
	}
	if readArtifact(t, m, b.ID) == "" {
		t.Error("refusing an oversize artifact evicted others")
	}
	for _, id := range []string{"", "art_nope", "../" + b.ID, b.ID + "/"} {
		if _, _, err := m.Open(ctx, id); !errors.Is(err, plugin.ErrArtifactNotFound) {
			t.Errorf("Open(%q): %v", id, err)
		}
	}

	t.Run("concurrent", func(t *testing.T) {
		m := plugin.NewMemoryArtifacts(1 << 10)
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range 50 {
					want := fmt.Sprintf("%d-%d-%s", i, j, strings.Repeat("x", i*j%97))
					ref, err := m.Put(ctx, plugin.ArtifactMeta{}, []byte(want))
					if err != nil {
						t.Error(err)
						return
					}
					if _, rc, err := m.Open(ctx, ref.ID); err == nil {
						got, _ := io.ReadAll(rc)
						if string(got) != want {
							t.Errorf("got %q, want %q", got, want)
						}
					} else if !errors.Is(err, plugin.ErrArtifactNotFound) {
						t.Error(err)
					}
				}
			}()
		}
		wg.Wait()
	})
}

func readArtifact(t testing.TB, s plugin.ArtifactStore, id string) string {
	t.Helper()
	_, rc, err := s.Open(context.Background(), id)
	if err != nil {
		t.Fatalf("Open(%q): %v", id, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDirArtifacts(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	dir := filepath.Join(root, "store", "artifacts")
	d, err := plugin.NewDirArtifacts(dir, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789"), 1000)
	ref, err := d.Put(ctx, plugin.ArtifactMeta{Name: "out.txt", MIMEType: "text/plain"}, data)
	if err != nil {
		t.Fatal(err)
	}
	if got := readArtifact(t, d, ref.ID); got != string(data) {
		t.Errorf("artifact differs (%d bytes)", len(got))
	}
	got, rc, err := d.Open(ctx, ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if got != ref {
		t.Errorf("Open ref = %+v, Put ref = %+v", got, ref)
	}
	if runtime.GOOS != "windows" {
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("store dir mode %v, %v; want 0700", fi.Mode().Perm(), err)
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if fi, _ := e.Info(); fi.Mode().Perm() != 0o600 {
				t.Errorf("%s mode %v, want 0600", e.Name(), fi.Mode().Perm())
			}
		}
	}

	t.Run("outlives the store value", func(t *testing.T) {
		again, err := plugin.NewDirArtifacts(dir, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if readArtifact(t, again, ref.ID) != string(data) {
			t.Error("a new store on the same dir does not find the artifact")
		}
	})

	t.Run("hostile IDs", func(t *testing.T) {
		// Files a traversal would reach, shaped like artifacts.
		for _, p := range []string{filepath.Join(root, "store", "art_000000000000000000000000"), filepath.Join(root, "secret")} {
			os.WriteFile(p+".json", []byte(`{"id":"x","size":6}`), 0o600)
			os.WriteFile(p+".data", []byte("secret"), 0o600)
		}
		for _, id := range []string{
			"",
			"art_",
			"../art_000000000000000000000000",
			"art_../../secret",
			"art_000000000000000000000000/../../secret",
			"..%2fsecret",
			filepath.Join(root, "secret"),
			"art_00000000000000000000000g",
			"art_0000000000000000000000000", // 25 digits
			"ART_" + strings.TrimPrefix(ref.ID, "art_"),
			ref.ID + "\x00",
			ref.ID + ".data",
		} {
			if _, rc, err := d.Open(ctx, id); !errors.Is(err, plugin.ErrArtifactNotFound) {
				if rc != nil {
					rc.Close()
				}
				t.Errorf("Open(%q): err %v, want ErrArtifactNotFound", id, err)
			}
		}
		if _, _, err := d.Open(ctx, "art_0123456789abcdef01234567"); !errors.Is(err, plugin.ErrArtifactNotFound) {
			t.Errorf("well-formed unknown ID: %v", err)
		}
	})

	t.Run("corrupt metadata", func(t *testing.T) {
		ref, err := d.Put(ctx, plugin.ArtifactMeta{}, []byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, ref.ID+".json"), []byte("{"), 0o600)
		if _, _, err := d.Open(ctx, ref.ID); err == nil || !strings.Contains(err.Error(), "corrupt metadata") {
			t.Errorf("Open: %v", err)
		}
	})

	t.Run("expired artifacts are removed", func(t *testing.T) {
		dir := t.TempDir()
		d, err := plugin.NewDirArtifacts(dir, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		old, err := d.Put(ctx, plugin.ArtifactMeta{}, []byte("old"))
		if err != nil {
			t.Fatal(err)
		}
		past := time.Now().Add(-2 * time.Hour)
		for _, ext := range []string{".json", ".data"} {
			if err := os.Chtimes(filepath.Join(dir, old.ID+ext), past, past); err != nil {
				t.Fatal(err)
			}
		}
		os.WriteFile(filepath.Join(dir, "README"), []byte("not ours"), 0o600)
		os.Chtimes(filepath.Join(dir, "README"), past, past)
		// The store collects at most once a minute; a fresh store value
		// on the same directory collects on its first Put.
		d2, err := plugin.NewDirArtifacts(dir, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := d2.Put(ctx, plugin.ArtifactMeta{}, []byte("fresh"))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := d2.Open(ctx, old.ID); !errors.Is(err, plugin.ErrArtifactNotFound) {
			t.Errorf("expired artifact still there: %v", err)
		}
		if readArtifact(t, d2, fresh.ID) != "fresh" {
			t.Error("fresh artifact lost")
		}
		if _, err := os.Stat(filepath.Join(dir, "README")); err != nil {
			t.Error("the collector removed a file that is not an artifact")
		}
	})

	t.Run("as the host's store", func(t *testing.T) {
		h := newHost(t, plugin.Options{Artifacts: d})
		mustRegister(t, h, plugin.Spec{Name: "big", Limits: plugin.Limits{Preview: 100}}, fn(`{"type":"object"}`, func(context.Context, *plugin.Request) (*plugin.Result, error) {
			return textResult(string(data)), nil
		}))
		res, err := invoke(t, h, call("big", `{}`))
		if err != nil || res.Truncated == nil {
			t.Fatalf("err %v, truncated %+v", err, res.Truncated)
		}
		_, rc, err := h.Artifact(ctx, res.Truncated.ArtifactID)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		if b, _ := io.ReadAll(rc); !bytes.Equal(b, data) {
			t.Error("artifact differs from the output")
		}
	})
}
