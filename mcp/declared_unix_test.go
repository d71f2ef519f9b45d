//go:build unix

package mcp_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A resource file replaced after loading by a FIFO is refused at read
// time, at once (opening it to read would wait for a writer), and the
// server goes on serving.
func TestServerResourceFIFOSwap(t *testing.T) {
	dir := t.TempDir()
	cs := declaredSession(t, declaredOptions(t, dir), clientOptions{})
	w := filepath.Join(dir, "watched.txt")
	if err := os.Remove(w); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(w, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "docs://watched"})
	if ctx.Err() != nil {
		t.Fatal("reading a resource whose file is now a FIFO did not return")
	}
	if err == nil {
		t.Fatalf("read a FIFO: %+v", res)
	}
	if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "docs://readme"}); err != nil {
		t.Errorf("the server stopped serving: %v", err)
	}
}
