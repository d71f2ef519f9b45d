package main

// The client half of the official MCP conformance suite: the suite starts
// a test server per scenario and runs a client command against it, with
// the server's URL as its last argument and the scenario's name in
// MCP_CONFORMANCE_SCENARIO. Here that command is this test binary running
// TestHelperConformanceClient: a host application that points an
// mcp_server block at the URL and does what an agent would through
// toolhost — list what the server offers, then call each tool — so that
// every request the suite sees comes from toolhost's MCP client
// (mcp/client.go), the code `host tools --server` and `host call` use.
// For the auth/ scenarios, the block has the oauth block an operator would
// write from the scenario's context (MCP_CONFORMANCE_CONTEXT: client ID,
// secret, private key), and the host's browser hook (Options.Browser) is
// the application's user: it follows the suite's login page back to the
// host's loopback redirect, as a browser would.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost"
	"github.com/toolhost/toolhost/internal/oauthtest"
	"github.com/toolhost/toolhost/plugin"
)

// conformanceClientEnv makes the test binary run as the client under test
// (TestHelperConformanceClient).
const conformanceClientEnv = "TOOLHOST_TEST_CONFORMANCE_CLIENT"

// TestHelperConformanceClient is not a test: it is the client command the
// conformance suite runs, in the manner of go-plugin's TestHelperProcess.
func TestHelperConformanceClient(t *testing.T) {
	if os.Getenv(conformanceClientEnv) != "1" {
		t.Skip("helper process for TestOfficialConformanceClient")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	url := os.Args[len(os.Args)-1]
	dir, err := os.MkdirTemp("", "toolhost-conformance-client-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := conformanceClient(ctx, dir, url, os.Getenv("MCP_CONFORMANCE_SCENARIO"), os.Stdout, os.Stderr)
	os.RemoveAll(dir)
	os.Exit(code)
}

// conformanceArguments are the arguments the client gives the suite's
// tools; a tool not named here is called with {}.
var conformanceArguments = map[string]string{
	"add_numbers": `{"a": 2, "b": 3}`,
}

// conformanceClient lists the tools of the MCP server at url as
// `host tools --server` does, then calls each through the host's
// pipeline, answering any form the server puts to the user as a user who
// accepts it as shown. It returns the exit status.
func conformanceClient(ctx context.Context, dir, url, scenario string, stdout, stderr io.Writer) int {
	fmt.Fprintf(stderr, "scenario %q, server %s\n", scenario, url)
	auth, err := conformanceOAuth(dir, scenario, os.Getenv("MCP_CONFORMANCE_CONTEXT"))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	// First pass: what does the server offer? The block must list a tool;
	// a name no server offers lists nothing the suite could see.
	offer, code := conformanceHost(ctx, dir, url, auth, []string{"-"}, stdout, stderr, func(h *toolhost.Host) int { return 0 })
	if code != 0 {
		return code
	}
	if len(offer) == 0 {
		return 0
	}
	// Second pass: expose what it offers and call every tool.
	_, code = conformanceHost(ctx, dir, url, auth, offer, stdout, stderr, func(h *toolhost.Host) int {
		status := 0
		for _, tool := range offer {
			args := conformanceArguments[tool]
			if args == "" {
				args = "{}"
			}
			res, err := h.Invoke(ctx, plugin.Call{Name: "suite/" + tool, Arguments: json.RawMessage(args), Client: acceptingUser{}})
			if err != nil {
				fmt.Fprintf(stderr, "call suite/%s: %v\n", tool, err)
				status = 1
				continue
			}
			b, _ := json.Marshal(res)
			fmt.Fprintf(stdout, "suite/%s: %s\n", tool, b)
			if res.IsError {
				status = 1
			}
		}
		return status
	})
	return code
}

// conformanceHost writes a configuration whose mcp_server "suite" points
// at url with the scenario's auth and exposes tools, opens it as the CLI
// does, runs f, and returns the tools the server offers (those toolhost
// accepts) and f's status.
func conformanceHost(ctx context.Context, dir, url string, auth conformanceAuth, tools []string, stdout, stderr io.Writer, f func(*toolhost.Host) int) ([]string, int) {
	quoted := make([]string, len(tools))
	for i, t := range tools {
		quoted[i] = strconv.Quote(t)
	}
	cfg := filepath.Join(dir, "client.hcl")
	hcl := fmt.Sprintf(`host {
  cache_dir = %q
  log_level = "warn"
}

grants {
  capabilities = ["client.sampling", "client.elicitation"]
%s}

mcp_server "suite" {
  url          = %q
  tools        = [%s]
  timeout      = "10s"
  capabilities = ["client.sampling", "client.elicitation"]
%s}
%s`, filepath.Join(dir, "cache"), auth.granted, url, strings.Join(quoted, ", "), auth.block, auth.secrets)
	if err := os.WriteFile(cfg, []byte(hcl), 0o644); err != nil {
		fmt.Fprintln(stderr, err)
		return nil, 1
	}
	a := &app{stdin: strings.NewReader(""), stdout: stdout, stderr: stderr}
	if auth.block != "" {
		// The user of the host application: sent to log in, their
		// browser follows the suite's login page back to the host.
		a.inlineLogin = oauthtest.Browser
	}
	a.g.config = cfg
	h, err := a.open(ctx, nil)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return nil, 1
	}
	defer h.Close()
	st, err := h.MCPServer("suite")
	if err != nil {
		fmt.Fprintln(stderr, err)
		return nil, 1
	}
	if !st.Reachable {
		fmt.Fprintf(stderr, "server not reached: %s\n", st.Reason)
		return nil, 1
	}
	var offer []string
	for _, t := range st.Tools {
		if t.Rejected != "" {
			fmt.Fprintf(stdout, "offered, refused by toolhost: %s (%s)\n", t.Name, t.Rejected)
			continue
		}
		fmt.Fprintf(stdout, "offered: %s\n", t.Name)
		offer = append(offer, t.Name)
	}
	return offer, f(h)
}

// conformanceCIMD is the client ID metadata document URL the suite's
// auth/basic-cimd scenario expects a client to use as its ID.
const conformanceCIMD = "https://conformance-test.local/client-metadata.json"

// conformanceAuth is what the configuration says of an auth/ scenario's
// server: the oauth block of its mcp_server, the secret blocks the oauth
// block names, and the grants line for them.
type conformanceAuth struct{ block, secrets, granted string }

// conformanceOAuth returns, for an auth/ scenario, the oauth block the
// operator would write for the suite's server, and the secret blocks it
// names, and the grants line for them: from the scenario's context (client_id, client_secret,
// private_key_pem, signing_algorithm), the secrets written to files in dir.
// Other scenarios get no oauth block.
func conformanceOAuth(dir, scenario, contextJSON string) (conformanceAuth, error) {
	var none conformanceAuth
	if !strings.HasPrefix(scenario, "auth/") {
		return none, nil
	}
	var c struct {
		ClientID         string `json:"client_id"`
		ClientSecret     string `json:"client_secret"`
		PrivateKeyPEM    string `json:"private_key_pem"`
		SigningAlgorithm string `json:"signing_algorithm"`
	}
	if contextJSON != "" {
		if err := json.Unmarshal([]byte(contextJSON), &c); err != nil {
			return none, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	var b, sec strings.Builder
	b.WriteString("  oauth {\n")
	var names []string
	secret := func(name, value string) error {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(value), 0o600); err != nil {
			return err
		}
		fmt.Fprintf(&sec, "\nsecret %q {\n  file = %q\n}\n", name, p)
		names = append(names, strconv.Quote(name))
		return nil
	}
	if strings.Contains(scenario, "client-credentials") {
		b.WriteString("    grant = \"client_credentials\"\n")
	} else {
		fmt.Fprintf(&b, "    client_id_metadata_url = %q\n", conformanceCIMD)
	}
	if c.ClientID != "" {
		fmt.Fprintf(&b, "    client_id = %q\n", c.ClientID)
	}
	if c.ClientSecret != "" {
		if err := secret("client_secret", c.ClientSecret); err != nil {
			return none, err
		}
		b.WriteString("    client_secret = \"client_secret\"\n")
	}
	if c.PrivateKeyPEM != "" {
		if err := secret("private_key", c.PrivateKeyPEM); err != nil {
			return none, err
		}
		b.WriteString("    private_key = \"private_key\"\n")
		if c.SigningAlgorithm != "" {
			fmt.Fprintf(&b, "    signing_algorithm = %q\n", c.SigningAlgorithm)
		}
	}
	b.WriteString("  }\n")
	auth := conformanceAuth{block: b.String(), secrets: sec.String()}
	if len(names) > 0 {
		auth.granted = fmt.Sprintf("  secrets      = [%s]\n", strings.Join(names, ", "))
	}
	return auth, nil
}

// acceptingUser is the user of the host application: shown a form, it
// submits it as shown (filling nothing in, so the defaults the form
// offers are what the server gets); asked for a completion, it answers
// with a fixed text.
type acceptingUser struct{}

func (acceptingUser) Elicit(ctx context.Context, req *plugin.ElicitRequest) (*plugin.ElicitResult, error) {
	return &plugin.ElicitResult{Action: plugin.ElicitAccept, Content: json.RawMessage(`{}`)}, nil
}

func (acceptingUser) Sample(ctx context.Context, req *plugin.SampleRequest) (*plugin.SampleResult, error) {
	return &plugin.SampleResult{Role: "assistant", Content: plugin.Text("This is a test response from the client."), Model: "conformance-client", StopReason: "endTurn"}, nil
}

// TestOfficialConformanceClient runs every client scenario of the
// official MCP conformance suite (the pinned @modelcontextprotocol/conformance,
// as TestOfficialConformance) with toolhost's MCP client under test: the
// suite starts its server for the scenario and runs this test binary as
// the client (TestHelperConformanceClient). The scenarios toolhost fails
// are listed under client: in testdata/conformance-expected-failures.yml,
// each with its reason (docs/mcp.md); the suite fails the test on any
// other failure, and on a listed scenario that passes.
func TestOfficialConformanceClient(t *testing.T) {
	bin := conformanceBin(t)
	baseline, err := filepath.Abs("testdata/conformance-expected-failures.yml")
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(exe, " \t'\"$`") {
		// The suite splits the command at spaces and runs it in a shell.
		t.Skipf("the test binary's path %q cannot be passed to the suite as a command", exe)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	home := t.TempDir()
	// The clients inherit GORACE from TestMain (internal/raceexit): no
	// second of sleep at each exit under -race.
	env := append(os.Environ(), conformanceClientEnv+"=1", "HOME="+home, "NO_COLOR=1")
	list := exec.CommandContext(ctx, bin, "list")
	list.Env, list.Dir = env, home
	out, err := list.CombinedOutput()
	if err != nil {
		t.Fatalf("conformance list: %v\n%s", err, out)
	}
	scenarios := clientScenarios(string(out))
	if len(scenarios) == 0 {
		t.Fatalf("conformance list names no client scenario:\n%s", out)
	}

	// One run of the suite per scenario would start node 23 times; the
	// auth scenarios run as the suite's auth, backcompat and extensions
	// suites instead, each in one node process (their scenarios in
	// parallel), and the others one by one, three runs at a time.
	var runs [][]string
	for _, s := range scenarios {
		if !strings.HasPrefix(s, "auth/") && s != "sse-retry" {
			runs = append(runs, []string{"--scenario", s})
		}
	}
	runs = append(runs, []string{"--suite", "auth"}, []string{"--suite", "backcompat"}, []string{"--suite", "extensions"})
	command := exe + " -test.run=^TestHelperConformanceClient$ --"
	var mu sync.Mutex
	passed := map[string]bool{}
	// run runs the suite once and returns why it failed ("" when it did
	// not): a failure not in the baseline, or a listed one that passes.
	run := func(which []string) string {
		dir := filepath.Join(t.TempDir(), "results")
		args := append([]string{"client", "--command", command}, which...)
		cmd := exec.CommandContext(ctx, bin, append(args, "--expected-failures", baseline, "--timeout", "30000", "-o", dir)...)
		cmd.Env, cmd.Dir = env, home
		out, err := cmd.CombinedOutput()
		got, rerr := scenarioResults(dir)
		mu.Lock()
		maps.Copy(passed, got)
		mu.Unlock()
		switch {
		case err != nil:
			return fmt.Sprintf("conformance client %s: %v (a failure not in %s, or a listed one that passes):\n%s", strings.Join(which, " "), err, baseline, out)
		case rerr != nil:
			return fmt.Sprintf("conformance client %s: %v\n%s", strings.Join(which, " "), rerr, out)
		}
		return ""
	}
	if slices.Contains(scenarios, "sse-retry") {
		// sse-retry times the client's reconnection to within 200 ms of
		// the server's retry delay: it runs first, alone, and once more
		// when a busy machine made it late.
		if why := run([]string{"--scenario", "sse-retry"}); why != "" {
			t.Logf("sse-retry failed once; running it again:\n%s", why)
			if why := run([]string{"--scenario", "sse-retry"}); why != "" {
				t.Error(why)
			}
		}
	}
	sem := make(chan struct{}, 3)
	var wg sync.WaitGroup
	for _, which := range runs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if why := run(which); why != "" {
				t.Error(why)
			}
		}()
	}
	wg.Wait()

	var ok []string
	for _, s := range scenarios {
		p, ran := passed[s]
		switch {
		case !ran:
			t.Errorf("client scenario %s did not run", s)
		case p:
			ok = append(ok, s)
		}
	}
	t.Logf("official MCP conformance suite: %d of %d client scenarios passed: %s", len(ok), len(scenarios), strings.Join(ok, ", "))
}

// clientScenarios reads the client scenarios from `conformance list`.
func clientScenarios(list string) []string {
	_, after, ok := strings.Cut(list, "Client scenarios")
	if !ok {
		return nil
	}
	var out []string
	for _, line := range strings.Split(after, "\n")[1:] {
		name, ok := strings.CutPrefix(strings.TrimSpace(line), "- ")
		if !ok {
			break
		}
		out = append(out, name)
	}
	return out
}

// resultDir is the name the suite gives a scenario's results: the
// scenario, then the time.
var resultDir = regexp.MustCompile(`^(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$`)

// scenarioResults reads the checks the suite saved under dir, one
// directory per scenario: a scenario passed when none of its checks failed
// or warned, as the suite counts.
func scenarioResults(dir string) (map[string]bool, error) {
	out := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() != "checks.json" {
			return err
		}
		rel, err := filepath.Rel(dir, filepath.Dir(p))
		if err != nil {
			return err
		}
		m := resultDir.FindStringSubmatch(filepath.ToSlash(rel))
		if m == nil {
			return fmt.Errorf("%s: not a scenario's results", rel)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var checks []struct{ Status string }
		if err := json.Unmarshal(b, &checks); err != nil {
			return fmt.Errorf("%s: %v", p, err)
		}
		out[m[1]] = !slices.ContainsFunc(checks, func(c struct{ Status string }) bool {
			return c.Status == "FAILURE" || c.Status == "WARNING"
		})
		return nil
	})
	return out, err
}
