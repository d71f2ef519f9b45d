package extism

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/plugin"
)

// mountSpec is a hostile-guest tool with dir mounted at /workspace.
func mountSpec(tool, dir string, readOnly bool) plugin.Spec {
	sp := guestSpec("hostile", tool)
	sp.Capabilities.Mounts = []plugin.Mount{{HostPath: dir, GuestPath: "/workspace", ReadOnly: readOnly}}
	return sp
}

func TestMounts(t *testing.T) {
	outside := t.TempDir()
	secretFile := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secretFile, []byte("outside the mount"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello from the workspace"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secretFile, filepath.Join(ws, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "sub", "dirlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../hello.txt", filepath.Join(ws, "sub", "inside")); err != nil {
		t.Fatal(err)
	}

	ro := mountSpec("read", ws, true)
	readTool := load(t, ro)
	read := func(t *testing.T, path string) map[string]any {
		t.Helper()
		res, err := call(t, readTool, &ro, map[string]any{"path": path}, nil)
		if err != nil {
			t.Fatalf("read %s: %v", path, err)
		}
		return structured(t, res)
	}

	t.Run("reads inside the mount", func(t *testing.T) {
		if got := read(t, "/workspace/hello.txt")["content"]; got != "hello from the workspace" {
			t.Fatalf("content = %v", got)
		}
		if got := read(t, "/workspace/sub/inside")["content"]; got != "hello from the workspace" {
			t.Fatalf("symlink within the mount: content = %v", got)
		}
	})
	for _, path := range []string{
		"/workspace/../../etc/passwd",
		"../../etc/passwd",
		"/workspace/sub/../../etc/passwd",
		"/etc/passwd",
		secretFile,
		"/workspace/escape",
		"/workspace/sub/dirlink/secret.txt",
		"/workspace/" + strings.Repeat("../", 20) + strings.TrimPrefix(secretFile, "/"),
	} {
		t.Run("escape "+path, func(t *testing.T) {
			m := read(t, path)
			if c, ok := m["content"]; ok {
				t.Fatalf("read %s: got %q, want an error", path, c)
			}
		})
	}
	t.Run("read-only mount refuses writes", func(t *testing.T) {
		sp := mountSpec("write", ws, true)
		res, err := call(t, load(t, sp), &sp, map[string]any{"path": "/workspace/new.txt", "data": "x"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := structured(t, res)["error"]; !ok {
			t.Fatal("write to a read-only mount succeeded")
		}
		if _, err := os.Stat(filepath.Join(ws, "new.txt")); err == nil {
			t.Fatal("file appeared in the read-only mount")
		}
	})
	t.Run("read-write mount", func(t *testing.T) {
		rw := t.TempDir()
		sp := mountSpec("write", rw, false)
		w := load(t, sp)
		res, err := call(t, w, &sp, map[string]any{"path": "/workspace/out.txt", "data": "written by the guest"}, nil)
		if err != nil || structured(t, res)["ok"] != "written" {
			t.Fatalf("write: %v %s", err, res.TextContent())
		}
		b, err := os.ReadFile(filepath.Join(rw, "out.txt"))
		if err != nil || string(b) != "written by the guest" {
			t.Fatalf("host sees %q, %v", b, err)
		}
		// Writing through a symlink that leads out of the mount fails.
		if err := os.Symlink(outside, filepath.Join(rw, "out")); err != nil {
			t.Fatal(err)
		}
		res, err = call(t, w, &sp, map[string]any{"path": "/workspace/out/planted.txt", "data": "x"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := structured(t, res)["error"]; !ok {
			t.Fatal("write through an escaping symlink succeeded")
		}
		if _, err := os.Stat(filepath.Join(outside, "planted.txt")); err == nil {
			t.Fatal("guest planted a file outside its mount")
		}
	})
	t.Run("lists a directory", func(t *testing.T) {
		sp := mountSpec("list", ws, true)
		res, err := call(t, load(t, sp), &sp, map[string]any{"path": "/workspace"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		names, _ := structured(t, res)["names"].([]any)
		if len(names) != 3 {
			t.Fatalf("names = %v, want escape, hello.txt, sub", names)
		}
	})
	t.Run("file_bytes_read limit", func(t *testing.T) {
		big := t.TempDir()
		if err := os.WriteFile(filepath.Join(big, "big.bin"), make([]byte, 256<<10), 0o644); err != nil {
			t.Fatal(err)
		}
		sp := mountSpec("read", big, true)
		sp.Limits.FileBytesRead = 64 << 10
		tool := load(t, sp)
		_, err := call(t, tool, &sp, map[string]any{"path": "/workspace/big.bin"}, nil)
		wantLimit(t, err, "file_bytes_read")
		if got := read(t, "/workspace/hello.txt")["content"]; got != "hello from the workspace" {
			t.Fatalf("after the limit: content = %v", got)
		}
	})
	t.Run("no mounts, no files", func(t *testing.T) {
		sp := guestSpec("hostile", "read")
		res, err := call(t, load(t, sp), &sp, map[string]any{"path": "/workspace/hello.txt"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := structured(t, res)["content"]; ok {
			t.Fatal("a tool without mounts read a host file")
		}
	})
}
