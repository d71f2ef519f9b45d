package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/oauthtest"
	"github.com/toolhost/toolhost/mcp/oauth"
)

// authConfig writes a configuration with a static-header server, an OAuth
// server at url that needs a login, and a client-credentials one, with
// tokens under the test's own cache directory.
func authConfig(t *testing.T, url string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.hcl")
	src := fmt.Sprintf(`host {
  cache_dir = %q
  log_level = "off"
}

grants {
  secrets = ["token", "cc_secret"]
}

secret "token" {
  env = "UNSET_TOOLHOST_TEST_TOKEN"
}

secret "cc_secret" {
  env = "UNSET_TOOLHOST_TEST_CC"
}

mcp_server "plain" {
  url     = "http://127.0.0.1:1/mcp"
  headers = { Authorization = "Bearer $token" }
  secrets = ["token"]
  tools   = ["ping"]
}

mcp_server "remote" {
  url   = %q
  tools = ["ping"]
  oauth {}
}

mcp_server "service" {
  url   = "http://127.0.0.1:1/other"
  tools = ["ping"]
  oauth {
    grant         = "client_credentials"
    client_id     = "svc"
    client_secret = "cc_secret"
  }
}
`, filepath.Join(dir, "cache"), url)
	if err := os.WriteFile(cfg, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// host auth login, end to end: the command prints the login URL, and the
// test's browser does what a browser does with it (GET it without
// following the redirect, then GET the Location: the command's loopback
// listener). Status, a call with the stored token, logout, and the error
// a call meets afterwards are one transcript, compared with a golden file.
func TestCLIAuthLoginEndToEnd(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{Scopes: []string{"tools"}})
	cfg := authConfig(t, srv.URL)
	var opened []string
	run := func(args ...string) cliResult {
		var out, errb bytes.Buffer
		a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errb,
			openTTY: func() (io.ReadWriteCloser, error) { return nil, errors.New("no tty in tests") },
			browser: func(ctx context.Context, authURL string) error {
				opened = append(opened, authURL)
				return oauthtest.Browser(ctx, authURL)
			}}
		code := a.run(context.Background(), append([]string{"--config=" + cfg}, args...))
		return cliResult{code, out.String(), errb.String()}
	}
	var transcript strings.Builder
	for _, step := range []struct {
		args []string
		code int
	}{
		{[]string{"auth", "status"}, 0},
		{[]string{"auth", "login", "remote"}, 0},
		{[]string{"auth", "status"}, 0},
		{[]string{"call", "remote/ping"}, 0},
		{[]string{"auth", "logout", "remote"}, 0},
		{[]string{"auth", "logout", "remote"}, 0},
		{[]string{"call", "remote/ping"}, 1},
		{[]string{"auth", "login", "remote", "--timeout=1x"}, 2},
		{[]string{"auth", "login", "remot"}, 2},
		{[]string{"auth", "login", "plain"}, 2},
	} {
		r := run(step.args...)
		if r.code != step.code {
			t.Errorf("host %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(step.args, " "), r.code, step.code, r.stdout, r.stderr)
		}
		fmt.Fprintf(&transcript, "$ host %s\n--- stdout\n%s--- stderr\n%s", strings.Join(step.args, " "), r.stdout, r.stderr)
	}
	if len(opened) != 1 {
		t.Fatalf("the browser was sent %d times, want once: %v", len(opened), opened)
	}
	if n := srv.Revocations.Load(); n != 2 {
		t.Errorf("host auth logout made %d revocation requests, want 2 (refresh and access token)", n)
	}
	u, err := url.Parse(opened[0])
	if err != nil || u.Query().Get("code_challenge_method") != "S256" || u.Query().Get("resource") != srv.URL {
		t.Errorf("authorization URL %s: want PKCE S256 and resource=%s", opened[0], srv.URL)
	}
	got := transcript.String()
	got = strings.ReplaceAll(got, opened[0], "AUTHORIZATION_URL")
	got = strings.ReplaceAll(got, srv.URL, "SERVER_URL")
	got = strings.ReplaceAll(got, cfg, "CONFIG")
	got = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`).ReplaceAllString(got, "TIME")
	checkGolden(t, "auth_login", got)
}

// Nobody comes back from the login page: the command gives up at its
// timeout, saying so, and stores nothing.
func TestCLIAuthLoginTimeout(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{})
	cfg := authConfig(t, srv.URL)
	var out, errb bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errb,
		browser: func(context.Context, string) error { return nil }} // a user who never logs in
	code := a.run(context.Background(), []string{"--config=" + cfg, "auth", "login", "remote", "--timeout=300ms"})
	if code != exitUsage || !strings.Contains(errb.String(), "no login to remote within 300ms") {
		t.Fatalf("exit %d, stderr:\n%s", code, errb.String())
	}
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(cfg), "cache", "oauth", "*.json"))
	if len(files) != 0 {
		t.Errorf("a token was stored: %v", files)
	}
}

// A corrupt token file (a disk filled mid-write by another tool, an edit
// by hand) is reported on its server's line; the other servers' states
// are listed as ever, and the host goes on as if it were not there.
func TestCLIAuthStatusCorruptTokenFile(t *testing.T) {
	url := "http://127.0.0.1:1/mcp"
	cfg := authConfig(t, url)
	store := oauth.NewStore(filepath.Join(filepath.Dir(cfg), "cache", "oauth"))
	if err := os.MkdirAll(store.Dir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(store.Path(url), []byte(`{"server_url": "http://127.0.0.1:1/mc`), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}
	if code := a.run(context.Background(), []string{"--config=" + cfg, "auth", "status"}); code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errb.String())
	}
	for _, want := range []string{
		"remote   authorization_code  needs login: run `host auth login remote` (its token file is unreadable, and ignored: token store: ",
		"service  client_credentials  no token yet, fetched on first use",
		"plain    -                   none (no oauth block)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
}
