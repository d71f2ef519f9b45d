// Package oauthtest runs, on 127.0.0.1, an OAuth authorization server and
// an MCP server it protects, for tests of toolhost's MCP client: real HTTP,
// the SDK's own bearer-token middleware and protected resource metadata,
// and an authorization server strict about what a client must get right
// (registered redirect URIs, PKCE S256, the resource parameter, client
// authentication by secret or signed assertion, refresh-token rotation).
//
// Its login page logs the user in at once and redirects to the client's
// redirect URI with the code, as the conformance suite's does: a test's
// "browser" GETs the authorization URL without following the redirect,
// then GETs the Location, which is exactly what a browser would do.
package oauthtest

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Client is a pre-registered client.
type Client struct {
	// Secret authenticates it (client_secret_basic or _post); PublicKey,
	// instead, verifies its ES256 assertions (private_key_jwt).
	Secret    string
	PublicKey *ecdsa.PublicKey
}

// Options configure Start.
type Options struct {
	// TokenTTL is the access tokens' lifetime (default 1h). Under 10s the
	// client's oauth2 package counts a token as expired at once, and
	// refreshes it before each use.
	TokenTTL time.Duration
	// Clients are pre-registered, by client ID.
	Clients map[string]Client
	// NoRegistration turns dynamic client registration off.
	NoRegistration bool
	// Scopes are the scopes the MCP server requires (and names in its
	// metadata).
	Scopes []string
	// NoRevocation leaves token revocation (RFC 7009) out.
	NoRevocation bool
}

// Server is a running authorization server and protected MCP server.
type Server struct {
	// URL is the MCP endpoint; Issuer the authorization server.
	URL, Issuer string

	// Logins, Registrations, Refreshes and ClientGrants count the
	// authorization requests, registrations, refresh grants and client
	// credentials grants served.
	Logins, Registrations, Refreshes, ClientGrants atomic.Int32
	// Revocations counts the requests the revocation endpoint accepted.
	Revocations atomic.Int32

	opts Options
	mu   sync.Mutex
	// clients: pre-registered and registered; redirects: registered
	// redirect URIs of registered clients.
	clients   map[string]Client
	redirects map[string][]string
	codes     map[string]grant
	access    map[string]grant
	refresh   map[string]grant
	issued    []string
}

// grant is what a code or token was issued for.
type grant struct {
	client, redirect, challenge, resource string
	scopes                                []string
	expiry                                time.Time
}

// Start runs a server until the test ends. Its MCP server offers
// "whoami", which answers with the bearer token it was called with, and
// "fail", which fails naming it (so that tests can check that toolhost
// redacts it), and "ping".
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.TokenTTL <= 0 {
		opts.TokenTTL = time.Hour
	}
	s := &Server{opts: opts, clients: map[string]Client{}, redirects: map[string][]string{},
		codes: map[string]grant{}, access: map[string]grant{}, refresh: map[string]grant{}}
	for id, c := range opts.Clients {
		s.clients[id] = c
	}
	mcpServer := sdk.NewServer(&sdk.Implementation{Name: "oauthtest", Version: "1"}, nil)
	mcpServer.AddTool(&sdk.Tool{Name: "whoami", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		tok := ""
		if ti := req.Extra.TokenInfo; ti != nil {
			tok, _ = ti.Extra["token"].(string)
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "called with token " + tok}}}, nil
	})
	mcpServer.AddTool(&sdk.Tool{Name: "fail", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		tok, _ := req.Extra.TokenInfo.Extra["token"].(string)
		return nil, fmt.Errorf("refused: token %s is not welcome here", tok)
	})
	mcpServer.AddTool(&sdk.Tool{Name: "ping", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "pong"}}}, nil
	})
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	s.Issuer, s.URL = hs.URL, hs.URL+"/mcp"
	prmURL := hs.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: s.URL, AuthorizationServers: []string{s.Issuer}, ScopesSupported: opts.Scopes,
	}))
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return mcpServer }, nil)
	mux.Handle("/mcp", auth.RequireBearerToken(s.verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prmURL, Scopes: opts.Scopes})(mcpHandler))
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.metadata)
	mux.HandleFunc("GET /authorize", s.authorize)
	mux.HandleFunc("POST /token", s.token)
	if !opts.NoRegistration {
		mux.HandleFunc("POST /register", s.register)
	}
	if !opts.NoRevocation {
		mux.HandleFunc("POST /revoke", s.revoke)
	}
	return s
}

// RevokeAll forgets every token issued, as a server does after a
// password change: the next request gets a 401 and refreshing fails.
func (s *Server) RevokeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.access, s.refresh = map[string]grant{}, map[string]grant{}
}

// Issued returns every access and refresh token the server has issued.
func (s *Server) Issued() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.issued)
}

// RevokeAccess forgets the access tokens issued, and keeps the refresh
// tokens, as a server that lost its sessions does.
func (s *Server) RevokeAccess() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.access = map[string]grant{}
}

func (s *Server) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	s.mu.Lock()
	g, ok := s.access[token]
	s.mu.Unlock()
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	// One user, whichever client logged them in: a login after a
	// revocation (with a newly registered client) keeps their sessions.
	return &auth.TokenInfo{Scopes: g.scopes, Expiration: g.expiry, UserID: "user", Extra: map[string]any{"token": token}}, nil
}

func (s *Server) metadata(w http.ResponseWriter, _ *http.Request) {
	m := map[string]any{
		"issuer":                                           s.Issuer,
		"authorization_endpoint":                           s.Issuer + "/authorize",
		"token_endpoint":                                   s.Issuer + "/token",
		"response_types_supported":                         []string{"code"},
		"grant_types_supported":                            []string{"authorization_code", "refresh_token", "client_credentials"},
		"code_challenge_methods_supported":                 []string{"S256"},
		"token_endpoint_auth_methods_supported":            []string{"client_secret_basic", "none", "private_key_jwt"},
		"token_endpoint_auth_signing_alg_values_supported": []string{"ES256"},
	}
	if !s.opts.NoRegistration {
		m["registration_endpoint"] = s.Issuer + "/register"
	}
	if !s.opts.NoRevocation {
		m["revocation_endpoint"] = s.Issuer + "/revoke"
	}
	writeJSON(w, http.StatusOK, m)
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	client, redirect := q.Get("client_id"), q.Get("redirect_uri")
	s.mu.Lock()
	_, known := s.clients[client]
	registered := s.redirects[client]
	s.mu.Unlock()
	switch {
	case !known:
		http.Error(w, "unknown client", http.StatusBadRequest)
		return
	case registered != nil && !slices.Contains(registered, redirect), !strings.HasPrefix(redirect, "http://127.0.0.1:"):
		http.Error(w, "redirect_uri not registered", http.StatusBadRequest)
		return
	case q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		http.Error(w, "want response_type=code with a PKCE S256 challenge", http.StatusBadRequest)
		return
	case q.Get("resource") != s.URL:
		http.Error(w, "want resource="+s.URL, http.StatusBadRequest)
		return
	}
	s.Logins.Add(1)
	code := random()
	s.mu.Lock()
	s.codes[code] = grant{client: client, redirect: redirect, challenge: q.Get("code_challenge"), resource: q.Get("resource"), scopes: strings.Fields(q.Get("scope"))}
	s.mu.Unlock()
	u, _ := url.Parse(redirect)
	v := u.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	u.RawQuery = v.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

// clientOf authenticates the token request's client: HTTP Basic, form
// parameters, or a signed assertion; a registered public client gives
// only its ID.
func (s *Server) clientOf(r *http.Request) (string, error) {
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	s.mu.Lock()
	c, ok := s.clients[id]
	s.mu.Unlock()
	switch {
	case !ok:
		return "", fmt.Errorf("unknown client %q", id)
	case r.PostForm.Get("client_assertion") != "":
		if c.PublicKey == nil {
			return "", errors.New("the client has no key")
		}
		if r.PostForm.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
			return "", errors.New("bad client_assertion_type")
		}
		return id, s.checkAssertion(r.PostForm.Get("client_assertion"), id, c.PublicKey)
	case c.Secret != "" && secret != c.Secret:
		return "", errors.New("bad client secret")
	case c.Secret == "" && c.PublicKey != nil:
		return "", errors.New("the client must authenticate with an assertion")
	}
	return id, nil
}

// checkAssertion verifies an ES256 JWT: signature, iss = sub = client,
// aud = the issuer, not expired.
func (s *Server) checkAssertion(jwt, client string, key *ecdsa.PublicKey) error {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return errors.New("assertion: not a JWS")
	}
	var header struct{ Alg string }
	var claims struct {
		Iss, Sub, Aud, Jti string
		Exp                int64
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	cb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err := errors.Join(err1, err2, err3, json.Unmarshal(hb, &header), json.Unmarshal(cb, &claims)); err != nil {
		return fmt.Errorf("assertion: %v", err)
	}
	if header.Alg != "ES256" || len(sig) != 64 {
		return fmt.Errorf("assertion: alg %s", header.Alg)
	}
	d := crypto.SHA256.New()
	d.Write([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(key, d.Sum(nil), new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return errors.New("assertion: bad signature")
	}
	switch {
	case claims.Iss != client || claims.Sub != client:
		return errors.New("assertion: iss and sub must be the client")
	case strings.TrimSuffix(claims.Aud, "/") != s.Issuer:
		return fmt.Errorf("assertion: aud %q is not the issuer", claims.Aud)
	case time.Unix(claims.Exp, 0).Before(time.Now()) || claims.Jti == "":
		return errors.New("assertion: expired or no jti")
	}
	return nil
}

// authenticate parses a token or revocation request's form and
// authenticates its client, or answers the error itself.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (string, bool) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return "", false
	}
	client, err := s.clientOf(r)
	if err != nil {
		oauthError(w, http.StatusUnauthorized, "invalid_client", err.Error())
		return "", false
	}
	return client, true
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	client, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	f := r.PostForm
	s.mu.Lock()
	defer s.mu.Unlock()
	var g grant
	withRefresh := true
	switch f.Get("grant_type") {
	case "authorization_code":
		var ok bool
		g, ok = s.codes[f.Get("code")]
		delete(s.codes, f.Get("code"))
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		switch {
		case !ok || g.client != client || g.redirect != f.Get("redirect_uri"):
			oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown code")
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
			oauthError(w, http.StatusBadRequest, "invalid_grant", "PKCE verifier does not match")
			return
		case f.Get("resource") != g.resource:
			oauthError(w, http.StatusBadRequest, "invalid_target", "resource differs from the authorization request's")
			return
		}
	case "refresh_token":
		var ok bool
		g, ok = s.refresh[f.Get("refresh_token")]
		delete(s.refresh, f.Get("refresh_token")) // rotated
		if !ok || g.client != client {
			oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown refresh token")
			return
		}
		s.Refreshes.Add(1)
	case "client_credentials":
		if c := s.clients[client]; c.Secret == "" && c.PublicKey == nil {
			oauthError(w, http.StatusUnauthorized, "unauthorized_client", "a public client has no credentials")
			return
		}
		g = grant{client: client, scopes: strings.Fields(f.Get("scope"))}
		withRefresh = false
		s.ClientGrants.Add(1)
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", f.Get("grant_type"))
		return
	}
	g.expiry = time.Now().Add(s.opts.TokenTTL)
	access := "at-" + random()
	s.access[access] = g
	s.issued = append(s.issued, access)
	resp := map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": int(s.opts.TokenTTL.Seconds()), "scope": strings.Join(g.scopes, " ")}
	if withRefresh {
		rt := "rt-" + random()
		s.refresh[rt] = g
		s.issued = append(s.issued, rt)
		resp["refresh_token"] = rt
	}
	writeJSON(w, http.StatusOK, resp)
}

// revoke implements RFC 7009: the client authenticates as at the token
// endpoint, and may revoke only its own tokens; a token it does not know is
// answered 200 all the same. Revoking a refresh token revokes the access
// tokens of its grant too.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	client, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	tok := r.PostForm.Get("token")
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.refresh[tok]; ok && g.client == client {
		delete(s.refresh, tok)
		for at, ag := range s.access {
			if ag.client == client {
				delete(s.access, at)
			}
		}
	}
	if g, ok := s.access[tok]; ok && g.client == client {
		delete(s.access, tok)
	}
	s.Revocations.Add(1)
	w.WriteHeader(http.StatusOK)
}

// Valid reports whether token is an access token the server accepts.
func (s *Server) Valid(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.access[token]
	return ok
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var m oauthex.ClientRegistrationMetadata
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil || len(m.RedirectURIs) == 0 {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "want redirect_uris")
		return
	}
	s.Registrations.Add(1)
	id, secret := "dcr-"+random(), "dcr-secret-"+random()
	s.mu.Lock()
	s.clients[id] = Client{Secret: secret}
	s.redirects[id] = m.RedirectURIs
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"client_id": id, "client_secret": secret,
		"redirect_uris": m.RedirectURIs, "token_endpoint_auth_method": "client_secret_basic"})
}

// Browser is what a person's browser does with an authorization URL here:
// GET it without following the redirect, then GET the Location (the
// client's loopback redirect URI).
func Browser(ctx context.Context, authURL string) error {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(u string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		return c.Do(req)
	}
	resp, err := get(authURL)
	if err != nil {
		return err
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || loc == "" {
		return fmt.Errorf("the login page answered %s, not a redirect", resp.Status)
	}
	back, err := get(loc)
	if err != nil {
		return fmt.Errorf("following the redirect to %s: %w", loc, err)
	}
	back.Body.Close()
	if back.StatusCode != http.StatusOK {
		return fmt.Errorf("the redirect URI answered %s", back.Status)
	}
	return nil
}

func random() string {
	b := make([]byte, 12)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func oauthError(w http.ResponseWriter, code int, kind, desc string) {
	writeJSON(w, code, map[string]string{"error": kind, "error_description": desc})
}
