package subprocess

import (
	"fmt"
	"os"

	"github.com/toolhost/toolhost/plugin"
)

// Access a sandboxed process needs to a path.
const (
	needSearch = 1 // pass through (x on a directory)
	needRead   = 4
	needWrite  = 2
)

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
