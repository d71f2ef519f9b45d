package toolhost_test

// OAuth for mcp_server blocks, end to end with real parts: a configuration
// file, toolhost.Open, the pipeline, and an authorization server with an
// MCP server it protects on 127.0.0.1 (internal/oauthtest).

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost"
	"github.com/toolhost/toolhost/internal/oauthtest"
	"github.com/toolhost/toolhost/mcp/oauth"
	"github.com/toolhost/toolhost/plugin"
)

// oauthConfig is a configuration whose mcp_server "remote" at url has the
// given oauth block body, with its token store under cache.
func oauthConfig(t *testing.T, cache, url, oauthBody, extra string) string {
	t.Helper()
	return writeConfig(t, fmt.Sprintf(`host {
  log_level = "off"
  cache_dir = %q
}
%s
mcp_server "remote" {
  url   = %q
  tools = ["whoami", "ping"]
  oauth {
%s
  }
}
`, cache, extra, url, oauthBody))
}

// countingBrowser is oauthtest.Browser, counting the logins it made.
func countingBrowser(n *atomic.Int32) oauth.Browser {
	return func(ctx context.Context, authURL string) error {
		n.Add(1)
		return oauthtest.Browser(ctx, authURL)
	}
}

func openHost(t *testing.T, cfg string, browser oauth.Browser) *toolhost.Host {
	t.Helper()
	h, err := toolhost.Open(context.Background(), toolhost.Options{ConfigFile: cfg, Browser: browser})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func call(t *testing.T, h *toolhost.Host, tool string) (string, error) {
	t.Helper()
	res, err := h.Invoke(context.Background(), plugin.Call{Name: tool, Arguments: json.RawMessage(`{}`)})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range res.Content {
		b.WriteString(c.Text)
	}
	return b.String(), nil
}

// tokenFile returns the one token file in cache's store, checking it is
// private.
func tokenFile(t *testing.T, cache string) (string, oauth.Record) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(cache, "oauth", "*.json"))
	if err != nil || len(files) != 1 {
		t.Fatalf("token files: %v, %v; want one", files, err)
	}
	fi, err := os.Stat(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	if di, _ := os.Stat(filepath.Dir(files[0])); di.Mode().Perm() != 0o700 {
		t.Errorf("token directory mode %v, want 0700", di.Mode().Perm())
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var rec oauth.Record
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	return files[0], rec
}

// loggedIn starts an authorization server with opts and a host whose
// token store is under cache; the host logs in (oauthtest.Browser) and
// calls remote/ping once.
func loggedIn(t *testing.T, opts oauthtest.Options) (srv *oauthtest.Server, cache, cfg string, h *toolhost.Host) {
	t.Helper()
	srv = oauthtest.Start(t, opts)
	cache = t.TempDir()
	cfg = oauthConfig(t, cache, srv.URL, "", "")
	h = openHost(t, cfg, oauthtest.Browser)
	if _, err := call(t, h, "remote/ping"); err != nil {
		t.Fatal(err)
	}
	return srv, cache, cfg, h
}

// A 401 from the server leads, through its metadata, to the authorization
// server; the client registers itself (DCR) and the application's browser
// hook logs the user in with PKCE. The token is stored 0600, redacted from
// the tool's output, and a second host uses it without a new login.
func TestOAuthLoginDiscoveryDCRAndReuse(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{Scopes: []string{"tools"}})
	cache := t.TempDir()
	cfg := oauthConfig(t, cache, srv.URL, "", "")
	var logins atomic.Int32
	h := openHost(t, cfg, countingBrowser(&logins))
	out, err := call(t, h, "remote/whoami")
	if err != nil {
		t.Fatal(err)
	}
	_, rec := tokenFile(t, cache)
	if rec.AccessToken == "" || rec.RefreshToken == "" || rec.ServerURL != srv.URL || !strings.HasPrefix(rec.ClientID, "dcr-") {
		t.Fatalf("stored record %+v", rec)
	}
	if strings.Contains(out, rec.AccessToken) || !strings.Contains(out, "[REDACTED:oauth_access_token]") {
		t.Errorf("output %q: want the access token redacted", out)
	}
	if logins.Load() != 1 || srv.Logins.Load() != 1 || srv.Registrations.Load() != 1 {
		t.Errorf("browser logins %d, server logins %d, registrations %d; want 1, 1, 1", logins.Load(), srv.Logins.Load(), srv.Registrations.Load())
	}
	if len(rec.Scopes) != 1 || rec.Scopes[0] != "tools" {
		t.Errorf("granted scopes %v, want [tools] (from the resource's metadata)", rec.Scopes)
	}
	h.Close()

	// A second host, with nobody to log in: the stored token serves.
	h2 := openHost(t, cfg, nil)
	if out, err := call(t, h2, "remote/ping"); err != nil || out != "pong" {
		t.Fatalf("second host: %q, %v", out, err)
	}
	if srv.Logins.Load() != 1 || srv.Registrations.Load() != 1 {
		t.Errorf("the second host logged in again: %d logins, %d registrations", srv.Logins.Load(), srv.Registrations.Load())
	}
}

// A pre-registered client logs in with its configured ID and secret (no
// registration); the secret stays in its secret, out of the token file.
func TestOAuthPreregisteredClient(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{NoRegistration: true, Clients: map[string]oauthtest.Client{"app": {Secret: "s3cret-client-value"}}})
	cache := t.TempDir()
	t.Setenv("TEST_CLIENT_SECRET", "s3cret-client-value")
	cfg := oauthConfig(t, cache, srv.URL, `    client_id     = "app"
    client_secret = "client_secret"`, `
grants {
  secrets = ["client_secret"]
}

secret "client_secret" {
  env = "TEST_CLIENT_SECRET"
}
`)
	h := openHost(t, cfg, oauthtest.Browser)
	if out, err := call(t, h, "remote/ping"); err != nil || out != "pong" {
		t.Fatalf("call: %q, %v", out, err)
	}
	file, rec := tokenFile(t, cache)
	if rec.ClientID != "app" || srv.Registrations.Load() != 0 {
		t.Errorf("client %q, %d registrations; want the pre-registered client", rec.ClientID, srv.Registrations.Load())
	}
	if b, _ := os.ReadFile(file); strings.Contains(string(b), "s3cret-client-value") {
		t.Errorf("the token file holds the configured client secret:\n%s", b)
	}
}

// An expired access token is refreshed with the refresh token, and the
// new one stored; a second host refreshes from the file.
func TestOAuthRefreshOnExpiry(t *testing.T) {
	// Under 10s, the oauth2 package takes a token as expired at once.
	srv, cache, cfg, h := loggedIn(t, oauthtest.Options{TokenTTL: 2 * time.Second})
	_, first := tokenFile(t, cache)
	if srv.Refreshes.Load() == 0 {
		t.Fatal("no refresh: the short-lived token should have been refreshed before use")
	}
	h.Close()
	h2 := openHost(t, cfg, nil)
	if out, err := call(t, h2, "remote/ping"); err != nil || out != "pong" {
		t.Fatalf("second host: %q, %v", out, err)
	}
	_, second := tokenFile(t, cache)
	if second.AccessToken == first.AccessToken || second.RefreshToken == first.RefreshToken {
		t.Error("the refreshed (rotated) tokens were not stored")
	}
	if srv.Logins.Load() != 1 {
		t.Errorf("%d logins, want 1: refreshing needs none", srv.Logins.Load())
	}
}

// Unattended (no browser hook, as host serve), a server that needs a login
// makes its tools unavailable with an error that says what to run; a
// login made elsewhere afterwards is picked up without a restart.
func TestOAuthUnattendedNeedsLogin(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{})
	cache := t.TempDir()
	cfg := oauthConfig(t, cache, srv.URL, "", "")
	h := openHost(t, cfg, nil)
	_, err := call(t, h, "remote/ping")
	var pe *plugin.Error
	if !errors.As(err, &pe) || pe.Code != plugin.CodeToolUnavailable || !strings.Contains(err.Error(), "run `host auth login remote`") {
		t.Fatalf("err = %v, want TOOL_UNAVAILABLE saying to run host auth login remote", err)
	}
	var lre *oauth.LoginRequiredError
	if !errors.Is(err, oauth.ErrLoginRequired) || !errors.As(err, &lre) || lre.Server != "remote" {
		t.Errorf("err = %v: want errors.Is ErrLoginRequired and a *LoginRequiredError for remote, for embedders", err)
	}
	if srv.Registrations.Load() != 0 || srv.Logins.Load() != 0 {
		t.Errorf("an unattended host registered (%d) or logged in (%d)", srv.Registrations.Load(), srv.Logins.Load())
	}
	for _, ti := range h.Tools() {
		if ti.Descriptor.Name == "remote/ping" && (ti.Available || !strings.Contains(ti.Unavailable, "host auth login remote")) {
			t.Errorf("listed as available=%v, %q", ti.Available, ti.Unavailable)
		}
	}
	// Another process logs in (host auth login).
	c, err := toolhost.LoadConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := toolhost.Login(context.Background(), c, "remote", oauthtest.Browser, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, err := call(t, h, "remote/ping")
		if err == nil && out == "pong" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the running host did not take up the stored token: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Client credentials need nobody: the client's secret (basic) or its
// private key (private_key_jwt, ES256) gets the token, unattended.
func TestOAuthClientCredentials(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TEST_CC_SECRET", "cc-secret-value")
	for _, tc := range []struct {
		name, block string
	}{
		{"secret_basic", `    grant         = "client_credentials"
    client_id     = "svc"
    client_secret = "cred"`},
		{"private_key_jwt", `    grant             = "client_credentials"
    client_id         = "jwt-svc"
    private_key       = "cred"
    signing_algorithm = "ES256"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := oauthtest.Start(t, oauthtest.Options{TokenTTL: 2 * time.Second, Clients: map[string]oauthtest.Client{
				"svc": {Secret: "cc-secret-value"}, "jwt-svc": {PublicKey: &key.PublicKey},
			}})
			cache := t.TempDir()
			source := `env = "TEST_CC_SECRET"`
			if strings.Contains(tc.block, "private_key") {
				source = fmt.Sprintf("file = %q", keyFile)
			}
			cfg := oauthConfig(t, cache, srv.URL, tc.block, fmt.Sprintf(`
grants {
  secrets = ["cred"]
}

secret "cred" {
  %s
}
`, source))
			h := openHost(t, cfg, nil)
			out, err := call(t, h, "remote/whoami")
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(out, "at-") || !strings.Contains(out, "[REDACTED:oauth_access_token]") {
				t.Errorf("output %q: want the token redacted", out)
			}
			// The 2s token is taken as expired: the next call fetches another.
			if _, err := call(t, h, "remote/ping"); err != nil {
				t.Fatal(err)
			}
			if n := srv.ClientGrants.Load(); n < 2 {
				t.Errorf("%d client-credentials grants, want a new token after expiry", n)
			}
			if srv.Logins.Load() != 0 {
				t.Error("client credentials ran a login")
			}
			_, rec := tokenFile(t, cache)
			// Logging out revokes the token, the client authenticating
			// as it does for tokens (its secret, or an assertion).
			had, rev, err := toolhost.Logout(context.Background(), h.Config, "remote", hclog.NewNullLogger())
			if err != nil || !had || !rev.Revoked {
				t.Fatalf("logout: had %v, %+v, %v; want the token revoked", had, rev, err)
			}
			if srv.Revocations.Load() != 1 || srv.Valid(rec.AccessToken) {
				t.Errorf("%d revocation requests, the access token still valid: %v", srv.Revocations.Load(), srv.Valid(rec.AccessToken))
			}
		})
	}
}

// Logging out revokes the refresh token and the access token at the
// authorization server (RFC 7009; the client registered itself, and
// authenticates with the secret it got) and deletes the stored token. A
// server with no revocation endpoint, or whose metadata no longer names
// the token endpoint that issued the token, is sent nothing: the token is
// deleted all the same, and the reason given.
func TestOAuthLogoutRevokes(t *testing.T) {
	ctx := context.Background()
	log := hclog.NewNullLogger()
	srv, cache, _, h := loggedIn(t, oauthtest.Options{})
	file, rec := tokenFile(t, cache)
	had, rev, err := toolhost.Logout(ctx, h.Config, "remote", log)
	if err != nil || !had || !rev.Revoked || rev.Err != nil {
		t.Fatalf("logout: had %v, %+v, %v; want the token revoked", had, rev, err)
	}
	if srv.Revocations.Load() != 2 || srv.Valid(rec.AccessToken) {
		t.Errorf("%d tokens revoked (want requests for the refresh and the access token); access token still valid: %v", srv.Revocations.Load(), srv.Valid(rec.AccessToken))
	}
	if _, err := os.Stat(file); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("token file after logout: %v", err)
	}
	if had, _, err := toolhost.Logout(ctx, h.Config, "remote", log); had || err != nil {
		t.Errorf("second logout: had %v, %v; want nothing to do", had, err)
	}

	srv, cache, _, h = loggedIn(t, oauthtest.Options{NoRevocation: true})
	file, rec = tokenFile(t, cache)
	had, rev, err = toolhost.Logout(ctx, h.Config, "remote", log)
	if err != nil || !had || rev.Revoked || !errors.Is(rev.Err, oauth.ErrNoRevocation) {
		t.Fatalf("logout without revocation: had %v, %+v, %v; want ErrNoRevocation", had, rev, err)
	}
	if _, err := os.Stat(file); !errors.Is(err, fs.ErrNotExist) || !srv.Valid(rec.AccessToken) {
		t.Errorf("without revocation: token file %v, access token valid %v; want deleted here, valid there", err, srv.Valid(rec.AccessToken))
	}

	srv, cache, _, h = loggedIn(t, oauthtest.Options{})
	file, rec = tokenFile(t, cache)
	rec.TokenURL = "https://elsewhere.example/token"
	b, _ := json.Marshal(rec)
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	had, rev, err = toolhost.Logout(ctx, h.Config, "remote", log)
	if err != nil || !had || rev.Revoked || !errors.Is(rev.Err, oauth.ErrNoRevocation) || !strings.Contains(rev.Err.Error(), "elsewhere.example") {
		t.Fatalf("logout of a token from another server: had %v, %+v, %v; want ErrNoRevocation naming its token endpoint", had, rev, err)
	}
	if srv.Revocations.Load() != 0 {
		t.Errorf("a token issued elsewhere was sent to this server's revocation endpoint (%d revoked)", srv.Revocations.Load())
	}
	if strings.Contains(rev.Err.Error(), rec.AccessToken) || strings.Contains(rev.Err.Error(), rec.RefreshToken) {
		t.Errorf("the reason names a token: %v", rev.Err)
	}
}

// A token the server no longer accepts, with a refresh token it refused
// too, leads an unattended host to the login error, not to a failure
// that names the token.
func TestOAuthRevokedTokenNeedsLogin(t *testing.T) {
	srv, cache, cfg, h := loggedIn(t, oauthtest.Options{})
	_, rec := tokenFile(t, cache)
	h.Close()
	srv.RevokeAll()
	h2 := openHost(t, cfg, nil)
	_, err := call(t, h2, "remote/ping")
	if err == nil || !strings.Contains(err.Error(), "host auth login remote") {
		t.Fatalf("err = %v, want the login error", err)
	}
	if strings.Contains(err.Error(), rec.AccessToken) || strings.Contains(err.Error(), rec.RefreshToken) {
		t.Errorf("the error names a token: %v", err)
	}
}

// No token the server issued appears in a result, an error, the audit log
// or the host's log (at trace level).
func TestOAuthTokensNeverLeak(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{TokenTTL: 2 * time.Second}) // refreshed: more tokens in play
	cache := t.TempDir()
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	cfg := oauthConfig(t, cache, srv.URL, "", "")
	src, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	src = []byte(strings.Replace(string(src), `tools = ["whoami", "ping"]`, `tools = ["whoami", "ping", "fail"]`, 1))
	src = []byte(strings.Replace(string(src), "host {", fmt.Sprintf("host {\n  audit_log = %q", audit), 1))
	if err := os.WriteFile(cfg, src, 0o600); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Trace, Output: &syncWriter{w: &logs}})
	h, err := toolhost.Open(context.Background(), toolhost.Options{ConfigFile: cfg, Browser: oauthtest.Browser, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	var seen strings.Builder
	for _, tool := range []string{"remote/whoami", "remote/fail", "remote/whoami"} {
		res, err := h.Invoke(context.Background(), plugin.Call{Name: tool, Arguments: json.RawMessage(`{}`)})
		if err != nil {
			seen.WriteString(err.Error())
			continue
		}
		b, _ := json.Marshal(res)
		seen.Write(b)
	}
	h.Close()
	if !strings.Contains(seen.String(), "[REDACTED:oauth_access_token") {
		t.Errorf("no redaction marker in what the caller saw: %s", seen.String())
	}
	auditLines, _ := os.ReadFile(audit)
	if len(auditLines) == 0 {
		t.Fatal("no audit lines")
	}
	issued := srv.Issued()
	if len(issued) < 3 {
		t.Fatalf("%d tokens issued; want refreshes to have issued more", len(issued))
	}
	for _, tok := range issued {
		for where, text := range map[string]string{"results and errors": seen.String(), "audit log": string(auditLines), "log": logs.String()} {
			if strings.Contains(text, tok) {
				t.Errorf("%s holds the token %s", where, tok)
			}
		}
	}
}

// syncWriter lets the logger write from the adapter's goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// With the browser hook, a 401 during a call (the server revoked the
// token and its refresh token) runs the login in-line, and the call
// succeeds.
func TestOAuthLoginDuringCall(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{})
	cfg := oauthConfig(t, t.TempDir(), srv.URL, "", "")
	var logins atomic.Int32
	h := openHost(t, cfg, countingBrowser(&logins))
	if _, err := call(t, h, "remote/ping"); err != nil {
		t.Fatal(err)
	}
	srv.RevokeAll()
	if out, err := call(t, h, "remote/ping"); err != nil || out != "pong" {
		t.Fatalf("call after revocation: %q, %v", out, err)
	}
	if logins.Load() != 2 {
		t.Errorf("%d logins, want 2 (at load, then during the call)", logins.Load())
	}
}

// A server that drops access tokens before their expiry but honors the
// refresh token: an unattended host refreshes and goes on, no login.
func TestOAuthRefusedTokenRefreshed(t *testing.T) {
	srv, _, cfg, h := loggedIn(t, oauthtest.Options{})
	h.Close()
	h2 := openHost(t, cfg, nil)
	if _, err := call(t, h2, "remote/ping"); err != nil {
		t.Fatal(err)
	}
	srv.RevokeAccess()
	if out, err := call(t, h2, "remote/ping"); err != nil || out != "pong" {
		t.Fatalf("after the server dropped the access token: %q, %v", out, err)
	}
	if srv.Refreshes.Load() != 1 || srv.Logins.Load() != 1 {
		t.Errorf("%d refreshes, %d logins; want 1 and 1", srv.Refreshes.Load(), srv.Logins.Load())
	}
}

// An application without an in-line browser hook logs its user in on
// demand (Host.LoginMCPServer); the server's tools work from the next call.
func TestOAuthHostLoginOnDemand(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{})
	cfg := oauthConfig(t, t.TempDir(), srv.URL, "", "")
	h := openHost(t, cfg, nil)
	if _, err := call(t, h, "remote/ping"); err == nil || !strings.Contains(err.Error(), "needs a login") {
		t.Fatalf("before the login: err = %v, want the login error", err)
	}
	if err := h.LoginMCPServer(context.Background(), "remote", oauthtest.Browser); err != nil {
		t.Fatal(err)
	}
	if out, err := call(t, h, "remote/ping"); err != nil || out != "pong" {
		t.Fatalf("after the login: %q, %v", out, err)
	}
	if err := h.LoginMCPServer(context.Background(), "nope", oauthtest.Browser); err == nil || !strings.Contains(err.Error(), `no mcp_server "nope"`) {
		t.Errorf("unknown server: %v", err)
	}
}
