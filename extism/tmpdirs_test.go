package extism

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestTmpDirs checks that a per-call directory is reused only as it was
// handed out, and removed otherwise.
func TestTmpDirs(t *testing.T) {
	p := &tmpDirs{base: t.TempDir()}
	exists := func(path string) bool {
		_, err := os.Stat(path)
		return err == nil
	}
	cycle := func(touch func(d *tmpDir)) (first, second string) {
		t.Helper()
		d, err := p.get()
		if err != nil {
			t.Fatal(err)
		}
		first = d.path
		if touch != nil {
			time.Sleep(20 * time.Millisecond) // past the file system's clock tick
			touch(d)
		}
		if err := p.put(d); err != nil {
			t.Fatal(err)
		}
		d2, err := p.get()
		if err != nil {
			t.Fatal(err)
		}
		defer p.put(d2)
		return first, d2.path
	}

	if a, b := cycle(nil); a != b {
		t.Errorf("an untouched directory was not reused: %s, then %s", a, b)
	}
	touches := map[string]func(d *tmpDir){
		"a file left":        func(d *tmpDir) { os.WriteFile(filepath.Join(d.path, "left"), []byte("state"), 0o600) },
		"a directory left":   func(d *tmpDir) { os.Mkdir(filepath.Join(d.path, "sub"), 0o700) },
		"created, removed":   func(d *tmpDir) { f := filepath.Join(d.path, "x"); os.WriteFile(f, nil, 0o600); os.Remove(f) },
		"permissions change": func(d *tmpDir) { os.Chmod(d.path, 0o755) },
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

	d, err := p.get()
	if err != nil {
		t.Fatal(err)
	}
	p.put(d)
	p.close()
	if exists(d.path) {
		t.Errorf("close left %s", d.path)
	}
	d2, err := p.get()
	if err != nil {
		t.Fatal(err)
	}
	p.put(d2)
	if exists(d2.path) {
		t.Errorf("a directory put after close was kept: %s", d2.path)
	}
}
