//go:build linux

package extism

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/extism/internal/hostfs"
	"github.com/toolhost/toolhost/extism/internal/wasi"
	"github.com/toolhost/toolhost/plugin"
)

type batchRecordOut struct {
	Status uint32 `json:"status"`
	Size   int64  `json:"size"`
	Data   string `json:"data"`
	Sum    int    `json:"sum"`
}

type batchOutput struct {
	Submit int32            `json:"submit"`
	More   []int32          `json:"more"`
	Takes  []int32          `json:"takes"`
	Read   []batchRecordOut `json:"read"`
}

// batchCall runs the hostile guest's batchread tool with dir mounted at
// /workspace.
func batchCall(t *testing.T, tool plugin.Tool, spec *plugin.Spec, args map[string]any) (batchOutput, error) {
	t.Helper()
	res, err := call(t, tool, spec, args, nil)
	if err != nil {
		return batchOutput{}, err
	}
	var out batchOutput
	if err := json.Unmarshal(res.StructuredContent, &out); err != nil {
		t.Fatalf("batchread output %s: %v", res.StructuredContent, err)
	}
	return out, nil
}

// TestBatchRead reads files through toolhost_fs_submit/take: contents in
// the order named, and every name that is not a regular file of the mount
// refused unread, without following links and without blocking.
func TestBatchRead(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("outside the mount"), 0o644); err != nil {
		t.Fatal(err)
	}
	write("a.txt", "alpha")
	write("b.txt", "")
	write("big.txt", strings.Repeat("x", 5000))
	write("huge.bin", strings.Repeat("h", hostfs.MaxFile+10))
	write("nul.bin", "alpha\x00")
	write("late-nul.txt", strings.Repeat("y", hostfs.BinaryPrefix)+"\x00alpha")
	write("kelvin.txt", "\u212aelvin")
	write("mixed.txt", "a KeLvIn b")
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "sub", "c.txt"), []byte("gamma"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"inside":  "a.txt",
		"escape":  filepath.Join(outside, "secret"),
		"dirlink": outside,
	} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}

	spec := mountSpec("batchread", ws, true)
	tool := load(t, spec)

	t.Run("contents in the order named", func(t *testing.T) {
		out, err := batchCall(t, tool, &spec, map[string]any{
			"dir": "/workspace", "names": []string{"big.txt", "a.txt", "b.txt", "missing", "a.txt"}, "max": 1 << 20, "take": -1,
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []batchRecordOut{
			{Size: 5000, Data: strings.Repeat("x", 5000)},
			{Size: 5, Data: "alpha"},
			{},
			{Status: wasi.ENOENT},
			{Size: 5, Data: "alpha"},
		}
		if out.Submit != 5 || fmt.Sprint(out.Read) != fmt.Sprint(want) {
			t.Fatalf("submit %d, read %v; want 5, %v", out.Submit, out.Read, want)
		}
	})
	t.Run("a subdirectory", func(t *testing.T) {
		out, err := batchCall(t, tool, &spec, map[string]any{"dir": "/workspace/sub", "names": []string{"c.txt"}, "max": 100, "take": -1})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Read) != 1 || out.Read[0].Data != "gamma" {
			t.Fatalf("read %+v", out)
		}
	})
	t.Run("what is not a regular file is refused unread", func(t *testing.T) {
		start := time.Now()
		out, err := batchCall(t, tool, &spec, map[string]any{
			"dir": "/workspace", "names": []string{"inside", "escape", "dirlink", "sub", "fifo", "big.txt", "huge.bin"}, "max": 4096, "take": -1,
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []batchRecordOut{
			{Status: wasi.ELOOP},  // a link is not followed, even inside the mount
			{Status: wasi.ELOOP},  // nor out of it
			{Status: wasi.ELOOP},  // nor to a directory
			{Status: wasi.EISDIR}, // a directory
			{Status: wasi.EINVAL}, // a FIFO, opened without waiting for a writer
			{Status: wasi.EFBIG, Size: 5000},
			{Status: wasi.EFBIG, Size: hostfs.MaxFile + 10},
		}
		if fmt.Sprint(out.Read) != fmt.Sprint(want) {
			t.Fatalf("read %v; want %v", out.Read, want)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("took %v: the FIFO blocked", d)
		}
	})
	t.Run("a filter: only files holding it come back whole", func(t *testing.T) {
		out, err := batchCall(t, tool, &spec, map[string]any{
			"dir": "/workspace", "names": []string{"a.txt", "b.txt", "nul.bin", "late-nul.txt", "big.txt", "missing", "huge.bin"},
			"max": 1 << 20, "take": -1, "filter": "alph",
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []batchRecordOut{
			{Size: 5, Data: "alpha"},
			{Status: wasi.ENOMSG},          // empty
			{Status: wasi.EILSEQ, Size: 6}, // a NUL in the first 8 KiB
			{Size: hostfs.BinaryPrefix + 6, Data: strings.Repeat("y", hostfs.BinaryPrefix) + "\x00alpha"}, // a NUL after them
			{Status: wasi.ENOMSG, Size: 5000},
			{Status: wasi.ENOENT},
			{Status: wasi.EFBIG, Size: hostfs.MaxFile + 10},
		}
		if fmt.Sprint(out.Read) != fmt.Sprint(want) {
			t.Fatalf("read %v; want %v", out.Read, want)
		}
		// What the filter read counts as read.
		sp := mountSpec("batchread", ws, true)
		sp.Limits.FileBytesRead = 4000
		tl := load(t, sp)
		_, err = batchCall(t, tl, &sp, map[string]any{"dir": "/workspace", "names": []string{"big.txt"}, "max": 1 << 20, "take": -1, "filter": "alph"})
		wantLimit(t, err, "file_bytes_read")
	})
	t.Run("a filter in either case", func(t *testing.T) {
		out, err := batchCall(t, tool, &spec, map[string]any{
			"dir": "/workspace", "names": []string{"mixed.txt", "kelvin.txt", "a.txt"},
			"max": 1 << 20, "take": -1, "filter": "kelvin", "flags": fsFold,
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []batchRecordOut{
			{Size: 10, Data: "a KeLvIn b"},
			{Size: 8, Data: "\u212aelvin"}, // KELVIN SIGN folds to k: kept
			{Status: wasi.ENOMSG, Size: 5},
		}
		if fmt.Sprint(out.Read) != fmt.Sprint(want) {
			t.Fatalf("read %v; want %v", out.Read, want)
		}
	})
	t.Run("examined, not read", func(t *testing.T) {
		out, err := batchCall(t, tool, &spec, map[string]any{
			"dir": "/workspace", "names": []string{"big.txt", "sub", "escape", "fifo", "missing"},
			"max": 1, "take": -1, "flags": fsStat,
		})
		if err != nil {
			t.Fatal(err)
		}
		meta := func(name string, typ byte) string {
			var st syscall.Stat_t
			if err := syscall.Lstat(filepath.Join(ws, name), &st); err != nil {
				t.Fatal(err)
			}
			var m [16]byte
			binary.LittleEndian.PutUint64(m[:], uint64(st.Mtim.Nano()))
			m[8] = typ
			return hex.EncodeToString(m[:])
		}
		linkSize := int64(len(filepath.Join(outside, "secret")))
		want := []batchRecordOut{
			{Size: 5000, Data: meta("big.txt", 4)},
			{Size: dirSize(t, filepath.Join(ws, "sub")), Data: meta("sub", 3)},
			{Size: linkSize, Data: meta("escape", 7)}, // the link itself, not followed
			{Data: meta("fifo", 0)},
			{Status: wasi.ENOENT},
		}
		if fmt.Sprint(out.Read) != fmt.Sprint(want) {
			t.Fatalf("read %v; want %v", out.Read, want)
		}
		for _, bad := range []map[string]any{{"filter": "x", "flags": fsStat}, {"flags": fsStat | fsFold}} {
			args := map[string]any{"dir": "/workspace", "names": []string{"a.txt"}, "max": 1, "take": -1}
			for k, v := range bad {
				args[k] = v
			}
			if out, err := batchCall(t, tool, &spec, args); err != nil || out.Submit != -wasi.EINVAL {
				t.Fatalf("%v: submit %d, %v; want EINVAL", bad, out.Submit, err)
			}
		}
	})
	t.Run("a large max is capped at the batch limit", func(t *testing.T) {
		out, err := batchCall(t, tool, &spec, map[string]any{"dir": "/workspace", "names": []string{"huge.bin"}, "max": 1 << 40, "take": -1})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Read) != 1 || out.Read[0].Status != wasi.EFBIG || out.Read[0].Size != hostfs.MaxFile+10 {
			t.Fatalf("read %+v", out.Read)
		}
	})
	t.Run("a take buffer too small is told the size", func(t *testing.T) {
		out, err := batchCall(t, tool, &spec, map[string]any{"dir": "/workspace", "names": []string{"big.txt"}, "max": 1 << 20, "take": 1, "buf": 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Takes) != 1 || out.Takes[0] != -(hostfs.RecordHeader+5000) {
			t.Fatalf("takes %v, want [%d]", out.Takes, -(hostfs.RecordHeader + 5000))
		}
	})
	t.Run("nothing named: take answers 0", func(t *testing.T) {
		out, err := batchCall(t, tool, &spec, map[string]any{"dir": "/workspace", "raw": "", "max": 10, "take": -1})
		if err != nil {
			t.Fatal(err)
		}
		if out.Submit != -wasi.EINVAL || len(out.Takes) != 1 || out.Takes[0] != 0 {
			t.Fatalf("%+v", out)
		}
	})
	for _, tc := range []struct {
		name string
		args map[string]any
		want int32
	}{
		{"a directory outside every mount", map[string]any{"dir": "/etc", "names": []string{"passwd"}}, -wasi.ENOENT},
		{"a directory climbing out", map[string]any{"dir": "/workspace/../etc", "names": []string{"passwd"}}, -wasi.EINVAL},
		{"a relative directory", map[string]any{"dir": "workspace", "names": []string{"a.txt"}}, -wasi.EINVAL},
		{"a directory link out of the mount", map[string]any{"dir": "/workspace/dirlink", "names": []string{"secret"}}, -wasi.EPERM},
		{"a file as the directory", map[string]any{"dir": "/workspace/a.txt", "names": []string{"x"}}, -wasi.ENOTDIR},
		{"a name with a slash", map[string]any{"dir": "/workspace", "names": []string{"sub/c.txt"}}, -wasi.EINVAL},
		{"a name climbing out", map[string]any{"dir": "/workspace/sub", "names": []string{".."}}, -wasi.EINVAL},
		{"an empty name", map[string]any{"dir": "/workspace", "raw": "a.txt\x00\x00b.txt"}, -wasi.EINVAL},
		{"a name too long", map[string]any{"dir": "/workspace", "names": []string{strings.Repeat("n", 256)}}, -wasi.EINVAL},
		{"a NUL in the directory", map[string]any{"dir": "/workspace\x00/x", "names": []string{"a.txt"}}, -wasi.EINVAL},
		{"no max", map[string]any{"dir": "/workspace", "names": []string{"a.txt"}, "max": 0}, -wasi.EINVAL},
		{"names out of memory", map[string]any{"dir": "/workspace", "bad_pointer": true}, -wasi.EFAULT},
		{"a filter too long", map[string]any{"dir": "/workspace", "names": []string{"a.txt"}, "filter": strings.Repeat("f", hostfs.MaxFilter+1)}, -wasi.EINVAL},
		{"an unknown flag", map[string]any{"dir": "/workspace", "names": []string{"a.txt"}, "filter": "a", "flags": 2}, -wasi.EINVAL},
		{"a folded filter not in lower case", map[string]any{"dir": "/workspace", "names": []string{"a.txt"}, "filter": "Alpha", "flags": fsFold}, -wasi.EINVAL},
		{"a folded filter not ASCII", map[string]any{"dir": "/workspace", "names": []string{"a.txt"}, "filter": "é", "flags": fsFold}, -wasi.EINVAL},
	} {
		t.Run("refused: "+tc.name, func(t *testing.T) {
			args := map[string]any{"max": 100, "take": -1}
			for k, v := range tc.args {
				args[k] = v
			}
			out, err := batchCall(t, tool, &spec, args)
			if err != nil {
				t.Fatal(err)
			}
			if out.Submit != tc.want || len(out.Read) != 0 {
				t.Fatalf("submit %d, read %v; want %d and nothing read", out.Submit, out.Read, tc.want)
			}
		})
	}
	t.Run("bytes taken count against file_bytes_read", func(t *testing.T) {
		sp := mountSpec("batchread", ws, true)
		sp.Limits.FileBytesRead = 3000
		tl := load(t, sp)
		_, err := batchCall(t, tl, &sp, map[string]any{"dir": "/workspace", "names": []string{"a.txt", "big.txt"}, "max": 1 << 20, "take": -1})
		wantLimit(t, err, "file_bytes_read")
	})
}

func dirSize(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestBatchReadEndsWithTheCall: files named and never taken are not read
// after the call, their directories are closed, and the host serves on.
func TestBatchReadEndsWithTheCall(t *testing.T) {
	ws := t.TempDir()
	var names []string
	for i := range 2000 {
		n := fmt.Sprintf("f%04d", i)
		names = append(names, n)
		if err := os.WriteFile(filepath.Join(ws, n), []byte(strings.Repeat("z", 3000)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec := mountSpec("batchread", ws, true)
	spec.Limits.Pool = -1 // no instances made ahead, holding descriptors of their own
	tool := load(t, spec)
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd")
		}
		return len(ents)
	}
	// Warm up (pool, compilation), then count.
	if _, err := batchCall(t, tool, &spec, map[string]any{"dir": "/workspace", "names": names[:1], "max": 1 << 20, "take": -1}); err != nil {
		t.Fatal(err)
	}
	before := fds()
	for range 5 {
		out, err := batchCall(t, tool, &spec, map[string]any{"dir": "/workspace", "names": names, "max": 1 << 20, "take": 3})
		if err != nil {
			t.Fatal(err)
		}
		if out.Submit != int32(len(names)) || len(out.Read) < 3 {
			t.Fatalf("submit %d, read %d", out.Submit, len(out.Read))
		}
	}
	// More than batchMaxAhead is named: reading pauses until taken, and
	// all of it arrives in order.
	out, err := batchCall(t, tool, &spec, map[string]any{"dir": "/workspace", "names": names, "max": 1 << 20, "take": -1, "buf": 64 << 10, "sums": true})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Read) != len(names) {
		t.Fatalf("read %d of %d", len(out.Read), len(names))
	}
	for i, r := range out.Read {
		if r.Status != 0 || r.Size != 3000 || r.Sum != 3000*'z' {
			t.Fatalf("record %d: status %d, %d bytes, sum %d", i, r.Status, r.Size, r.Sum)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for fds() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the last instance is closed after the call
	}
	if n := fds(); n > before {
		t.Fatalf("%d descriptors open after the calls, %d before", n, before)
	}
}

// TestBatchReadBounds: a call's reading holds at most hostfs.MaxDirs
// directories open and pauses at batchMaxAhead bytes not taken, counting
// what a filter read and dropped and the buffers' capacity; a directory
// named twice is opened once.
func TestBatchReadBounds(t *testing.T) {
	ws := t.TempDir()
	for i := range hostfs.MaxDirs + 5 {
		d := filepath.Join(ws, fmt.Sprintf("d%02d", i))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var big []string
	for i := range 3 {
		n := fmt.Sprintf("big%d", i)
		big = append(big, n)
		if err := os.WriteFile(filepath.Join(ws, n), make([]byte, hostfs.MaxFile), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("directories held", func(t *testing.T) {
		spec := mountSpec("batchread", ws, true)
		tool := load(t, spec)
		// Three 1 MiB files fill the read-ahead: what is named after
		// them stays unread, its directories open.
		var more []map[string]any
		for i := range hostfs.MaxDirs + 2 {
			more = append(more, map[string]any{"dir": fmt.Sprintf("/workspace/d%02d", i), "names": []string{"f"}})
		}
		out, err := batchCall(t, tool, &spec, map[string]any{"dir": "/workspace", "names": big, "max": hostfs.MaxFile, "more": more, "take": 0, "sums": true})
		if err != nil {
			t.Fatal(err)
		}
		want := make([]int32, len(more))
		for i := range want {
			want[i] = 1
		}
		// The top directory is one; hostfs.MaxDirs-1 more fit.
		want[hostfs.MaxDirs-1], want[hostfs.MaxDirs], want[hostfs.MaxDirs+1] = -wasi.EAGAIN, -wasi.EAGAIN, -wasi.EAGAIN
		if out.Submit != 3 || fmt.Sprint(out.More) != fmt.Sprint(want) {
			t.Fatalf("submit %d, more %v; want 3, %v", out.Submit, out.More, want)
		}
	})
}

// TestBatchStatTakenInline: files named to be examined are examined by
// the guest's take itself, waiting or not: a small batch comes back whole
// from the first take, and a large one (where workers help) arrives
// complete, every file in the order named.
func TestBatchStatTakenInline(t *testing.T) {
	ws := t.TempDir()
	var names []string
	for i := range hostfs.InlineStats + 44 {
		n := fmt.Sprintf("f%03d", i)
		names = append(names, n)
		if err := os.WriteFile(filepath.Join(ws, n), make([]byte, i), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec := mountSpec("batchread", ws, true)
	tool := load(t, spec)
	check := func(t *testing.T, out batchOutput, n int) {
		t.Helper()
		if out.Submit != int32(n) || len(out.Read) != n {
			t.Fatalf("submit %d, %d records; want %d (takes %v)", out.Submit, len(out.Read), n, out.Takes)
		}
		for i, r := range out.Read {
			if r.Status != 0 || r.Size != int64(i) {
				t.Fatalf("record %d: status %d, size %d", i, r.Status, r.Size)
			}
		}
	}
	for _, wait := range []bool{true, false} {
		t.Run(fmt.Sprintf("wait=%v", wait), func(t *testing.T) {
			out, err := batchCall(t, tool, &spec, map[string]any{
				"dir": "/workspace", "names": names[:20], "max": 1, "take": -1, "flags": fsStat, "no_wait": !wait,
			})
			if err != nil {
				t.Fatal(err)
			}
			check(t, out, 20)
			if out.Takes[0] != 20*(hostfs.RecordHeader+16) {
				t.Fatalf("first take %d bytes; want all 20 records", out.Takes[0])
			}
			if !wait {
				return // a take that does not wait may find a worker's file not done yet
			}
			out, err = batchCall(t, tool, &spec, map[string]any{
				"dir": "/workspace", "names": names, "max": 1, "take": -1, "flags": fsStat, "no_wait": !wait,
			})
			if err != nil {
				t.Fatal(err)
			}
			check(t, out, len(names))
		})
	}
}
