package mcp

// OAuth for the servers of mcp_server blocks with an oauth block: the
// adapter gives each such server an oauth.Handler, which the SDK's
// transport asks for the token of every request and calls on a 401. What
// is here decides when a person may be sent to log in (calls and loads,
// never background probes), turns a needed login into one clear error,
// and keeps the tokens out of log lines.

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/toolhost/toolhost/mcp/oauth"
	"github.com/toolhost/toolhost/plugin"
)

// newAuth returns the OAuth handler of r's server. fresh ignores a stored
// token (a login asked for).
func (a *Adapter) newAuth(r *remote, browser oauth.Browser, fresh bool) (*oauth.Handler, error) {
	o := r.srv.OAuth
	secret := func(name string) func(context.Context) (string, error) {
		if name == "" {
			return nil
		}
		return func(ctx context.Context) (string, error) {
			if a.opts.Secrets == nil {
				return "", fmt.Errorf("secret %q: the host has no secret source", name)
			}
			return a.opts.Secrets.LookupSecret(ctx, name)
		}
	}
	cfg := oauth.Config{
		Server: r.srv.Name, URL: r.srv.URL, Grant: o.Grant,
		ClientID: o.ClientID, ClientIDMetadataURL: o.ClientIDMetadataURL,
		ClientSecret: secret(o.ClientSecret), PrivateKey: secret(o.PrivateKey), SigningAlgorithm: o.SigningAlgorithm,
		Scopes: o.Scopes, RedirectURL: o.RedirectURL,
		// HTTPClient is left to the handler: discovery, registration and
		// token requests go out without the server's headers, and are
		// redirected only where it allows.
		Browser:      browser,
		LoginTimeout: a.opts.LoginTimeout,
		Fresh:        fresh,
		Logger:       r.log,
	}
	if a.opts.TokenDir != "" {
		cfg.Store = oauth.NewStore(a.opts.TokenDir)
	}
	h, err := oauth.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: %w", r.srv.Name, err)
	}
	return h, nil
}

// loginContext lets a person be sent to log in on ctx, when the host has
// a way to send one there.
func (r *remote) loginContext(ctx context.Context) context.Context {
	if r.auth == nil || r.a.opts.Browser == nil {
		return ctx
	}
	return oauth.AllowLogin(ctx)
}

// needsLogin reports whether err (or the handler's state: the SDK does
// not always keep the cause) says the server needs a person's login.
func (r *remote) needsLogin(err error) bool {
	if errors.Is(err, oauth.ErrLoginRequired) {
		return true
	}
	return r.auth != nil && r.auth.NeedsLogin()
}

// redact returns err's text with the server's tokens and secrets
// replaced, for log lines and unavailability reasons. It reads the
// secrets again, so it is for failures, not for every request.
func (r *remote) redact(err error) string {
	if err == nil {
		return ""
	}
	vals := map[string]string{}
	if r.auth != nil {
		maps.Copy(vals, r.auth.HeldSecrets())
	}
	// The server's configured secrets too (headers, client secret, key):
	// an error from a token endpoint may quote the request.
	sec := r.lookupSecrets(context.Background())
	for _, n := range sec.Names() {
		vals[n], _ = sec.Value(n)
	}
	return plugin.NewSecrets(vals).Redact(err.Error())
}

// HeldSecrets implements plugin.SecretHolder: the server's OAuth tokens
// are redacted from every result and error of its tools.
func (t *remoteTool) HeldSecrets() map[string]string {
	if t.r.auth == nil {
		return nil
	}
	return t.r.auth.HeldSecrets()
}

var _ plugin.SecretHolder = (*remoteTool)(nil)

// ErrNoAuthorization is returned by Login when the server let the host in
// without asking for a token.
var ErrNoAuthorization = errors.New("the server did not ask for authorization")

// Logout deletes srv's stored token and asks its authorization server to
// revoke it (oauth.Handler.Logout): had reports whether a token was
// stored, rev what the server did, err only a failure to delete it.
// secrets names the secrets the server's oauth block uses (a client secret
// or key authenticates the revocation as it does token requests).
func (a *Adapter) Logout(ctx context.Context, srv plugin.MCPServer, secrets []string) (had bool, rev oauth.Revocation, err error) {
	if srv.OAuth == nil {
		return false, rev, fmt.Errorf("MCP server %q has no oauth block", srv.Name)
	}
	h, err := a.newAuth(newRemote(a, srv, secrets), nil, false)
	if err != nil {
		return false, rev, err
	}
	return h.Logout(ctx)
}

// Login runs the server's OAuth flow now, whatever token is stored:
// for authorization_code, browser sends a person to log in; for
// client_credentials, a token is requested. The token is stored (TokenDir)
// and used by every later host, and by this adapter's own connection to
// the server from its next request. secrets names the secrets the
// server's headers and oauth block use.
func (a *Adapter) Login(ctx context.Context, srv plugin.MCPServer, secrets []string, browser oauth.Browser) error {
	if srv.OAuth == nil {
		return fmt.Errorf("MCP server %q has no oauth block", srv.Name)
	}
	if err := CheckURL(srv.URL); err != nil {
		return err
	}
	r := newRemote(a, srv, secrets)
	var err error
	if r.auth, err = a.newAuth(r, browser, true); err != nil {
		return err
	}
	if err := r.setHeaders(r.lookupSecrets(ctx)); err != nil {
		return fmt.Errorf("MCP server %q: %w", srv.Name, err)
	}
	// Not connectBounded: the login must be over (its browser step
	// included) when Login returns, and the flow itself ends with ctx.
	cs, err := r.client(nil).Connect(oauth.AllowLogin(ctx), r.transport(true), nil)
	if err != nil {
		if r.needsLogin(err) {
			return &oauth.LoginRequiredError{Server: srv.Name}
		}
		return fmt.Errorf("MCP server %q: %s", srv.Name, r.redact(err))
	}
	cs.Close()
	if !r.auth.Authorized() {
		return fmt.Errorf("MCP server %q: %w: it needs no token", srv.Name, ErrNoAuthorization)
	}
	// The adapter's own connection, if the server was down for want of a
	// login, comes up now rather than at its next probe.
	a.mu.Lock()
	own := a.remotes[srv.Name]
	a.mu.Unlock()
	if own != nil {
		own.mu.Lock()
		down := own.down
		own.mu.Unlock()
		if down {
			if _, err := own.connect(ctx); err != nil {
				own.log.Warn("MCP server still unreachable after the login", "error", own.redact(err))
			}
		}
	}
	return nil
}
