//go:build !linux

package hostfs

import "io/fs"

// direntState is empty where ReadDir is os.File's own.
type direntState struct{}

func (*direntState) reset()   {}
func (*direntState) release() {}

// ReadDir lists the directory with os.File.ReadDir.
func (l *hostFile) ReadDir(n int) ([]fs.DirEntry, error) { return l.f.ReadDir(n) }
