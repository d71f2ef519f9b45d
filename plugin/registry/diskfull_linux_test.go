package registry

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestInstallDiskFull: a download that fills the disk is an error naming
// it, and leaves nothing in the cache (a 64 KiB tmpfs holds the cache; the
// artifact is 256 KiB).
func TestInstallDiskFull(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("cannot mount a small tmpfs here (%v): the disk-full case is not exercised", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	p := newPublisher(t)
	p.publish("acme/big", "1.0.0", bytes.Repeat([]byte("x"), 256<<10), "")
	c := p.client()
	c.Cache = &Cache{Dir: dir}
	ctx := context.Background()
	res, err := c.Resolve(ctx, mustRef(t, "acme/big"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Install(ctx, res, Options{})
	if err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("err = %v", err)
	}
	for _, sub := range []string{"sha256", "tmp"} {
		if ents, _ := os.ReadDir(filepath.Join(dir, sub)); len(ents) != 0 {
			t.Fatalf("%s holds %d files after the failure", sub, len(ents))
		}
	}
}
