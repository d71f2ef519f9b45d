package subprocess

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/toolhost/toolhost/plugin"
)

// Issue 23, part 2: a subprocess tool read the host's secrets from
// /proc/<host pid>/environ (the host is its ancestor), and /etc/shadow,
// because plugins ran as root with root's capabilities. Each case below
// asserts the containment; the tools are called again afterwards.

const hostSecret = "toolhost-host-secret-7f3a9c"

// shellHost runs a host in a process of its own with hostSecret in its
// initial environment (what /proc/<pid>/environ shows), as the identity
// cred (nil: this test's, root), runs command through its shell.exec and
// returns what it printed.
func shellHost(t *testing.T, cred *syscall.Credential, command string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	scratch, ws := sandboxDir(t), sandboxDir(t)
	cmd := exec.Command(exe, testPluginArg, "shellhost", scratch, ws, command)
	cmd.Env = append(os.Environ(), "TOOLHOST_HOST_SECRET="+hostSecret)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(out), "ERROR") {
		t.Fatalf("host: %v\n%s", err, out)
	}
	return string(out)
}

func TestHostSecretsOutOfReach(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the unprivileged-host case runs the host as nobody, which needs root to start")
	}
	// Everything a tool could try, in one command: the host's environ,
	// cmdline, memory and descriptors, every process's environ, and a
	// sibling of the host outside any sandbox.
	sibling := exec.Command("sleep", "60")
	sibling.Env = []string{"SIBLING_SECRET=" + hostSecret}
	if err := sibling.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sibling.Process.Kill(); sibling.Wait() })
	probe := "cat /proc/HOSTPID/environ /proc/HOSTPID/cmdline /proc/" + strconv.Itoa(sibling.Process.Pid) + "/environ; " +
		"cat /proc/*/environ; head -c 64 /proc/HOSTPID/mem; ls -l /proc/HOSTPID/fd; echo probe-done"
	for _, tc := range []struct {
		name string
		cred *syscall.Credential
		want string // a line of the host's hardening report
	}{
		{"root host", nil, "private /proc:         yes"},
		// Not root: no namespaces; the host makes itself non-dumpable.
		{"unprivileged host", &syscall.Credential{Uid: nobody.UID, Gid: nobody.GID}, "private /proc:         no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := shellHost(t, tc.cred, probe)
			if !strings.Contains(out, tc.want) {
				t.Fatalf("hardening report lacks %q:\n%s", tc.want, out)
			}
			if !strings.Contains(out, "probe-done") {
				t.Fatalf("the probe did not run to its end:\n%s", out)
			}
			if strings.Contains(out, hostSecret) {
				t.Fatalf("a sandboxed command read the host's secret:\n%s", out)
			}
		})
	}
}

func TestSandboxIdentity(t *testing.T) {
	t.Parallel() // mostly waits (helper_test.go)
	if os.Geteuid() != 0 {
		t.Skip("plugins change identity only under a root host")
	}
	a := newTestAdapter(t, nil)
	if !a.Hardening().PrivateProc {
		t.Skip("no PID and mount namespaces here")
	}
	if got := a.Hardening().RunAs; got != "65534:65534" {
		t.Fatalf("RunAs = %q, want 65534:65534", got)
	}
	shell, _ := builtinTool(t, a, BuiltinShellExec, nil)
	ro, _ := builtinTool(t, a, BuiltinBashReadOnly, nil)
	run := func(tool plugin.Tool, cmd string) string {
		t.Helper()
		res, err := shellCall(t, tool, map[string]any{"command": cmd})
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return res.TextContent()
	}
	cases := []struct {
		tool      plugin.Tool
		cmd, want string
	}{
		{shell, "id -u; id -g; id -G", "65534\n65534\n65534\n"},
		{shell, "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status | tr -s '\\t ' ' '",
			"CapInh: 0000000000000000\nCapPrm: 0000000000000000\nCapEff: 0000000000000000\nCapBnd: 0000000000000000\nCapAmb: 0000000000000000\n"},
		// Only the tree's processes: the shim (the namespace's init) and
		// the shell, which lists /proc itself (a glob, not `ls | grep`,
		// whose grep may start before or after ls reads /proc).
		{shell, "set -- /proc/[0-9]*; echo $#", "stdout ---\n2\n"},
		{shell, "cat /proc/1/environ > /dev/null || echo refused", "refused"},
		{shell, "cat /etc/shadow || echo refused", "refused"},
		{ro, "cat /etc/shadow", "Permission denied"},
		{ro, "ls /root", "Permission denied"},
		{shell, "touch /etc/toolhost-probe || echo refused", "refused"},
	}
	for _, tc := range cases {
		if got := run(tc.tool, tc.cmd); !strings.Contains(got, tc.want) {
			t.Errorf("%s:\n%s\nwant it to contain %q", tc.cmd, got, tc.want)
		}
	}
	// The tools keep serving.
	if got := run(ro, "echo ok"); !strings.Contains(got, "ok") {
		t.Fatalf("after the probes: %s", got)
	}
}

// TestSubprocessOutputIsRedacted: a subprocess tool's output goes through
// the same redaction as every tool's: a secret the tool was given never
// reaches the model, however the tool came by it.
func TestSubprocessOutputIsRedacted(t *testing.T) {
	t.Parallel() // mostly waits (helper_test.go)
	ws := sandboxDir(t)
	grants := plugin.Capabilities{Subprocess: true, Secrets: []string{"API_KEY"}, Mounts: []plugin.Mount{{HostPath: ws, GuestPath: "/workspace"}}}
	a := newTestAdapter(t, nil)
	h, err := plugin.NewHost(plugin.Options{Grants: grants, Approver: plugin.ApproveAll, Adapters: []plugin.Adapter{a},
		Secrets: plugin.SecretFunc(func(_ context.Context, name string) (string, error) { return hostSecret, nil })})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	spec := plugin.Spec{Name: BuiltinShellExec, Source: plugin.Source{Kind: Kind, Builtin: BuiltinShellExec}, Capabilities: grants}
	if err := h.Load(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]string{"command": "echo " + hostSecret + "; echo " + hostSecret + " >&2"})
	res, err := h.Invoke(t.Context(), plugin.Call{Name: BuiltinShellExec, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.TextContent(); strings.Contains(got, hostSecret) || !strings.Contains(got, "Exit code: 0") {
		t.Fatalf("output %q", got)
	}
}
