//go:build !linux

package hostfs

import (
	"errors"
	"io/fs"
)

// openPlain leaves every open to os.Root where bare descriptors are not
// used.
func (r *FS) openPlain(string, bool) *hostFile { return nil }

func (r *FS) dropPlainDir() {}

var errNotPlain = errors.New("extism: no bare descriptors on this system")

func (l *hostFile) plainStat() (fs.FileInfo, error)        { return nil, errNotPlain }
func (l *hostFile) plainRead([]byte) (int, error)          { return 0, errNotPlain }
func (l *hostFile) plainReadAt([]byte, int64) (int, error) { return 0, errNotPlain }
func (l *hostFile) plainSeek(int64, int) (int64, error)    { return 0, errNotPlain }
func (l *hostFile) plainSync() error                       { return errNotPlain }
func (l *hostFile) plainClose() error                      { return errNotPlain }
