//go:build unix

package subprocess

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// reachable reports why id cannot reach path with the given access, nil if
// it can: every directory on the way needs search permission for id, and
// path itself the access asked. It reads the mode bits as the kernel does
// for a process without supplementary groups or capabilities (ACLs, which
// could grant more, are not read: a refusal may be too strict, never too
// lax).
func reachable(path string, id Identity, access uint32) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	for dir := filepath.Dir(abs); ; dir = filepath.Dir(dir) {
		if err := permits(dir, id, needSearch); err != nil {
			return err
		}
		if dir == "/" || dir == "." {
			break
		}
	}
	return permits(abs, id, access)
}

// permits checks path's mode bits for id.
func permits(path string, id Identity, access uint32) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil // no owner to compare with (not a Unix file system)
	}
	perm := uint32(fi.Mode().Perm())
	var bits uint32
	switch {
	case st.Uid == id.UID:
		bits = perm >> 6
	case st.Gid == id.GID:
		bits = perm >> 3
	default:
		bits = perm
	}
	if bits&access != access {
		return fmt.Errorf("%s (mode %s, owner %d:%d) does not give uid %d %s", path, fi.Mode().Perm(), st.Uid, st.Gid, id.UID, accessWords(access))
	}
	return nil
}

func accessWords(access uint32) string {
	switch access {
	case needSearch:
		return "search (x) permission"
	case needRead | needSearch:
		return "read and search (r-x) permission"
	case needRead | needWrite | needSearch:
		return "read, write and search (rwx) permission"
	}
	return fmt.Sprintf("access %o", access)
}
