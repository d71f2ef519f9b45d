package mounts

import (
	"errors"
	"io/fs"
	"path"
	"strings"
	"syscall"
	"testing"
)

func TestResolve(t *testing.T) {
	s := New("/workspace", "/tmp", "/data/kb")
	tests := []struct {
		in, abs, display, code string
	}{
		{in: "", abs: "/workspace", display: "."},
		{in: ".", abs: "/workspace", display: "."},
		{in: "a/b.txt", abs: "/workspace/a/b.txt", display: "a/b.txt"},
		{in: "a/../b.txt", abs: "/workspace/b.txt", display: "b.txt"},
		{in: "./a//b/", abs: "/workspace/a/b", display: "a/b"},
		{in: "/workspace/x", abs: "/workspace/x", display: "x"},
		{in: "/data/kb/s.md", abs: "/data/kb/s.md", display: "/data/kb/s.md"},
		{in: "../etc/passwd", code: CodePermissionDenied},
		{in: "..", code: CodePermissionDenied},
		{in: "a/../../x", code: CodePermissionDenied},
		{in: "/etc/passwd", code: CodePermissionDenied},
		{in: "/workspace/../etc/passwd", code: CodePermissionDenied},
		{in: "/tmp/x", code: CodePermissionDenied},
		{in: "/workspacex/y", code: CodePermissionDenied},
		{in: "a\x00b", code: CodeInvalidRequest},
		{in: "bad\xffname", code: CodeInvalidRequest},
		{in: "bad\uFFFDname", code: CodeInvalidRequest},
		{in: strings.Repeat("a/", 2049), code: CodeInvalidRequest},
		{in: strings.Repeat("n", 256), code: CodeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			p, err := s.Resolve(tt.in)
			if tt.code != "" {
				if err == nil || err.Code != tt.code {
					t.Fatalf("Resolve(%q) = %+v, %v; want code %s", tt.in, p, err, tt.code)
				}
				return
			}
			if err != nil || p.Abs != tt.abs || p.Display != tt.display {
				t.Fatalf("Resolve(%q) = %+v, %v; want %s shown as %s", tt.in, p, err, tt.abs, tt.display)
			}
		})
	}
	if _, err := New("/tmp").Resolve("x"); err == nil || err.Code != CodePermissionDenied {
		t.Fatalf("no mounts: %v", err)
	}
}

func TestFromOS(t *testing.T) {
	tests := []struct {
		err  error
		code string
	}{
		{&fs.PathError{Op: "open", Path: "x", Err: syscall.ENOENT}, CodeFileNotFound},
		{&fs.PathError{Op: "open", Path: "x", Err: syscall.EPERM}, CodePermissionDenied},
		{&fs.PathError{Op: "open", Path: "x", Err: syscall.EROFS}, CodePermissionDenied},
		{&fs.PathError{Op: "open", Path: "x", Err: syscall.EISDIR}, CodeInvalidRequest},
		{errors.New("boom"), CodeFailed},
	}
	for _, tt := range tests {
		if got := FromOS("x", tt.err); got.Code != tt.code {
			t.Errorf("FromOS(%v) = %v, want %s", tt.err, got, tt.code)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"10": 10, "64KiB": 64 << 10, "10MiB": 10 << 20, "1 GiB": 1 << 30, "5MB": 5e6, "7B": 7} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1", "1.5MiB", "ten", "99999999999999999999"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) succeeded", in)
		}
	}
}

// FuzzResolve checks that whatever the input, a resolved path is clean and
// inside a mount, and a refusal carries a code.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"a/b", "../x", "/workspace/../etc", "/data/kb/x", "a\x00b", "\xff"} {
		f.Add(s)
	}
	s := New("/workspace", "/data/kb")
	f.Fuzz(func(t *testing.T, in string) {
		p, err := s.Resolve(in)
		if err != nil {
			if err.Code == "" || err.Msg == "" {
				t.Fatalf("Resolve(%q): error without code or message", in)
			}
			return
		}
		if path.Clean(p.Abs) != p.Abs || (!within("/workspace", p.Abs) && !within("/data/kb", p.Abs)) {
			t.Fatalf("Resolve(%q) = %q, outside the mounts", in, p.Abs)
		}
	})
}

func TestWithin(t *testing.T) {
	for _, c := range []struct {
		dir, p string
		want   bool
	}{
		{"/workspace", "/workspace", true},
		{"/workspace", "/workspace/a/b", true},
		{"/workspace", "/workspacex", false},
		{"/workspace", "/workspacex/a", false},
		{"/workspace", "/work", false},
		{"/workspace", "/", false},
		{"/workspace/kb", "/workspace", false},
		{"/", "/", true},
		{"/", "//x", true},
	} {
		if got := within(c.dir, c.p); got != c.want {
			t.Errorf("within(%q, %q) = %v, want %v", c.dir, c.p, got, c.want)
		}
		if got, old := within(c.dir, c.p), c.p == c.dir || strings.HasPrefix(c.p, c.dir+"/"); got != old {
			t.Errorf("within(%q, %q) = %v, the allocating form says %v", c.dir, c.p, got, old)
		}
	}
}
