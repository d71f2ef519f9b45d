package oauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
)

// The store writes one private file per server URL, whole or not at all,
// and reads back what it wrote; a file for another URL is not taken.
func TestStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "oauth")
	s := NewStore(dir)
	if rec, err := s.Load("https://a.example/mcp"); rec != nil || err != nil {
		t.Fatalf("empty store: %v, %v", rec, err)
	}
	exp := time.Now().Add(time.Hour).Round(time.Second)
	want := &Record{ServerURL: "https://a.example/mcp", Grant: GrantAuthorizationCode, TokenURL: "https://as.example/token",
		ClientID: "c", AccessToken: "at", RefreshToken: "rt", Expiry: exp, Scopes: []string{"read"}}
	// Writers racing: every reader sees a whole record.
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Save(want); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, err := s.Load(want.ServerURL)
	if err != nil || got == nil || got.AccessToken != "at" || !got.Expiry.Equal(exp) {
		t.Fatalf("Load = %+v, %v", got, err)
	}
	fi, err := os.Stat(s.Path(want.ServerURL))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	if di, _ := os.Stat(dir); di.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v, want 0700", di.Mode().Perm())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".token-*")); len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
	// A file that names another URL (copied by hand) is not this server's.
	b, _ := os.ReadFile(s.Path(want.ServerURL))
	os.WriteFile(s.Path("https://b.example/mcp"), b, 0o600)
	if rec, err := s.Load("https://b.example/mcp"); rec != nil || err != nil {
		t.Errorf("took another server's token: %v, %v", rec, err)
	}
	if had, err := s.Delete(want.ServerURL); !had || err != nil {
		t.Errorf("Delete = %v, %v", had, err)
	}
	if had, err := s.Delete(want.ServerURL); had || err != nil {
		t.Errorf("second Delete = %v, %v", had, err)
	}
}

func pemOf(t *testing.T, key any) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// Each key type signs assertions a verifier of its algorithm accepts, with
// the claims RFC 7523 asks for; a key that cannot sign the configured
// algorithm is refused before any request.
func TestClientAssertion(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ec384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	rs, _ := rsa.GenerateKey(rand.Reader, 2048)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	verify := map[string]func(input, sig []byte) bool{
		"ES256": func(in, sig []byte) bool {
			d := crypto.SHA256.New()
			d.Write(in)
			return len(sig) == 64 && ecdsa.Verify(&ec.PublicKey, d.Sum(nil), new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:]))
		},
		"ES384": func(in, sig []byte) bool {
			d := crypto.SHA384.New()
			d.Write(in)
			return len(sig) == 96 && ecdsa.Verify(&ec384.PublicKey, d.Sum(nil), new(big.Int).SetBytes(sig[:48]), new(big.Int).SetBytes(sig[48:]))
		},
		"RS256": func(in, sig []byte) bool {
			d := crypto.SHA256.New()
			d.Write(in)
			return rsa.VerifyPKCS1v15(&rs.PublicKey, crypto.SHA256, d.Sum(nil), sig) == nil
		},
		"PS256": func(in, sig []byte) bool {
			d := crypto.SHA256.New()
			d.Write(in)
			return rsa.VerifyPSS(&rs.PublicKey, crypto.SHA256, d.Sum(nil), sig, nil) == nil
		},
		"EdDSA": func(in, sig []byte) bool { return ed25519.Verify(ed.Public().(ed25519.PublicKey), in, sig) },
	}
	for _, tc := range []struct {
		key      any
		alg      string
		want     string // the algorithm used
		wantFail string
	}{
		{ec, "", "ES256", ""},
		{ec, "ES256", "ES256", ""},
		{ec384, "", "ES384", ""},
		{rs, "", "RS256", ""},
		{rs, "PS256", "PS256", ""},
		{ed, "", "EdDSA", ""},
		{ec, "RS256", "", "signs ES256, not RS256"},
		{rs, "ES256", "", "RSA key cannot sign ES256"},
		// Configured by a library user, unchecked by the config package:
		// refused, not a panic.
		{rs, "R", "", "RSA key cannot sign R"},
		{rs, "RS", "", "unsupported signing algorithm"},
		{rs, "PS2560", "", "unsupported signing algorithm"},
		{rs, "RSA-OAEP", "", "unsupported signing algorithm"},
	} {
		s, err := newSigner(pemOf(t, tc.key), tc.alg)
		if tc.wantFail != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantFail) {
				t.Errorf("%T %q: err = %v, want %q", tc.key, tc.alg, err, tc.wantFail)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%T %q: %v", tc.key, tc.alg, err)
		}
		jwt, err := s.assertion("client-1", "https://as.example", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(jwt, ".")
		hb, _ := base64.RawURLEncoding.DecodeString(parts[0])
		cb, _ := base64.RawURLEncoding.DecodeString(parts[1])
		sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
		var h struct{ Alg string }
		var c struct {
			Iss, Sub, Aud, Jti string
			Exp, Iat           int64
		}
		json.Unmarshal(hb, &h)
		json.Unmarshal(cb, &c)
		if h.Alg != tc.want || !verify[tc.want]([]byte(parts[0]+"."+parts[1]), sig) {
			t.Errorf("%s: alg %s, signature not verified", tc.want, h.Alg)
		}
		if c.Iss != "client-1" || c.Sub != "client-1" || c.Aud != "https://as.example" || c.Jti == "" || c.Exp <= c.Iat {
			t.Errorf("%s: claims %+v", tc.want, c)
		}
	}
	if _, err := newSigner("not a key", ""); err == nil {
		t.Error("a non-PEM key was accepted")
	}
}

// The loopback listener takes the browser's return: the code and state, or
// the authorization server's refusal; it gives up at the login timeout.
func TestFetchCode(t *testing.T) {
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	redirect := "http://127.0.0.1:" + strconv.Itoa(port) + "/cb"
	// back returns to the redirect URL with each query in turn, as
	// browsers (or pages) hitting the loopback port would.
	back := func(queries ...string) Browser {
		return func(ctx context.Context, _ string) error {
			go func() {
				for _, q := range queries {
					resp, err := http.Get(redirect + "?" + q)
					if err == nil {
						resp.Body.Close()
					}
				}
			}()
			return nil
		}
	}
	for _, tc := range []struct {
		name, wantErr string
		queries       []string
		browser       Browser
	}{
		{"code", "", []string{"code=abc&state=xyz"}, nil},
		{"refused", `refused the login: "access_denied" "no"`, []string{"error=access_denied&error_description=no&state=xyz"}, nil},
		// A return with another state (a stale tab, a hostile page) is
		// not this login's: it neither ends the wait nor is taken.
		{"wrong state first", "", []string{"code=evil&state=other", "error=access_denied&state=other", "code=evil", "code=abc&state=xyz"}, nil},
		{"only wrong states", "timed out", []string{"code=evil&state=other", "state=xyz"}, nil},
		{"nobody", "timed out", nil, func(context.Context, string) error { return nil }},
		{"browser fails", "sending the user to log in", nil, func(context.Context, string) error { return errors.New("no display") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.browser
			if b == nil {
				b = back(tc.queries...)
			}
			// Short only where the wait must end by it: a busy machine may
			// take longer than that to make a return's requests.
			wait := 30 * time.Second
			if tc.wantErr == "timed out" {
				wait = 300 * time.Millisecond
			}
			h, err := New(Config{Server: "s", URL: "http://127.0.0.1:1/mcp", RedirectURL: redirect, Browser: b, LoginTimeout: wait})
			if err != nil {
				t.Fatal(err)
			}
			res, err := h.fetchCode(context.Background(), &auth.AuthorizationArgs{URL: "http://as.example/authorize?client_id=c&state=xyz"})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || res.Code != "abc" || res.State != "xyz" {
				t.Fatalf("got %+v, %v", res, err)
			}
		})
	}
	// A hostile authorization server's login page of another scheme is
	// never handed to the Browser (xdg-open would open a local file).
	for _, page := range []string{"file://localhost/etc/passwd?state=xyz", "smb://localhost/share?state=xyz", "javascript:alert(1)"} {
		t.Run("scheme "+page[:strings.Index(page, ":")], func(t *testing.T) {
			sent := false
			h, err := New(Config{Server: "s", URL: "http://127.0.0.1:1/mcp", RedirectURL: redirect,
				Browser: func(context.Context, string) error { sent = true; return nil }, LoginTimeout: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			_, err = h.fetchCode(context.Background(), &auth.AuthorizationArgs{URL: page})
			if err == nil || !strings.Contains(err.Error(), "not an http(s) URL") || sent {
				t.Fatalf("err = %v, browser sent: %v; want the page refused", err, sent)
			}
		})
	}
	// The person gives up (Ctrl-C, the caller's deadline): the wait ends
	// with the context's error, and the loopback port is free again.
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		giveUp := func(context.Context, string) error { cancel(); return nil }
		h, err := New(Config{Server: "s", URL: "http://127.0.0.1:1/mcp", RedirectURL: redirect, Browser: giveUp, LoginTimeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = h.fetchCode(ctx, &auth.AuthorizationArgs{URL: "http://as.example/authorize?state=xyz"})
		if !errors.Is(err, context.Canceled) || time.Since(start) > 10*time.Second {
			t.Fatalf("err = %v after %v, want context.Canceled at once", err, time.Since(start))
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Fatalf("the login's listener outlived it: %v", err)
		}
		ln.Close()
	})
}

// The browser's return is untrusted input (any page can send a browser to
// the loopback port): whatever its query, a code is taken only with this
// login's state, and a return is this login's only with that state.
func FuzzCallback(f *testing.F) {
	for _, seed := range []struct{ query, state string }{
		{"code=abc&state=xyz", "xyz"},
		{"error=access_denied&error_description=no&state=xyz", "xyz"},
		{"code=abc&state=other", "xyz"},
		{"code=&state=", ""},
		{"state=xyz&state=abc&code=1", "abc"},
		{"code=%zz&state=xyz", "xyz"},
		{"iss=https%3A%2F%2Fas.example&code=c&state=s", "s"},
		{";;&&==", ""},
		{"error=x%1b%5b2J&error_description=%1b%5d0%3btitle%07&state=s", "s"},
	} {
		f.Add(seed.query, seed.state)
	}
	f.Fuzz(func(t *testing.T, raw, state string) {
		q, _ := url.ParseQuery(raw) // as r.URL.Query() does: what parses is kept
		a, ok := readCallback(q, state)
		if !ok {
			if a.res != nil || a.err != nil {
				t.Fatalf("refused return with an answer: %+v", a)
			}
			return
		}
		if q.Get("state") != state {
			t.Fatalf("took a return with state %q, want %q", q.Get("state"), state)
		}
		if (a.res == nil) == (a.err == nil) {
			t.Fatalf("want exactly one of a code and an error: %+v", a)
		}
		if a.res != nil && (a.res.Code == "" || a.res.Code != q.Get("code") || a.res.State != state) {
			t.Fatalf("result %+v from %q", a.res, raw)
		}
		if a.err != nil {
			msg := a.err.Error()
			if strings.ContainsFunc(msg, func(r rune) bool { return r < 0x20 || r == 0x7f }) || len(msg) > 600 {
				t.Fatalf("the server's words reach the terminal unescaped or uncut: %q", msg)
			}
		}
	})
}

// A hostile authorization server redirects a token request (a 307 resends
// the client's secret; a 302 turns it into a GET) to a service inside the
// network, or its discovery to a loopback address. No redirect is
// followed there: the service sees no request, and a token comes only
// from the server's own token endpoint.
func TestRedirectsRefused(t *testing.T) {
	var hits atomic.Int32
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"access_token":"stolen","token_type":"Bearer"}`))
	}))
	defer internal.Close()
	redirect := func(code int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, internal.URL+"/inside", code) }
	}
	token := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"access_token":"issued","token_type":"Bearer","expires_in":3600}`))
	}
	for _, tc := range []struct {
		name    string
		routes  map[string]http.HandlerFunc
		wantErr string // "": the token is the server's own
	}{
		{"token 307", map[string]http.HandlerFunc{"POST /token": redirect(http.StatusTemporaryRedirect)}, "redirect refused"},
		{"token 308", map[string]http.HandlerFunc{"POST /token": redirect(http.StatusPermanentRedirect)}, "redirect refused"},
		{"token 302", map[string]http.HandlerFunc{"POST /token": redirect(http.StatusFound)}, "redirect refused"},
		// Resource metadata that cannot be had falls back to the server's
		// origin (2025-03-26); authorization server metadata that cannot
		// be had fails the grant.
		{"resource metadata to loopback", map[string]http.HandlerFunc{
			"GET /.well-known/oauth-protected-resource/mcp": redirect(http.StatusFound),
			"GET /.well-known/oauth-protected-resource":     redirect(http.StatusFound),
			"POST /token": token,
		}, ""},
		{"server metadata to loopback", map[string]http.HandlerFunc{
			"GET /.well-known/oauth-authorization-server": redirect(http.StatusFound),
			"POST /token": token,
		}, "redirect"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits.Store(0)
			mux := http.NewServeMux()
			for pattern, h := range tc.routes {
				mux.HandleFunc(pattern, h)
			}
			as := httptest.NewServer(mux)
			defer as.Close()
			h, err := New(Config{Server: "s", URL: as.URL + "/mcp", Grant: GrantClientCredentials, ClientID: "svc",
				ClientSecret: func(context.Context) (string, error) { return "client-secret", nil }})
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest(http.MethodPost, as.URL+"/mcp", nil)
			resp := &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(""))}
			err = h.Authorize(context.Background(), req, resp)
			if n := hits.Load(); n != 0 {
				t.Errorf("the service inside the network got %d requests", n)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Authorize: %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ts, _ := h.TokenSource(context.Background())
			if tok, err := ts.Token(); err != nil || tok.AccessToken != "issued" {
				t.Fatalf("token %v, %v; want the server's own", tok, err)
			}
		})
	}
}

// Until a usable token is stored, the transport asks for one at every
// request: a corrupt token file is reported once, not at each, and a file
// replaced meanwhile (a login elsewhere) is taken up at the next request.
func TestStoredTokenReadWhenChanged(t *testing.T) {
	store := NewStore(t.TempDir())
	url := "https://mcp.example/mcp"
	if err := os.MkdirAll(store.Dir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(store.Path(url), []byte(`{"server_url": "https://mcp.exa`), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	h, err := New(Config{Server: "s", URL: url, Store: store,
		Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if ts, err := h.TokenSource(context.Background()); ts != nil || err != nil {
			t.Fatalf("TokenSource over a corrupt file = %v, %v", ts, err)
		}
	}
	if n := strings.Count(logs.String(), "cannot read the stored OAuth token"); n != 1 {
		t.Errorf("the corrupt file was reported %d times over 5 requests, want once:\n%s", n, logs.String())
	}
	if err := store.Save(&Record{ServerURL: url, Grant: GrantAuthorizationCode, TokenURL: "https://as.example/token",
		ClientID: "c", AccessToken: "at-new", RefreshToken: "rt", Expiry: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	ts, err := h.TokenSource(context.Background())
	if err != nil || ts == nil {
		t.Fatalf("after a login elsewhere: %v, %v", ts, err)
	}
	if tok, err := ts.Token(); err != nil || tok.AccessToken != "at-new" {
		t.Fatalf("token %v, %v; want the one stored meanwhile", tok, err)
	}
}

// A step-up (403 insufficient_scope) of a client-credentials token asks
// for the challenge's scopes and keeps those granted before, also when
// the token was read from the store by a host that started after it was
// obtained.
func TestClientCredentialsStepUpKeepsStoredScopes(t *testing.T) {
	var asked []string
	var mu sync.Mutex
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/token" {
			http.NotFound(w, r)
			return
		}
		r.ParseForm()
		mu.Lock()
		asked = append(asked, r.PostForm.Get("scope"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"access_token":"at-2","token_type":"Bearer","expires_in":3600}`))
	}))
	defer as.Close()
	store := NewStore(t.TempDir())
	url := as.URL + "/mcp"
	if err := store.Save(&Record{ServerURL: url, Grant: GrantClientCredentials, TokenURL: as.URL + "/token", ClientID: "svc",
		Scopes: []string{"read"}, AccessToken: "at-1", Expiry: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{Server: "s", URL: url, Store: store, Grant: GrantClientCredentials, ClientID: "svc",
		ClientSecret: func(context.Context) (string, error) { return "client-secret", nil }})
	if err != nil {
		t.Fatal(err)
	}
	if ts, _ := h.TokenSource(context.Background()); ts == nil {
		t.Fatal("the stored token was not used")
	}
	req := httptest.NewRequest(http.MethodPost, url, nil)
	req.Header.Set("Authorization", "Bearer at-1")
	resp := &http.Response{StatusCode: http.StatusForbidden, Body: io.NopCloser(strings.NewReader("")),
		Header: http.Header{"Www-Authenticate": {`Bearer error="insufficient_scope", scope="write"`}}}
	if err := h.Authorize(context.Background(), req, resp); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || !slices.Equal(strings.Fields(asked[0]), []string{"write", "read"}) {
		t.Errorf("scopes asked for %q, want \"write read\"", asked)
	}
}

// An unattended handler refused for want of a login says so
// (NeedsLogin) until a token is stored elsewhere; once it takes that
// token, at the next request, it no longer does, so that a later failure
// of another kind is not reported as a missing login.
func TestNeedsLoginClearedByStoredToken(t *testing.T) {
	store := NewStore(t.TempDir())
	url := "https://mcp.example/mcp"
	h, err := New(Config{Server: "s", URL: url, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, url, nil)
	resp := &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(""))}
	if err := h.Authorize(context.Background(), req, resp); !errors.Is(err, ErrLoginRequired) || !h.NeedsLogin() {
		t.Fatalf("Authorize = %v, NeedsLogin %v; want the login error", err, h.NeedsLogin())
	}
	if err := store.Save(&Record{ServerURL: url, Grant: GrantAuthorizationCode, TokenURL: "https://as.example/token",
		ClientID: "c", AccessToken: "at-1", RefreshToken: "rt", Expiry: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if ts, _ := h.TokenSource(context.Background()); ts == nil {
		t.Fatal("the token stored by the login was not taken")
	}
	if h.NeedsLogin() {
		t.Error("NeedsLogin after a stored token was taken")
	}
}

// A token file others can read (copied with the umask's 0644) is used,
// and said once: whoever could read it may hold the token too.
func TestStoredTokenReadableByOthers(t *testing.T) {
	store := NewStore(t.TempDir())
	url := "https://mcp.example/mcp"
	if err := store.Save(&Record{ServerURL: url, Grant: GrantAuthorizationCode, TokenURL: "https://as.example/token",
		ClientID: "c", AccessToken: "at-1", RefreshToken: "rt", Expiry: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(store.Path(url), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	h, err := New(Config{Server: "s", URL: url, Store: store,
		Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		ts, err := h.TokenSource(context.Background())
		if err != nil || ts == nil {
			t.Fatalf("TokenSource = %v, %v", ts, err)
		}
		if tok, err := ts.Token(); err != nil || tok.AccessToken != "at-1" {
			t.Fatalf("token %v, %v", tok, err)
		}
	}
	if n := strings.Count(logs.String(), "readable by other users"); n != 1 {
		t.Errorf("warned %d times, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "-rw-r--r--") {
		t.Errorf("the warning does not give the mode:\n%s", logs.String())
	}
}

// The token file is read back from a directory anyone with the user's
// rights can write: whatever it holds, Load returns this server's record
// or nothing (an error for a file that is not a record), and a record it
// returns is saved and read back unchanged.
func FuzzStoreLoad(f *testing.F) {
	const server = "https://mcp.example/mcp"
	for _, seed := range []string{
		`{"server_url":"https://mcp.example/mcp","grant":"authorization_code","token_url":"https://as.example/token","client_id":"c","access_token":"at","refresh_token":"rt","expiry":"2030-01-02T03:04:05Z","obtained":"2026-01-01T00:00:00Z","scopes":["a","b"]}`,
		`{"server_url":"https://other.example/mcp","access_token":"at"}`,
		`{"server_url":"https://mcp.example/mcp","expiry":"9999-12-31T23:59:59+14:00"}`,
		`{"server_url":"https://mcp.example/mcp","auth_style":-1,"scopes":null}`,
		`{"server_url":"https://mcp.example/mcp"`,
		`null`, `[]`, ``, "\xff\xfe",
	} {
		f.Add([]byte(seed))
	}
	store := NewStore(f.TempDir())
	if err := os.MkdirAll(store.Dir(), 0o700); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, file []byte) {
		if err := os.WriteFile(store.Path(server), file, 0o600); err != nil {
			t.Fatal(err)
		}
		rec, err := store.Load(server)
		if err != nil || rec == nil {
			return
		}
		if rec.ServerURL != server {
			t.Fatalf("took the record of %q", rec.ServerURL)
		}
		rec.Expired(time.Now())
		if err := store.Save(rec); err != nil {
			return // a time JSON cannot carry (a year past 9999 after a zone shift)
		}
		back, err := store.Load(server)
		if err != nil || back == nil {
			t.Fatalf("saved record read back as %v, %v", back, err)
		}
		if back.AccessToken != rec.AccessToken || back.RefreshToken != rec.RefreshToken || back.ClientSecret != rec.ClientSecret ||
			back.TokenURL != rec.TokenURL || !back.Expiry.Equal(rec.Expiry) || !slices.Equal(back.Scopes, rec.Scopes) {
			t.Fatalf("read back %+v, saved %+v", back, rec)
		}
	})
}

// A hostile token endpoint: an endless answer is read to the oauth2
// package's 1 MiB cap and no further, a malformed or empty one is a
// failed grant, and none leaves a token behind.
func TestHostileTokenResponses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  func(w http.ResponseWriter)
		wantErr string
	}{
		{"endless", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"access_token":"`))
			chunk := []byte(strings.Repeat("a", 64<<10))
			for range 1024 { // 64 MiB, unless the client stops reading
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}, "cannot parse json"},
		{"malformed", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"access_token":`))
		}, "cannot parse json"},
		{"no access token", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"token_type":"Bearer","expires_in":3600}`))
		}, "access_token"},
		{"not JSON", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(`<html>hello</html>`))
		}, "cannot parse json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.URL.Path != "/token" {
					http.NotFound(w, r)
					return
				}
				tc.answer(w)
			}))
			defer as.Close()
			read := &countingTransport{base: http.DefaultTransport}
			h, err := New(Config{Server: "s", URL: as.URL + "/mcp", Grant: GrantClientCredentials, ClientID: "svc",
				ClientSecret: func(context.Context) (string, error) { return "client-secret", nil },
				HTTPClient:   &http.Client{Transport: read, CheckRedirect: checkRedirect}})
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest(http.MethodPost, as.URL+"/mcp", nil)
			resp := &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(""))}
			err = h.Authorize(context.Background(), req, resp)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Authorize: %v, want %q", err, tc.wantErr)
			}
			if ts, _ := h.TokenSource(context.Background()); ts != nil || h.Authorized() {
				t.Error("a failed grant left a token source")
			}
			if n := read.most(); n > 1<<20+64<<10 {
				t.Errorf("the client read %d KiB of one answer, want at most the 1 MiB cap", n>>10)
			}
		})
	}
}

// countingTransport records the most bytes its client read of one
// response (the oauth2 package's auto-detected client authentication
// asks twice when the first answer fails).
type countingTransport struct {
	base http.RoundTripper
	mu   sync.Mutex
	max  int64
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if err == nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, t: c}
	}
	return resp, err
}

func (c *countingTransport) most() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.max
}

type countingBody struct {
	io.ReadCloser
	t *countingTransport
	n int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	b.t.mu.Lock()
	b.t.max = max(b.t.max, b.n)
	b.t.mu.Unlock()
	return n, err
}

func TestSecureEndpoint(t *testing.T) {
	for u, want := range map[string]bool{
		"https://as.example/revoke": true,
		"http://127.0.0.1:8080/r":   true,
		"http://[::1]/r":            true,
		"http://localhost/r":        true,
		"http://as.example/revoke":  false,
		"http://10.0.0.1/revoke":    false,
		"ftp://as.example/revoke":   false,
		"javascript:alert(1)":       false,
		"://bad":                    false,
		"http://127.0.0.1.nip.io/r": false,
	} {
		if got := secureEndpoint(u); got != want {
			t.Errorf("secureEndpoint(%q) = %v, want %v", u, got, want)
		}
	}
}

// serveASMetadata serves RFC 8414 metadata for issuer on mux, with the
// authorization and token endpoints under endpoints and the given
// revocation endpoint.
func serveASMetadata(mux *http.ServeMux, issuer, endpoints, revocation string) {
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"issuer":%q,"authorization_endpoint":%q,"token_endpoint":%q,"revocation_endpoint":%q,"response_types_supported":["code"],"code_challenge_methods_supported":["S256"]}`,
			issuer, endpoints+"/authorize", endpoints+"/token", revocation)
	})
}

// A revocation endpoint on another host than the token endpoint that
// issued the token is sent nothing: anyone can publish metadata naming
// someone else's token endpoint beside a revocation endpoint of their own
// (and an MCP server's metadata can point at such an issuer).
func TestRevokeOnlyAtTheTokenEndpointsHost(t *testing.T) {
	var hits atomic.Int32
	mux := http.NewServeMux()
	attacker := httptest.NewServer(mux)
	defer attacker.Close()
	serveASMetadata(mux, attacker.URL, "https://legit.example", attacker.URL+"/revoke")
	mux.HandleFunc("/revoke", func(http.ResponseWriter, *http.Request) { hits.Add(1) })
	store := NewStore(t.TempDir())
	mcpURL := attacker.URL + "/mcp"
	if err := store.Save(&Record{ServerURL: mcpURL, Grant: GrantAuthorizationCode, Issuer: attacker.URL, TokenURL: "https://legit.example/token",
		ClientID: "c", ClientSecret: "cs-secret", AccessToken: "at-secret", RefreshToken: "rt-secret"}); err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{Server: "remote", URL: mcpURL, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	had, rev, err := h.Logout(context.Background())
	if err != nil || !had || rev.Revoked || !errors.Is(rev.Err, ErrNoRevocation) {
		t.Fatalf("logout: had %v, %+v, %v; want ErrNoRevocation", had, rev, err)
	}
	if hits.Load() != 0 {
		t.Errorf("the tokens went to a revocation endpoint on another host (%d requests)", hits.Load())
	}
	if rec, _ := store.Load(mcpURL); rec != nil {
		t.Error("the token is still stored")
	}
}

func TestQuoteCut(t *testing.T) {
	for _, s := range []string{strings.Repeat("\x01", 200), strings.Repeat("é", 300), "\x1b[2Jok", strings.Repeat("\xff", 250)} {
		q := quoteCut(s)
		if len(q) > 210 || strings.ContainsFunc(q, func(r rune) bool { return r < 0x20 || r == 0x7f }) || !utf8.ValidString(q) {
			t.Errorf("quoteCut(%q...) = %q (%d bytes)", s[:min(len(s), 8)], q, len(q))
		}
	}
}

// A client registered for client_secret_post sends its secret in the form;
// a server that refuses and echoes the whole request back gets its words
// quoted on the terminal with the token and the secret taken out.
func TestRevokeRefusedEchoRedacted(t *testing.T) {
	var sawSecret atomic.Bool
	mux := http.NewServeMux()
	as := httptest.NewServer(mux)
	defer as.Close()
	serveASMetadata(mux, as.URL, as.URL, as.URL+"/revoke")
	mux.HandleFunc("/revoke", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		sawSecret.Store(r.PostForm.Get("client_secret") == "cs-secret" && r.PostForm.Get("client_id") == "c")
		http.Error(w, "refused \x1b[2J: "+r.PostForm.Encode(), http.StatusBadRequest)
	})
	store := NewStore(t.TempDir())
	mcpURL := as.URL + "/mcp"
	if err := store.Save(&Record{ServerURL: mcpURL, Grant: GrantAuthorizationCode, Issuer: as.URL, TokenURL: as.URL + "/token",
		AuthStyle: int(oauth2.AuthStyleInParams), ClientID: "c", ClientSecret: "cs-secret", AccessToken: "at-secret", RefreshToken: "rt-secret"}); err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{Server: "remote", URL: mcpURL, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	had, rev, err := h.Logout(context.Background())
	if err != nil || !had || rev.Revoked || rev.Err == nil {
		t.Fatalf("logout: had %v, %+v, %v; want a refusal", had, rev, err)
	}
	msg := rev.Err.Error()
	if !sawSecret.Load() {
		t.Error("the client secret was not sent in the form (client_secret_post)")
	}
	if !strings.Contains(msg, "HTTP 400") || !strings.Contains(msg, "[REDACTED]") ||
		strings.Contains(msg, "rt-secret") || strings.Contains(msg, "cs-secret") || strings.ContainsRune(msg, 0x1b) {
		t.Errorf("reason %q: want HTTP 400, quoted, with the token and secret taken out", msg)
	}
	if rec, _ := store.Load(mcpURL); rec != nil {
		t.Error("the token is still stored")
	}
}

// A revocation endpoint that never answers delays the report by the
// revocation's one deadline, not by one per token; the token is deleted
// all the same.
func TestRevokeHangingEndpoint(t *testing.T) {
	defer func(d time.Duration) { revokeTimeout = d }(revokeTimeout)
	revokeTimeout = 300 * time.Millisecond
	release := make(chan struct{})
	mux := http.NewServeMux()
	as := httptest.NewServer(mux)
	defer as.Close()
	defer close(release) // before Close, which waits for the handler
	serveASMetadata(mux, as.URL, as.URL, as.URL+"/revoke")
	mux.HandleFunc("/revoke", func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	store := NewStore(t.TempDir())
	mcpURL := as.URL + "/mcp"
	if err := store.Save(&Record{ServerURL: mcpURL, Grant: GrantAuthorizationCode, Issuer: as.URL, TokenURL: as.URL + "/token",
		ClientID: "c", AccessToken: "at-secret", RefreshToken: "rt-secret"}); err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{Server: "remote", URL: mcpURL, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	had, rev, err := h.Logout(context.Background())
	took := time.Since(start)
	if err != nil || !had || rev.Revoked || rev.Err == nil || !strings.Contains(rev.Err.Error(), "deadline exceeded") {
		t.Fatalf("logout: had %v, %+v, %v; want the deadline exceeded", had, rev, err)
	}
	if took > 5*time.Second {
		t.Errorf("logout took %v against a %v deadline", took, revokeTimeout)
	}
	if rec, _ := store.Load(mcpURL); rec != nil {
		t.Error("the token is still stored")
	}
}
