package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
)

// ErrNoRevocation is why Logout did not revoke a token when the
// authorization server names no revocation endpoint (RFC 7009), or the
// stored token does not say which server issued it.
var ErrNoRevocation = errors.New("the authorization server offers no token revocation")

// Revocation is what Logout achieved at the authorization server.
type Revocation struct {
	// Revoked: the server accepted the revocation of every token held.
	Revoked bool
	// Err says why not (ErrNoRevocation, or the failed request); nil when
	// Revoked.
	Err error
}

// revokeTimeout bounds the whole revocation: reading the authorization
// server's metadata and revoking both tokens. The stored token is already
// deleted by then; a server that does not answer only delays the report.
var revokeTimeout = 10 * time.Second

// Logout deletes the stored token of the handler's server, forgets the one
// in memory, and asks the authorization server to revoke it (RFC 7009):
// the refresh token first, which ends the grant at most servers, then the
// access token. The stored token is deleted whatever the server answers:
// had reports whether there was one, err only a failure to delete it;
// rev says what the server did.
func (h *Handler) Logout(ctx context.Context) (had bool, rev Revocation, err error) {
	var rec *Record
	if h.cfg.Store != nil {
		if rec, err = h.cfg.Store.Load(h.cfg.URL); err != nil {
			return false, rev, err
		}
		if _, err = h.cfg.Store.Delete(h.cfg.URL); err != nil {
			return false, rev, err
		}
	}
	h.mu.Lock()
	if rec == nil {
		rec = h.rec
	}
	h.ts, h.rec, h.authorized = nil, nil, false
	h.mu.Unlock()
	if rec == nil {
		return false, rev, nil
	}
	rev.Err = h.revoke(ctx, rec)
	rev.Revoked = rev.Err == nil
	return true, rev, nil
}

// revoke asks rec's authorization server to revoke its tokens.
// The server is found as at login: the issuer stored with the token, or
// else the MCP server's protected resource metadata (RFC 9728). The tokens
// go only to a server whose metadata names the token endpoint that issued
// them: metadata that changed since the login could otherwise aim them
// at another server.
func (h *Handler) revoke(ctx context.Context, rec *Record) error {
	ctx, cancel := context.WithTimeout(ctx, revokeTimeout)
	defer cancel()
	issuers := []string{rec.Issuer}
	if rec.Issuer == "" {
		issuers = h.resourceMetadata(ctx, nil, h.cfg.URL).AuthorizationServers
	}
	var endpoint string
	for _, issuer := range issuers {
		asm, err := auth.GetAuthServerMetadata(ctx, issuer, h.cfg.HTTPClient)
		if err != nil {
			return fmt.Errorf("reading %s's metadata: %w", quoteCut(issuer), err)
		}
		if asm == nil || asm.TokenEndpoint != rec.TokenURL {
			continue
		}
		if asm.RevocationEndpoint == "" {
			return fmt.Errorf("%w (%s names no revocation_endpoint)", ErrNoRevocation, quoteCut(issuer))
		}
		if !secureEndpoint(asm.RevocationEndpoint) {
			return fmt.Errorf("%s's revocation_endpoint %s is neither https nor loopback: the token is not sent there", quoteCut(issuer), quoteCut(asm.RevocationEndpoint))
		}
		if !sameOrigin(asm.RevocationEndpoint, rec.TokenURL) {
			// Anyone can publish metadata that names another server's
			// token endpoint beside a revocation endpoint of their own.
			return fmt.Errorf("%w: %s's revocation_endpoint %s is not on the host of the token endpoint that issued the token (%s)", ErrNoRevocation, quoteCut(issuer), quoteCut(asm.RevocationEndpoint), rec.TokenURL)
		}
		endpoint = asm.RevocationEndpoint
		break
	}
	if endpoint == "" {
		return fmt.Errorf("%w: no authorization server the MCP server names now has the token endpoint that issued the token (%s)", ErrNoRevocation, rec.TokenURL)
	}
	for _, t := range []struct{ token, hint string }{{rec.RefreshToken, "refresh_token"}, {rec.AccessToken, "access_token"}} {
		if t.token == "" {
			continue
		}
		if err := h.revokeOne(ctx, rec, endpoint, t.token, t.hint); err != nil {
			return fmt.Errorf("revoking the %s: %w", strings.ReplaceAll(t.hint, "_", " "), err)
		}
	}
	return nil
}

// revokeOne sends one revocation request, authenticating the client as
// its token requests do.
func (h *Handler) revokeOne(ctx context.Context, rec *Record, endpoint, token, hint string) error {
	form := url.Values{"token": {token}, "token_type_hint": {hint}}
	user, pass, err := h.clientAuth(ctx, rec, form)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.SetBasicAuth(url.QueryEscape(user), url.QueryEscape(pass))
	}
	resp, err := h.cfg.HTTPClient.Do(req)
	if err != nil {
		return errors.New(redactSent(err.Error(), rec, form, pass))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode/100 != 2 {
		// The server's words, which may echo what it was sent, go to a
		// terminal: what was sent is taken out, the rest quoted and cut.
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, quoteCut(redactSent(strings.TrimSpace(string(body)), rec, form, pass)))
	}
	return nil
}

// clientAuth authenticates rec's client in form, or returns the user and
// password of HTTP Basic authentication, as its token requests do: a
// private_key_jwt assertion for a client credentials grant with a key,
// else the client's secret, else the client ID alone (a public client).
func (h *Handler) clientAuth(ctx context.Context, rec *Record, form url.Values) (user, pass string, err error) {
	if rec.Grant == GrantClientCredentials && h.cfg.PrivateKey != nil {
		a, err := h.assertion(ctx, rec.ClientID, rec.Issuer, rec.TokenURL)
		if err != nil {
			return "", "", err
		}
		form.Set("client_id", rec.ClientID)
		form.Set("client_assertion_type", clientAssertionType)
		form.Set("client_assertion", a)
		return "", "", nil
	}
	secret, err := h.clientSecret(ctx, rec)
	switch {
	case err != nil:
		return "", "", err
	case secret == "":
		form.Set("client_id", rec.ClientID)
		return "", "", nil
	case oauth2.AuthStyle(rec.AuthStyle) == oauth2.AuthStyleInParams:
		form.Set("client_id", rec.ClientID)
		form.Set("client_secret", secret)
		return "", "", nil
	}
	return rec.ClientID, secret, nil
}

// secureEndpoint reports whether a token may be sent to u: https, or http
// to a loopback address.
func secureEndpoint(u string) bool {
	p, err := url.Parse(u)
	if err != nil {
		return false
	}
	if p.Scheme == "https" {
		return true
	}
	if p.Scheme != "http" {
		return false
	}
	if p.Hostname() == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(p.Hostname())
	return err == nil && a.IsLoopback()
}

// redactSent removes from s what a revocation request may have sent or a
// server may echo: every value of form but the hint and the client ID,
// the Basic password, and rec's tokens and registered secret.
func redactSent(s string, rec *Record, form url.Values, pass string) string {
	values := []string{pass, rec.AccessToken, rec.RefreshToken, rec.ClientSecret}
	for k, vs := range form {
		if k != "token_type_hint" && k != "client_id" && k != "client_assertion_type" {
			values = append(values, vs...)
		}
	}
	for _, v := range values {
		if v != "" {
			s = strings.ReplaceAll(s, v, "[REDACTED]")
		}
	}
	return s
}

// sameOrigin reports whether a and b have the same scheme, host and port.
func sameOrigin(a, b string) bool {
	ua, err := url.Parse(a)
	if err != nil {
		return false
	}
	ub, err := url.Parse(b)
	if err != nil {
		return false
	}
	return ua.Scheme == ub.Scheme && strings.EqualFold(ua.Host, ub.Host)
}
