package subprocess

import (
	"context"
	"time"

	"github.com/toolhost/toolhost/plugin"
)

// watchTree samples the process tree rooted at pid (gopsutil) every
// SampleInterval until stop or exited is closed. It returns the limit the
// tree exceeded — RSS above memory, more processes or threads than the
// adapter allows, CPU time above its budget — or exited=true when the root
// exited by itself. The caller kills the tree.
func (a *Adapter) watchTree(stop, exited <-chan struct{}, g *group, memory int64) (e *plugin.Error, gone bool) {
	cfg := a.cfg
	tick := time.NewTicker(cfg.SampleInterval)
	defer tick.Stop()
	ctx := context.Background()
	for n := 0; ; n++ {
		select {
		case <-stop:
			return nil, false
		case <-exited:
			return nil, true
		case <-tick.C:
		}
		// Without a PID namespace, orphans re-parented to the host are found
		// only by a scan of every process; do it every tenth sample.
		full := !a.hard.PIDNamespace && n%10 == 0
		u := sample(ctx, g, full, cfg.MaxProcesses)
		switch {
		case u.Processes > cfg.MaxProcesses:
			return plugin.LimitError("processes", "the tool started more than %d processes", cfg.MaxProcesses), false
		case u.Threads > cfg.MaxThreads:
			return plugin.LimitError("threads", "the tool started more than %d threads", cfg.MaxThreads), false
		case u.ForksRefused > 0 && u.Threads >= cfg.MaxThreads:
			// The pids cgroup caps tasks (the threads of every process) at
			// MaxThreads: the tree is at the cap and was refused one more.
			return plugin.LimitError("threads", "the tool reached its cap of %d threads (in all its processes) and a new one was refused", cfg.MaxThreads), false
		case u.ForksRefused > 0:
			// It hit the cap between two samples and has shrunk since: the
			// churn of a fork bomb, whose forks fail and whose shells exit.
			return plugin.LimitError("processes", "the tool's processes reached the cap of %d tasks and a fork was refused", cfg.MaxThreads), false
		case memory > 0 && int64(u.RSS) > memory:
			return plugin.LimitError("memory", "the tool's processes used %s of memory, above the limit %s",
				plugin.FormatSize(int64(u.RSS)), plugin.FormatSize(memory)), false
		case u.CPU > time.Duration(cfg.CPUSeconds)*time.Second:
			return plugin.LimitError("cpu", "the tool's processes used %s of CPU time, above the limit %ds",
				u.CPU.Round(time.Millisecond), cfg.CPUSeconds), false
		}
	}
}
