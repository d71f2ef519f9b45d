package config

// The oauth block of an mcp_server: how the host obtains the server's access
// token. Its checks are strict because a mistake here shows up only at the
// first login or token request, far from the file: every one is reported at
// the attribute that causes it.

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/toolhost/toolhost/plugin"
)

// OAuth grants an oauth block accepts.
const (
	grantAuthorizationCode = "authorization_code"
	grantClientCredentials = "client_credentials"
)

// signingAlgorithms are the JWS algorithms a private_key_jwt assertion can
// be signed with (those the mcp adapter implements).
var signingAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// decodeOAuth checks an mcp_server's oauth block and returns it, with the
// secrets it names added to the server's secrets (so that every call of the
// server's tools redacts them).
func (d *decoder) decodeOAuth(m *rawMCP, s *MCPServer, cfg *Config) {
	o := m.OAuth
	out := &plugin.MCPOAuth{Grant: grantAuthorizationCode, Scopes: o.Scopes}
	for k := range m.Headers {
		if http.CanonicalHeaderKey(k) == "Authorization" {
			d.errorf(m.HeadersRange, "Authorization header with oauth",
				"The server %q has an oauth block, which sets the Authorization header with the token it obtains; remove the Authorization header, or the oauth block.", m.Name)
		}
	}
	if o.Grant != nil {
		switch *o.Grant {
		case grantAuthorizationCode, grantClientCredentials:
			out.Grant = *o.Grant
		default:
			d.errorf(o.GrantRange, "Invalid grant", "grant must be %q (a person logs in once, with host auth login) or %q (the client's own credentials, no person); got %q.%s",
				grantAuthorizationCode, grantClientCredentials, *o.Grant, didYouMean(*o.Grant, []string{grantAuthorizationCode, grantClientCredentials}))
		}
	}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	out.ClientID = str(o.ClientID)
	if o.ClientID != nil && strings.TrimSpace(*o.ClientID) == "" {
		d.errorf(o.ClientIDRange, "Empty client_id", "client_id is the client's identifier at the authorization server; omit it to have the client register itself.")
	}
	secret := func(name *string, rng hcl.Range, attr string) string {
		if name == nil {
			return ""
		}
		if _, ok := cfg.Secrets[*name]; !ok {
			d.errorf(rng, "Unknown secret", "%s names a secret block, so that its value never sits in the configuration; no secret %q block defines it. Add secret %q { env = \"VAR\" } (or file = \"path\") and name it here.", attr, *name, *name)
			return *name
		}
		for _, v := range (plugin.Capabilities{Secrets: []string{*name}}).Exceeding(cfg.Grants) {
			d.errorf(rng, "Capability not granted", "The server %q %s; list it in grants { secrets = [...] }.", m.Name, v.Error())
		}
		if !slices.Contains(s.Secrets, *name) {
			s.Secrets = append(s.Secrets, *name)
		}
		return *name
	}
	out.ClientSecret = secret(o.ClientSecret, o.ClientSecretRange, "client_secret")
	out.PrivateKey = secret(o.PrivateKey, o.PrivateKeyRange, "private_key")
	if o.ClientSecret != nil && o.PrivateKey != nil {
		d.errorf(o.PrivateKeyRange, "Two client authentications", "Set client_secret or private_key, not both: the client authenticates one way.")
	}
	for _, a := range []struct {
		set  bool
		rng  hcl.Range
		attr string
	}{{o.ClientSecret != nil, o.ClientSecretRange, "client_secret"}, {o.PrivateKey != nil, o.PrivateKeyRange, "private_key"}} {
		if a.set && o.ClientID == nil {
			d.errorf(a.rng, "Missing client_id", "%s authenticates a pre-registered client: set client_id too.", a.attr)
		}
	}
	if o.SigningAlgorithm != nil {
		out.SigningAlgorithm = *o.SigningAlgorithm
		switch {
		case o.PrivateKey == nil:
			d.errorf(o.SigningAlgorithmRange, "signing_algorithm without private_key", "signing_algorithm signs the client assertion made with private_key; set private_key, or remove signing_algorithm.")
		case !slices.Contains(signingAlgorithms, *o.SigningAlgorithm):
			d.errorf(o.SigningAlgorithmRange, "Invalid signing algorithm", "signing_algorithm must be one of %s; got %q.%s", quoteList(signingAlgorithms), *o.SigningAlgorithm, didYouMean(*o.SigningAlgorithm, signingAlgorithms))
		}
	}
	if o.ClientIDMetadataURL != nil {
		out.ClientIDMetadataURL = *o.ClientIDMetadataURL
		u, err := parseURL(*o.ClientIDMetadataURL)
		switch {
		case err != nil:
			d.errorf(o.ClientIDMetadataURLRange, "Invalid client_id_metadata_url", "%v.", err)
		case u.Scheme != "https" || strings.Trim(u.Path, "/") == "":
			d.errorf(o.ClientIDMetadataURLRange, "Invalid client_id_metadata_url", "A client ID metadata document is named by an https URL with a path (it is the client's ID); got %q.", *o.ClientIDMetadataURL)
		}
	}
	for _, sc := range o.Scopes {
		if sc == "" || strings.ContainsAny(sc, " \t\n\"\\") {
			d.errorf(o.ScopesRange, "Invalid scope", "A scope is one non-empty token without spaces, quotes or backslashes; got %q.", sc)
		}
	}
	if o.RedirectURL != nil {
		out.RedirectURL = *o.RedirectURL
		if err := checkRedirectURL(*o.RedirectURL); err != nil {
			d.errorf(o.RedirectURLRange, "Invalid redirect_url", "%v.", err)
		}
	}
	switch out.Grant {
	case grantClientCredentials:
		if o.ClientSecret == nil && o.PrivateKey == nil {
			d.errorf(o.DefRange, "Client credentials without a credential", "The client_credentials grant authenticates the client itself: set client_id and client_secret (a secret's name), or client_id and private_key (a secret holding a PEM key).")
		}
		if o.ClientIDMetadataURL != nil {
			d.errorf(o.ClientIDMetadataURLRange, "Not used by client_credentials", "client_id_metadata_url names a client that registers itself for a person's login; client_credentials uses the pre-registered client_id.")
		}
		if o.RedirectURL != nil {
			d.errorf(o.RedirectURLRange, "Not used by client_credentials", "redirect_url is where a person's browser returns after a login; client_credentials has no person and no browser.")
		}
	case grantAuthorizationCode:
		if o.PrivateKey != nil {
			d.errorf(o.PrivateKeyRange, "private_key needs client_credentials", "private_key_jwt authentication is supported for grant = %q only; a login (authorization_code) authenticates with client_secret or as a public client.", grantClientCredentials)
		}
	}
	s.OAuth = out
}

// checkRedirectURL accepts the loopback URLs the host can listen on itself:
// http://127.0.0.1:PORT/path (or [::1], localhost) with an explicit port.
func checkRedirectURL(raw string) error {
	u, err := parseURL(raw)
	if err != nil {
		return err
	}
	if u.Scheme != "http" || !isLoopbackHost(u.Hostname()) || u.Port() == "" {
		return fmt.Errorf("%q: the redirect URL is where the host itself listens for the browser's return, so it must be http://127.0.0.1:PORT/path (or [::1], localhost) with a port", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q: a redirect URL has no query or fragment", raw)
	}
	return nil
}
