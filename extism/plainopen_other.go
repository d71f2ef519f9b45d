//go:build !linux

package extism

import (
	"errors"
	"io/fs"
)

// openPlain leaves every open to os.Root where bare descriptors are not
// used.
func (r *rootFS) openPlain(string) *listingFile { return nil }

func (r *rootFS) dropPlainDir() {}

var errNotPlain = errors.New("extism: no bare descriptors on this system")

func (l *listingFile) plainStat() (fs.FileInfo, error)        { return nil, errNotPlain }
func (l *listingFile) plainRead([]byte) (int, error)          { return 0, errNotPlain }
func (l *listingFile) plainReadAt([]byte, int64) (int, error) { return 0, errNotPlain }
func (l *listingFile) plainSeek(int64, int) (int64, error)    { return 0, errNotPlain }
func (l *listingFile) plainSync() error                       { return errNotPlain }
func (l *listingFile) plainClose() error                      { return errNotPlain }
