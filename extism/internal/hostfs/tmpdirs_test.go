package hostfs

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestTmpDirs checks that a per-call directory is reused only as it was
// handed out, and removed otherwise.
func TestTmpDirs(t *testing.T) {
	p := &TmpDirs{Base: t.TempDir()}
	exists := func(path string) bool {
		_, err := os.Stat(path)
		return err == nil
	}
	cycle := func(touch func(d *TmpDir)) (first, second string) {
		t.Helper()
		d, err := p.Get()
		if err != nil {
			t.Fatal(err)
		}
		first = d.path
		if touch != nil {
			time.Sleep(20 * time.Millisecond) // past the file system's clock tick
			touch(d)
		}
		if err := p.Put(d); err != nil {
			t.Fatal(err)
		}
		d2, err := p.Get()
		if err != nil {
			t.Fatal(err)
		}
		defer p.Put(d2)
		return first, d2.path
	}

	if a, b := cycle(nil); a != b {
		t.Errorf("an untouched directory was not reused: %s, then %s", a, b)
	}
	touches := map[string]func(d *TmpDir){
		"a file left":        func(d *TmpDir) { os.WriteFile(filepath.Join(d.path, "left"), []byte("state"), 0o600) },
		"a directory left":   func(d *TmpDir) { os.Mkdir(filepath.Join(d.path, "sub"), 0o700) },
		"created, removed":   func(d *TmpDir) { f := filepath.Join(d.path, "x"); os.WriteFile(f, nil, 0o600); os.Remove(f) },
		"permissions change": func(d *TmpDir) { os.Chmod(d.path, 0o755) },
	}
	for name, touch := range touches {
		a, b := cycle(touch)
		if a == b {
			t.Errorf("%s: the directory was reused", name)
		}
		if exists(a) {
			t.Errorf("%s: the directory %s was not removed", name, a)
		}
	}

	d, err := p.Get()
	if err != nil {
		t.Fatal(err)
	}
	p.Put(d)
	p.Close()
	if exists(d.path) {
		t.Errorf("close left %s", d.path)
	}
	d2, err := p.Get()
	if err != nil {
		t.Fatal(err)
	}
	p.Put(d2)
	if exists(d2.path) {
		t.Errorf("a directory put after close was kept: %s", d2.path)
	}
}
