// Package oauth obtains, stores and refreshes the OAuth access tokens of
// the remote MCP servers toolhost calls.
//
// The Go MCP SDK does the protocol: discovery of the authorization server
// from a 401 (RFC 9728, RFC 8414, OpenID discovery), registration (client
// ID metadata document, pre-registered client, dynamic registration),
// PKCE, scope selection and step-up, and the resource parameter. This
// package adds what a tool host needs around it: tokens kept on disk and
// refreshed, so that a person logs in once (host auth login) rather than
// at every start; a loopback listener for the browser's return; a clear
// "needs a login" error when nobody is there to log in; and the client
// credentials grant with a client secret or a private key (private_key_jwt),
// with tokens fetched again, unattended, when they expire.
//
// One Handler serves one server for the life of the adapter's connection
// to it; it is safe for concurrent use.
package oauth

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// Grants a Handler implements.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

// Browser sends the user to authURL, where they log in; the authorization
// server then sends their browser back to the handler's redirect URL. It
// returns once the user has been sent (opening a browser, printing the
// URL, showing it in the application), not when they are back.
type Browser func(ctx context.Context, authURL string) error

// ErrLoginRequired is wrapped by the error of a server whose token needs a
// person's login and for which there is none (an unattended host).
var ErrLoginRequired = errors.New("login required")

// LoginRequiredError says which server needs a login and how to give it.
type LoginRequiredError struct {
	Server string
}

func (e *LoginRequiredError) Error() string {
	return fmt.Sprintf("MCP server %q needs a login: run `host auth login %s`", e.Server, e.Server)
}

// Unwrap makes errors.Is(err, ErrLoginRequired) hold.
func (e *LoginRequiredError) Unwrap() error { return ErrLoginRequired }

// Config configures a Handler.
type Config struct {
	// Server is the server's name in the configuration, for messages.
	Server string
	// URL is the server's MCP endpoint: the resource the token is for and
	// the key of its record in Store.
	URL string
	// Grant is GrantAuthorizationCode (default) or GrantClientCredentials.
	Grant string
	// ClientID is a pre-registered client; ClientIDMetadataURL a client ID
	// metadata document, used where the server supports it. With neither,
	// the client registers itself (dynamic client registration).
	ClientID, ClientIDMetadataURL string
	// ClientSecret and PrivateKey return the client's secret and PEM key,
	// looked up when a token is requested; nil when not configured.
	ClientSecret, PrivateKey func(ctx context.Context) (string, error)
	// SigningAlgorithm signs private_key_jwt assertions (default: from the key).
	SigningAlgorithm string
	// Scopes, when set, are requested instead of those the server names.
	Scopes []string
	// RedirectURL is where the browser returns (a loopback http URL the
	// handler listens on during a login); empty: 127.0.0.1 on a port
	// chosen when the first login starts, kept for the handler's life.
	RedirectURL string
	// Store keeps the tokens; nil keeps them in memory only.
	Store *Store
	// HTTPClient makes discovery, registration and token requests; nil:
	// one with a 30s timeout that never redirects a token or registration
	// request, a discovery request only to public addresses, and dials
	// only public addresses unless URL's host is itself inside the network
	// (dial.go).
	HTTPClient *http.Client
	// Browser sends a person to log in; nil: nobody can, and a server
	// that needs a login fails with *LoginRequiredError. A login runs only
	// on a context marked with AllowLogin.
	Browser Browser
	// LoginTimeout bounds the wait for the browser's return (default 5m).
	LoginTimeout time.Duration
	// Fresh ignores the stored token (host auth login starts anew).
	Fresh bool
	// Logger hears about saved tokens and store failures; never a value.
	Logger hclog.Logger
}

// Handler implements the SDK's auth.OAuthHandler for one MCP server.
type Handler struct {
	cfg Config
	log hclog.Logger

	mu         sync.Mutex
	ts         oauth2.TokenSource // nil: no token yet
	rec        *Record            // the token ts last gave, as stored
	code       *auth.AuthorizationCodeHandler
	redirect   string
	needsLogin bool
	seen       fs.FileInfo // the token file as last read; nil: none read
	authorized bool        // a flow obtained a token
	forced     string      // the access token a forced refresh gave
	// flowMu serializes Authorize: one login (or token request) at a
	// time. It is taken before mu, never while holding it.
	flowMu sync.Mutex
	// past are the tokens held before the current one, newest first: a
	// call may have used one that was replaced before its result came
	// back, and its output is redacted after that.
	past []*Record
}

// keptPast is how many replaced tokens stay redacted.
const keptPast = 4

var _ auth.OAuthHandler = (*Handler)(nil)

// New returns a handler; nothing is requested until the transport asks.
func New(cfg Config) (*Handler, error) {
	if cfg.Grant == "" {
		cfg.Grant = GrantAuthorizationCode
	}
	switch cfg.Grant {
	case GrantAuthorizationCode:
	case GrantClientCredentials:
		if cfg.ClientID == "" || cfg.ClientSecret == nil && cfg.PrivateKey == nil {
			return nil, errors.New("oauth: client_credentials needs a client ID and a client secret or private key")
		}
	default:
		return nil, fmt.Errorf("oauth: unknown grant %q", cfg.Grant)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = newHTTPClient(cfg.URL)
	}
	if cfg.LoginTimeout <= 0 {
		cfg.LoginTimeout = 5 * time.Minute
	}
	log := cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Handler{cfg: cfg, log: log, redirect: cfg.RedirectURL}, nil
}

type loginKey struct{}

// AllowLogin marks ctx as one on which a person may be sent to log in (a
// call or a connection made for a user), as opposed to a background
// probe, which must never open a browser.
func AllowLogin(ctx context.Context) context.Context {
	return context.WithValue(ctx, loginKey{}, true)
}

func loginAllowed(ctx context.Context) bool {
	ok, _ := ctx.Value(loginKey{}).(bool)
	return ok
}

// TokenSource implements auth.OAuthHandler. Before any flow has run, it
// offers the stored token, so that a login made by another process (host
// auth login) is used without a restart.
func (h *Handler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ts == nil && !h.cfg.Fresh {
		h.useStoredLocked(nil)
	}
	return h.ts, nil
}

// useStoredLocked takes the stored token when there is one this handler
// can use and it differs from skip's; it reports whether it did.
func (h *Handler) useStoredLocked(skip *Record) bool {
	if h.cfg.Store == nil {
		return false
	}
	// The transport asks for a token at every request; until one is
	// usable, the file is read again only when it has changed (a login
	// elsewhere replaces it), and a bad one is reported once.
	fi, _ := os.Stat(h.cfg.Store.Path(h.cfg.URL))
	if fi != nil && h.seen != nil && os.SameFile(fi, h.seen) && fi.ModTime().Equal(h.seen.ModTime()) && fi.Size() == h.seen.Size() {
		return false
	}
	h.seen = fi
	rec, err := h.cfg.Store.Load(h.cfg.URL)
	if err != nil {
		h.log.Warn("cannot read the stored OAuth token", "error", err)
		return false
	}
	if fi != nil && rec != nil && fi.Mode().Perm()&0o077 != 0 {
		// Used all the same (refusing would stop an unattended host), but
		// said: whoever could read it may hold the token too.
		h.log.Warn("the stored OAuth token is readable by other users; chmod 600 it, or log in again to replace it",
			"path", h.cfg.Store.Path(h.cfg.URL), "mode", fi.Mode().Perm().String())
	}
	switch {
	case rec == nil || rec.Grant != h.cfg.Grant:
		return false
	case skip != nil && rec.AccessToken == skip.AccessToken:
		return false
	case h.cfg.Grant == GrantAuthorizationCode && rec.Expired(time.Now()) && rec.RefreshToken == "":
		// Nothing to refresh with: the 401 that follows asks for a login.
		return false
	}
	h.ts = h.sourceFor(rec)
	h.setRecordLocked(rec)
	h.needsLogin = false // a login made elsewhere
	return true
}

// refreshContext carries the HTTP client to the oauth2 package for the
// requests a token source makes later, outside any call: it must not be a
// call's context, which ends with the call.
func (h *Handler) refreshContext() context.Context {
	return context.WithValue(context.Background(), oauth2.HTTPClient, h.cfg.HTTPClient)
}

// sourceFor returns a token source that starts from rec, refreshes (or,
// for client credentials, fetches again) when it expires, and saves every
// new token.
func (h *Handler) sourceFor(rec *Record) oauth2.TokenSource {
	var base oauth2.TokenSource
	if rec.Grant == GrantClientCredentials {
		cc := &ccSource{h: h, tokenURL: rec.TokenURL, issuer: rec.Issuer, style: oauth2.AuthStyle(rec.AuthStyle), scopes: rec.Scopes, resource: rec.Resource}
		base = oauth2.ReuseTokenSource(rec.Token(), cc)
	} else {
		secret, _ := h.clientSecret(context.Background(), rec)
		cfg := &oauth2.Config{ClientID: rec.ClientID, ClientSecret: secret, Scopes: rec.Scopes,
			Endpoint: oauth2.Endpoint{TokenURL: rec.TokenURL, AuthStyle: oauth2.AuthStyle(rec.AuthStyle)}}
		base = cfg.TokenSource(h.refreshContext(), rec.Token())
	}
	return &savingSource{h: h, base: base, rec: rec}
}

// savingSource stores every token its base source obtains.
type savingSource struct {
	h    *Handler
	base oauth2.TokenSource
	mu   sync.Mutex
	rec  *Record
}

func (s *savingSource) Token() (*oauth2.Token, error) {
	t, err := s.base.Token()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.AccessToken != s.rec.AccessToken {
		rec := *s.rec
		rec.AccessToken, rec.TokenType, rec.Expiry, rec.Obtained = t.AccessToken, t.TokenType, t.Expiry, time.Now()
		if t.RefreshToken != "" {
			rec.RefreshToken = t.RefreshToken
		}
		if sc := tokenScopes(t); sc != nil {
			rec.Scopes = sc
		}
		s.rec = &rec
		s.h.saved(&rec)
	}
	return t, nil
}

// saved records rec as the handler's current token and stores it.
func (h *Handler) saved(rec *Record) {
	h.mu.Lock()
	h.setRecordLocked(rec)
	h.mu.Unlock()
	if h.cfg.Store == nil {
		return
	}
	if err := h.cfg.Store.Save(rec); err != nil {
		h.log.Warn("cannot store the OAuth token; it is used for this run only", "error", err)
		return
	}
	h.log.Debug("OAuth token stored", "expiry", rec.Expiry, "scopes", strings.Join(rec.Scopes, " "))
}

// setRecordLocked makes rec the current token, keeping the one it
// replaces among those still redacted.
func (h *Handler) setRecordLocked(rec *Record) {
	if h.rec != nil && h.rec != rec {
		h.past = append([]*Record{h.rec}, h.past...)
		if len(h.past) > keptPast {
			h.past = h.past[:keptPast]
		}
	}
	h.rec = rec
}

func tokenScopes(t *oauth2.Token) []string {
	if s, ok := t.Extra("scope").(string); ok {
		return strings.Fields(s)
	}
	return nil
}

// HeldSecrets returns the token values the handler holds (access token,
// refresh token, a client secret the server issued at registration), by
// the names redaction shows, so that they never reach output, errors or
// logs.
func (h *Handler) HeldSecrets() map[string]string {
	h.mu.Lock()
	recs := append([]*Record{h.rec}, h.past...)
	h.mu.Unlock()
	out := map[string]string{}
	for i, rec := range recs {
		if rec == nil {
			continue
		}
		suffix := ""
		if i > 0 {
			suffix = fmt.Sprintf("_%d", i+1) // an older one
		}
		for n, v := range map[string]string{"oauth_access_token": rec.AccessToken, "oauth_refresh_token": rec.RefreshToken, "oauth_client_secret": rec.ClientSecret} {
			if v != "" {
				out[n+suffix] = v
			}
		}
	}
	return out
}

// NeedsLogin reports whether the server asked for a token that only a
// person's login can give, and none could be run.
func (h *Handler) NeedsLogin() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.needsLogin
}

// Authorized reports whether a flow has obtained a token (a login or a
// client-credentials request), as opposed to a stored token being used.
func (h *Handler) Authorized() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.authorized
}

// Authorize implements auth.OAuthHandler: the transport calls it on a 401
// or 403. Flows are one at a time: requests refused together (a shared
// session and a call's own) share one login.
func (h *Handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if resp.StatusCode == http.StatusForbidden && challengeParam(challenges, "error") != "insufficient_scope" {
		// A refusal that no token changes: let the request fail as it is.
		resp.Body.Close()
		return nil
	}
	h.flowMu.Lock()
	defer h.flowMu.Unlock()
	if h.replacedSince(req) {
		// Another request's flow got a new token meanwhile: try with it.
		resp.Body.Close()
		return nil
	}
	if h.cfg.Grant == GrantClientCredentials {
		defer resp.Body.Close()
		return h.authorizeClient(ctx, req, challenges)
	}
	if resp.StatusCode == http.StatusUnauthorized && h.forceRefresh() {
		// The server dropped the access token before its expiry; the
		// refresh token still serves, and no person is needed.
		resp.Body.Close()
		return nil
	}
	if !loginAllowed(ctx) || h.cfg.Browser == nil {
		resp.Body.Close()
		h.mu.Lock()
		defer h.mu.Unlock()
		// Another process may have logged in since (host auth login).
		if !h.cfg.Fresh && h.useStoredLocked(h.rec) {
			return nil
		}
		h.needsLogin = true
		return &LoginRequiredError{Server: h.cfg.Server}
	}
	code, err := h.codeHandler(ctx)
	if err != nil {
		resp.Body.Close()
		return err
	}
	if err := code.Authorize(ctx, req, resp); err != nil {
		return fmt.Errorf("logging in to MCP server %q: %w", h.cfg.Server, err)
	}
	h.mu.Lock()
	h.needsLogin, h.authorized = false, true
	h.mu.Unlock()
	return nil
}

// replacedSince reports whether the handler now holds a usable access
// token other than the one req was refused with (none, when its source
// could not refresh it).
func (h *Handler) replacedSince(req *http.Request) bool {
	sent := ""
	if f := strings.Fields(req.Header.Get("Authorization")); len(f) == 2 && strings.EqualFold(f[0], "bearer") {
		sent = f[1]
	}
	h.mu.Lock()
	ts, rec := h.ts, h.rec
	h.mu.Unlock()
	if ts == nil || rec == nil || rec.AccessToken == sent {
		return false
	}
	t, err := ts.Token()
	return err == nil && t.AccessToken != sent
}

// forceRefresh refreshes the current token before its expiry, once per
// token: a server may drop an access token early (a restart, a key
// rotation) and still honor the refresh token. It reports whether a new
// token came.
func (h *Handler) forceRefresh() bool {
	h.mu.Lock()
	rec := h.rec
	tried := rec != nil && h.forced == rec.AccessToken
	h.mu.Unlock()
	if rec == nil || rec.RefreshToken == "" || tried {
		return false
	}
	stale := *rec
	stale.Expiry = time.Now().Add(-time.Minute) // so that the source refreshes
	src := h.sourceFor(&stale)
	t, err := src.Token()
	if err != nil {
		h.log.Debug("refreshing a refused token failed", "error", err)
		return false
	}
	h.mu.Lock()
	h.ts, h.forced = src, t.AccessToken
	h.mu.Unlock()
	return true
}

func challengeParam(cs []oauthex.Challenge, name string) string {
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params[name] != "" {
			return c.Params[name]
		}
	}
	return ""
}

// codeHandler returns the SDK's authorization-code handler, made at the
// first login and kept, so that a step-up login asks for the scopes
// granted before as well (it remembers them) and returns to the same
// redirect URL.
func (h *Handler) codeHandler(ctx context.Context) (*auth.AuthorizationCodeHandler, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.code != nil {
		return h.code, nil
	}
	if h.redirect == "" {
		port, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("choosing a port for the login's redirect: %w", err)
		}
		h.redirect = fmt.Sprintf("http://127.0.0.1:%d/callback", port)
	}
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              h.redirect,
		AuthorizationCodeFetcher: h.fetchCode,
		RequestRefreshToken:      true,
		Client:                   h.cfg.HTTPClient,
		NewTokenSource:           h.newCodeTokenSource,
	}
	if h.cfg.ClientIDMetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: h.cfg.ClientIDMetadataURL}
	}
	if h.cfg.ClientID != "" {
		creds := &oauthex.ClientCredentials{ClientID: h.cfg.ClientID}
		if h.cfg.ClientSecret != nil {
			secret, err := h.cfg.ClientSecret(ctx)
			if err != nil {
				return nil, fmt.Errorf("client secret: %w", err)
			}
			creds.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: secret}
		}
		cfg.PreregisteredClient = creds
	} else {
		cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName:    "toolhost",
			RedirectURIs:  []string{h.redirect},
			GrantTypes:    []string{"authorization_code", "refresh_token"},
			ResponseTypes: []string{"code"},
		}}
	}
	if len(h.cfg.Scopes) > 0 {
		scopes := slices.Clone(h.cfg.Scopes)
		cfg.ScopeFilter = func([]string) []string { return scopes }
	}
	code, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, fmt.Errorf("oauth: %w", err)
	}
	h.code = code
	return code, nil
}

// newCodeTokenSource is the SDK's hook after a code exchange: the token is
// stored with what refreshing it needs.
func (h *Handler) newCodeTokenSource(ctx context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
	rec := &Record{
		ServerURL: h.cfg.URL, Grant: GrantAuthorizationCode,
		TokenURL: cfg.Endpoint.TokenURL, AuthStyle: int(cfg.Endpoint.AuthStyle), ClientID: cfg.ClientID,
		Scopes:      cfg.Scopes,
		AccessToken: tok.AccessToken, TokenType: tok.TokenType, RefreshToken: tok.RefreshToken, Expiry: tok.Expiry,
		Obtained: time.Now(),
	}
	if cfg.ClientID != h.cfg.ClientID {
		// A client registered for this login: its secret is needed to
		// refresh, and is nowhere else.
		rec.ClientSecret = cfg.ClientSecret
	}
	if sc := tokenScopes(tok); sc != nil {
		rec.Scopes = sc
	}
	h.saved(rec)
	src := &savingSource{h: h, base: cfg.TokenSource(ctx, tok), rec: rec}
	h.mu.Lock()
	h.ts = src
	h.mu.Unlock()
	return src, nil
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// RedirectURL is where the browser returns after a login ("" before the
// first login, when the port is chosen).
func (h *Handler) RedirectURL() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.redirect
}

// validResource reports whether u is a URL the resource parameter may carry.
func validResource(u string) bool {
	p, err := url.Parse(u)
	return err == nil && p.Scheme != "" && p.Fragment == ""
}

// authorizeClient runs the client credentials grant: discovery as for a
// login, then a token request authenticated by the client's secret or a
// signed assertion. No person is involved, so it runs on any context.
func (h *Handler) authorizeClient(ctx context.Context, req *http.Request, challenges []oauthex.Challenge) error {
	hc := h.cfg.HTTPClient
	prm := h.resourceMetadata(ctx, challenges, req.URL.String())
	if len(prm.AuthorizationServers) == 0 {
		return fmt.Errorf("MCP server %q: its protected resource metadata names no authorization server", h.cfg.Server)
	}
	issuer := prm.AuthorizationServers[0]
	asm, err := auth.GetAuthServerMetadata(ctx, issuer, hc)
	if err != nil {
		return fmt.Errorf("MCP server %q: authorization server metadata: %w", h.cfg.Server, err)
	}
	if asm == nil {
		// 2025-03-26: no metadata; the token endpoint is at /token.
		asm = &oauthex.AuthServerMeta{Issuer: issuer, TokenEndpoint: strings.TrimSuffix(issuer, "/") + "/token"}
	}
	scopes := h.cfg.Scopes
	if len(scopes) == 0 {
		scopes = strings.Fields(challengeParam(challenges, "scope"))
	}
	if len(scopes) == 0 {
		scopes = prm.ScopesSupported
	}
	// A step-up keeps what the current token was granted, whether this
	// handler obtained it or read it from the store.
	h.mu.Lock()
	var granted []string
	if h.rec != nil {
		granted = h.rec.Scopes
	}
	h.mu.Unlock()
	for _, s := range granted {
		if !slices.Contains(scopes, s) {
			scopes = append(slices.Clone(scopes), s)
		}
	}
	style := oauth2.AuthStyleAutoDetect
	switch m := asm.TokenEndpointAuthMethodsSupported; {
	case slices.Contains(m, "client_secret_basic"):
		style = oauth2.AuthStyleInHeader
	case slices.Contains(m, "client_secret_post"):
		style = oauth2.AuthStyleInParams
	}
	resource := ""
	if validResource(prm.Resource) {
		resource = prm.Resource
	}
	cc := &ccSource{h: h, tokenURL: asm.TokenEndpoint, issuer: asm.Issuer, style: style, scopes: scopes, resource: resource}
	tok, err := cc.token(ctx)
	if err != nil {
		return fmt.Errorf("MCP server %q: client credentials: %w", h.cfg.Server, err)
	}
	rec := &Record{
		ServerURL: h.cfg.URL, Grant: GrantClientCredentials, Issuer: asm.Issuer,
		TokenURL: asm.TokenEndpoint, AuthStyle: int(style), ClientID: h.cfg.ClientID, Scopes: scopes, Resource: resource,
		AccessToken: tok.AccessToken, TokenType: tok.TokenType, Expiry: tok.Expiry, Obtained: time.Now(),
	}
	if sc := tokenScopes(tok); sc != nil {
		rec.Scopes = sc
	}
	h.saved(rec)
	src := &savingSource{h: h, base: oauth2.ReuseTokenSource(tok, cc), rec: rec}
	h.mu.Lock()
	h.ts, h.authorized, h.needsLogin = src, true, false
	h.mu.Unlock()
	return nil
}

// resourceMetadata finds the server's protected resource metadata where
// the 2025-11-25 specification says to look (the challenge's
// resource_metadata, then the well-known path under the endpoint's path,
// then at the root) and, when there is none, falls back to 2025-03-26: the
// server's origin is its authorization server.
func (h *Handler) resourceMetadata(ctx context.Context, challenges []oauthex.Challenge, endpoint string) *oauthex.ProtectedResourceMetadata {
	u, err := url.Parse(endpoint)
	if err != nil {
		return &oauthex.ProtectedResourceMetadata{}
	}
	type try struct{ meta, resource string }
	var tries []try
	if m := challengeParam(challenges, "resource_metadata"); m != "" {
		tries = append(tries, try{m, endpoint})
	}
	at := *u
	at.RawQuery, at.Fragment = "", ""
	at.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(u.Path, "/")
	tries = append(tries, try{at.String(), endpoint})
	at.Path = "/.well-known/oauth-protected-resource"
	root := *u
	root.Path, root.RawQuery, root.Fragment = "", "", ""
	tries = append(tries, try{at.String(), root.String()})
	for _, t := range tries {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, t.meta, t.resource, h.cfg.HTTPClient)
		if err == nil && prm != nil {
			return prm
		}
	}
	return &oauthex.ProtectedResourceMetadata{AuthorizationServers: []string{root.String()}, Resource: endpoint}
}

// ccSource fetches client-credentials tokens; oauth2.ReuseTokenSource
// calls it again when a token expires.
type ccSource struct {
	h                          *Handler
	tokenURL, issuer, resource string
	style                      oauth2.AuthStyle
	scopes                     []string
}

// tokenRequestTimeout bounds a token request made outside any call.
const tokenRequestTimeout = 30 * time.Second

func (c *ccSource) Token() (*oauth2.Token, error) {
	ctx, cancel := context.WithTimeout(context.Background(), tokenRequestTimeout)
	defer cancel()
	return c.token(ctx)
}

func (c *ccSource) token(ctx context.Context) (*oauth2.Token, error) {
	h := c.h
	cfg := &clientcredentials.Config{ClientID: h.cfg.ClientID, TokenURL: c.tokenURL, Scopes: c.scopes, AuthStyle: c.style, EndpointParams: url.Values{}}
	if c.resource != "" {
		cfg.EndpointParams.Set("resource", c.resource)
	}
	if h.cfg.PrivateKey != nil {
		a, err := h.assertion(ctx, h.cfg.ClientID, c.issuer, c.tokenURL)
		if err != nil {
			return nil, err
		}
		cfg.AuthStyle = oauth2.AuthStyleInParams
		cfg.EndpointParams.Set("client_assertion_type", clientAssertionType)
		cfg.EndpointParams.Set("client_assertion", a)
	} else {
		secret, err := h.cfg.ClientSecret(ctx)
		if err != nil {
			return nil, fmt.Errorf("client secret: %w", err)
		}
		cfg.ClientSecret = secret
	}
	return cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, h.cfg.HTTPClient))
}

// clientSecret returns the secret rec's client authenticates with: the
// one it registered with, or the configured one when rec's client is the
// configured client; "" for a public client.
func (h *Handler) clientSecret(ctx context.Context, rec *Record) (string, error) {
	if rec.ClientSecret != "" || h.cfg.ClientSecret == nil || rec.ClientID != h.cfg.ClientID {
		return rec.ClientSecret, nil
	}
	secret, err := h.cfg.ClientSecret(ctx)
	if err != nil {
		return "", fmt.Errorf("client secret: %w", err)
	}
	return secret, nil
}

// assertion signs a private_key_jwt client assertion with the configured
// key, for the issuer (or, when unknown, the token endpoint).
func (h *Handler) assertion(ctx context.Context, clientID, issuer, tokenURL string) (string, error) {
	pemKey, err := h.cfg.PrivateKey(ctx)
	if err != nil {
		return "", fmt.Errorf("private key: %w", err)
	}
	s, err := newSigner(pemKey, h.cfg.SigningAlgorithm)
	if err != nil {
		return "", err
	}
	aud := issuer
	if aud == "" {
		aud = tokenURL
	}
	return s.assertion(clientID, aud, time.Now())
}
