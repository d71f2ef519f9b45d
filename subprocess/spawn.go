package subprocess

import (
	"os/exec"
	"runtime"
	"sync"
)

// The parent-death signal fires when the *thread* that started a child
// exits, not the process (go.dev/issue/27505). Every sandboxed process is
// therefore started from one OS thread that is locked for good and never
// exits: its death is the host's death.
var (
	spawnOnce sync.Once
	spawnCh   chan func()
)

// startCmd runs cmd.Start on the spawner thread.
func startCmd(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnCh = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: the goroutine never returns
			for f := range spawnCh {
				f()
			}
		}()
	})
	done := make(chan error, 1)
	spawnCh <- func() { done <- cmd.Start() }
	return <-done
}
