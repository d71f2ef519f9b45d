// Package atomicfile replaces a file's content in one step: whoever opens
// the file sees the old content or the new, never part of either, and a
// crash mid-write leaves the old file in place (and at worst a stray
// temporary file beside it).
package atomicfile

import (
	"io"
	"os"
	"path/filepath"
)

// Options say how the new file is made.
type Options struct {
	// Perm is the new file's mode. The temporary file has it before the
	// first byte is written, so content meant for the owner alone is never
	// readable by others.
	Perm os.FileMode
	// Sync flushes the content to disk before the rename, for files whose
	// loss after a crash would cost a person something (a login's tokens).
	Sync bool
}

// Write replaces name with what write writes, through a temporary file in
// name's directory renamed over it.
func Write(name string, opts Options, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after the rename there is nothing to remove
	if err := f.Chmod(opts.Perm); err != nil {
		f.Close()
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if opts.Sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

// WriteFile replaces name with data (Write).
func WriteFile(name string, data []byte, opts Options) error {
	return Write(name, opts, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
