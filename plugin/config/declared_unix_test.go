//go:build unix

package config_test

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/toolhost/toolhost/plugin/config"
)

// A FIFO named as a declared file is refused at its path when the
// configuration loads, instead of hanging the load on a writer that never
// comes.
func TestDeclaredFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, block := range []string{
		`resource "test://r" { path = "./fifo" }`,
		"prompt \"p\" {\n  message {\n    role = \"user\"\n    image { path = \"./fifo\" }\n  }\n}\n",
	} {
		done := make(chan hcl.Diagnostics, 1)
		go func() {
			_, diags := config.NewParser().Parse([]byte(block), filepath.Join(dir, "config.hcl"))
			done <- diags
		}()
		select {
		case diags := <-done:
			if len(diags) != 1 || diags[0].Summary != "Cannot read file" || !strings.Contains(diags[0].Detail, "not a regular file") {
				t.Errorf("%s: got %v, want one Cannot read file: not a regular file", block, diags)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: loading a configuration naming a FIFO did not return", block)
		}
	}
}
