package toolhost

// OAuth for mcp_server blocks, as the CLI's `host auth` commands and a host
// application see it: where tokens are kept, what state each server's
// token is in, and logging in and out. Status and logout read the token
// store only; they contact no server.

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/mcp"
	"github.com/toolhost/toolhost/mcp/oauth"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/plugin/config"
)

// TokenDir is where the OAuth tokens of cfg's MCP servers are kept: the
// oauth directory of the host's cache_dir, one 0600 file per server URL.
func TokenDir(cfg *config.Config) string { return filepath.Join(cfg.Host.CacheDir, "oauth") }

// LoadConfig decodes a configuration file without loading any tool, for
// commands that need only the configuration (host auth status, logout).
func LoadConfig(file string) (*config.Config, error) {
	parser := config.NewParser().WithCatalog(builtinCatalog())
	cfg, diags := parser.LoadFile(file)
	if diags.HasErrors() {
		return nil, &ConfigError{Diagnostics: diags, parser: parser}
	}
	return cfg, nil
}

// AuthState is how an MCP server's OAuth stands.
type AuthState string

// The states of AuthStatus.
const (
	// AuthNone: the server's block has no oauth block.
	AuthNone AuthState = "none"
	// AuthValid: a token is stored and has not expired.
	AuthValid AuthState = "valid"
	// AuthRefreshable: the stored token has expired; it is refreshed (or,
	// for client credentials, fetched again) at the next request.
	AuthRefreshable AuthState = "expired, refreshed on use"
	// AuthNeedsLogin: no usable token; a person must run host auth login.
	AuthNeedsLogin AuthState = "needs login"
	// AuthOnFirstUse: no token yet; client credentials fetch one unattended.
	AuthOnFirstUse AuthState = "no token yet, fetched on first use"
)

// MCPAuthStatus is one server's line of AuthStatus.
type MCPAuthStatus struct {
	Server, URL string
	// Grant is the oauth block's grant; empty without one.
	Grant  string
	State  AuthState
	Expiry time.Time // of the stored token, when it has one
	Scopes []string  // granted, as stored
	// StoreError says why the token file could not be read (corrupt,
	// unreadable); State is then what a host does without it.
	StoreError error
}

// AuthStatus reports the OAuth state of every mcp_server of cfg at now,
// from the token store alone. A token file that cannot be read is the
// StoreError of its server's line, not an error of the whole report.
func AuthStatus(cfg *config.Config, now time.Time) ([]MCPAuthStatus, error) {
	store := oauth.NewStore(TokenDir(cfg))
	var out []MCPAuthStatus
	for _, m := range cfg.MCPServers {
		st := MCPAuthStatus{Server: m.Name, URL: m.URL, State: AuthNone}
		if m.OAuth == nil {
			out = append(out, st)
			continue
		}
		st.Grant = m.OAuth.Grant
		rec, err := store.Load(m.URL)
		if err != nil {
			st.StoreError = err // a host warns and goes on without it
		}
		if rec != nil && rec.Grant != m.OAuth.Grant {
			rec = nil // obtained under another grant: not used
		}
		switch {
		case rec == nil && st.Grant == oauth.GrantClientCredentials:
			st.State = AuthOnFirstUse
		case rec == nil:
			st.State = AuthNeedsLogin
		case !rec.Expired(now):
			st.State = AuthValid
		case rec.RefreshToken != "" || st.Grant == oauth.GrantClientCredentials:
			st.State = AuthRefreshable
		default:
			st.State = AuthNeedsLogin
		}
		if rec != nil {
			st.Expiry, st.Scopes = rec.Expiry, rec.Scopes
		}
		out = append(out, st)
	}
	return out, nil
}

// oauthServer returns cfg's mcp_server called name, which must have an
// oauth block.
func oauthServer(cfg *config.Config, name string) (*config.MCPServer, error) {
	var names []string
	for i, m := range cfg.MCPServers {
		if m.Name == name {
			if m.OAuth == nil {
				return nil, fmt.Errorf("the mcp_server %q has no oauth block: it needs no login", name)
			}
			return &cfg.MCPServers[i], nil
		}
		if m.OAuth != nil {
			names = append(names, m.Name)
		}
	}
	where := cfg.Filename
	if where == "" {
		where = "the configuration"
	}
	msg := fmt.Sprintf("%s configures no mcp_server %q", where, name)
	if s := plugin.Suggest(name, names); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %q?", s[0])
	}
	if len(names) > 0 {
		msg += fmt.Sprintf(" (servers with oauth: %s)", strings.Join(names, ", "))
	}
	return nil, fmt.Errorf("%s", msg)
}

// Logout deletes the stored token of cfg's mcp_server called name and
// asks its authorization server to revoke it (RFC 7009): had reports
// whether a token was stored, rev whether the server revoked it and why
// not; err is a failure to delete it, or a name that is not an OAuth
// server.
func Logout(ctx context.Context, cfg *config.Config, name string, log hclog.Logger) (had bool, rev oauth.Revocation, err error) {
	m, err := oauthServer(cfg, name)
	if err != nil {
		return false, rev, err
	}
	a := mcp.NewAdapter(mcp.AdapterOptions{Logger: log, Secrets: cfg.Secrets, Version: Version, TokenDir: TokenDir(cfg)})
	defer a.Close()
	return a.Logout(ctx, mcpServerOf(*m), slices.Clone(m.Secrets))
}

// Login runs the OAuth flow of cfg's mcp_server called name now and
// stores the token: for authorization_code, browser sends a person to log
// in and the login waits for their return; for client_credentials a token
// is requested. It loads no tool.
func Login(ctx context.Context, cfg *config.Config, name string, browser oauth.Browser, log hclog.Logger) error {
	m, err := oauthServer(cfg, name)
	if err != nil {
		return err
	}
	a := mcp.NewAdapter(mcp.AdapterOptions{Logger: log, Secrets: cfg.Secrets, Version: Version, TokenDir: TokenDir(cfg)})
	defer a.Close()
	return a.Login(ctx, mcpServerOf(*m), m.Secrets, browser)
}

// LoginMCPServer is Login for the host's own configuration: the server's
// tools use the token from their next request.
func (h *Host) LoginMCPServer(ctx context.Context, name string, browser oauth.Browser) error {
	m, err := oauthServer(h.Config, name)
	if err != nil {
		return err
	}
	a := h.mcpAdapter()
	if a == nil {
		return Login(ctx, h.Config, name, browser, h.Log)
	}
	return a.Login(ctx, mcpServerOf(*m), slices.Clone(m.Secrets), browser)
}

func mcpServerOf(m config.MCPServer) plugin.MCPServer {
	return plugin.MCPServer{Name: m.Name, URL: m.URL, Headers: m.Headers, Timeout: m.Timeout, OAuth: m.OAuth}
}
