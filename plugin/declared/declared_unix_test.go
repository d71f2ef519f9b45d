//go:build unix

package declared_test

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/plugin/declared"
)

// A FIFO where a declared file should be is refused at once: opening it
// to read would otherwise wait for a writer that never comes.
func TestReadFileFIFO(t *testing.T) {
	root := t.TempDir()
	fifo := filepath.Join(root, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := declared.ReadFile(root, fifo, 100)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("ReadFile of a FIFO: %v, want not a regular file", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadFile of a FIFO without a writer did not return")
	}
}
