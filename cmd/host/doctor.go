package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
	"github.com/toolhost/toolhost"
	"github.com/toolhost/toolhost/subprocess"
)

func (a *app) doctorCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Say which sandbox protections are in force on this machine",
		Long: "Say which protections of the subprocess tier (seccomp, Landlock, PID namespace,\n" +
			"subreaper, parent-death signal) this kernel and platform provide, and what\n" +
			"follows from any that are missing. The wasm tier is the same everywhere.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r := subprocess.Report()
			if asJSON {
				return writeJSON(a.stdout, map[string]any{
					"version": toolhost.Version, "go": runtime.Version(), "subprocess": r,
				})
			}
			fmt.Fprintf(a.stdout, "toolhost %s (%s, %s/%s)\n\n", toolhost.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			fmt.Fprintln(a.stdout, "wasm tier: in force (wazero; fresh instance per call, os.Root mounts, guarded HTTP)")
			fmt.Fprintln(a.stdout, "subprocess tier:")
			yes := func(b bool) string {
				if b {
					return "yes"
				}
				return "NO"
			}
			fmt.Fprintf(a.stdout, "  supported              %s\n", yes(r.Supported))
			fmt.Fprintf(a.stdout, "  seccomp filter         %s\n", yes(r.Seccomp))
			fmt.Fprintf(a.stdout, "  landlock               %s (ABI %d)\n", yes(r.Landlock), r.LandlockABI)
			fmt.Fprintf(a.stdout, "  PID namespace          %s\n", yes(r.PIDNamespace))
			fmt.Fprintf(a.stdout, "  pids cgroup            %s\n", yes(r.PIDsCgroup))
			fmt.Fprintf(a.stdout, "  dies with the host     %s\n", yes(r.DiesWithHost))
			fmt.Fprintf(a.stdout, "  dies with its shim     %s\n", yes(r.ParentDeathSignal))
			if r.PIDNamespace {
				fmt.Fprintf(a.stdout, "  child subreaper        the shim (init of the plugin's PID namespace)\n")
			} else {
				fmt.Fprintf(a.stdout, "  child subreaper        %s\n", yes(r.Subreaper))
			}
			for _, m := range r.Missing {
				fmt.Fprintf(a.stdout, "  missing: %s\n", m)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}
