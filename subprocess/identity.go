package subprocess

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/toolhost/toolhost/plugin"
)

// Access a sandboxed process needs to a path.
const (
	needSearch = 1 // pass through (x on a directory)
	needRead   = 4
	needWrite  = 2
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

// checkReachable refuses a tool whose mounts (or binary) the identity its
// processes run as cannot use, naming the path, the missing permission and
// the ways out: at load, not as a bare "permission denied" at the first
// call.
func (a *Adapter) checkReachable(spec *plugin.Spec, binary string) error {
	if a.runAs == nil {
		return nil
	}
	fail := func(what string, err error) error {
		return &plugin.Error{Code: plugin.CodePermissionDenied, Tool: spec.Name,
			Message: fmt.Sprintf("%s is out of reach of the sandboxed process, which runs as %s: %v; give that identity access (chown or chmod), or run plugins as another with host { subprocess_user = \"UID:GID\" }", what, a.runAs, err)}
	}
	for _, m := range spec.Capabilities.Mounts {
		access := uint32(needRead | needSearch)
		if !m.ReadOnly {
			access |= needWrite
		}
		if err := reachable(m.HostPath, *a.runAs, access); err != nil {
			if os.IsNotExist(err) {
				continue // reported where the mount is used
			}
			return fail("mount "+m.HostPath, err)
		}
	}
	if binary != "" {
		// Executed through its open descriptor: only the file's own
		// execute bit matters, not the directories above it.
		if err := permits(binary, *a.runAs, needSearch); err != nil && !os.IsNotExist(err) {
			return fail("plugin binary "+binary, err)
		}
	}
	return nil
}
