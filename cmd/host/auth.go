package main

// host auth: logging in to the remote MCP servers of mcp_server blocks
// with an oauth block. A person logs in once here; every later host
// (host serve included, which has nobody to send to a browser) uses the
// stored token and refreshes it.

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost"
	"github.com/toolhost/toolhost/plugin/config"
)

func (a *app) authCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "auth",
		Short: "Log in to remote MCP servers that use OAuth, and see their tokens' state",
		Long: "An mcp_server with an oauth block gets its access token by OAuth. With\n" +
			"grant = \"authorization_code\" a person logs in once, with `auth login NAME`; the\n" +
			"token is stored under the cache directory and refreshed when it expires.\n" +
			"With grant = \"client_credentials\" no login is needed. See docs/mcp.md.",
	}
	cmd.AddCommand(a.authLogin(), a.authLogout(), a.authStatus())
	return cmd
}

// authConfig loads the configuration without loading any tool.
func (a *app) authConfig() (*config.Config, error) {
	cfg, err := toolhost.LoadConfig(a.g.config)
	if err != nil {
		return nil, a.configFailed(err)
	}
	return cfg, nil
}

func (a *app) authLogin() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "login NAME",
		Short: "Log in to the MCP server NAME and store its token",
		Long: "Discover the server's authorization server, register (or use the configured\n" +
			"client), and send you to log in: the URL is printed, and opened in a browser\n" +
			"when xdg-open (open on macOS) is there. The browser comes back to a loopback\n" +
			"address this command listens on; the token is then stored for every later\n" +
			"host. For a client_credentials server, a token is requested at once.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.authConfig()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			name := args[0]
			browser := func(ctx context.Context, authURL string) error {
				fmt.Fprintf(a.stderr, "To log in to %s, open this URL in a browser (waiting up to %s):\n\n  %s\n\n", name, timeout, authURL)
				return a.browse(ctx, authURL)
			}
			err = toolhost.Login(ctx, cfg, name, browser, a.logger(cfg.Host.LogLevel))
			switch {
			case err != nil && ctx.Err() == context.DeadlineExceeded:
				return fmt.Errorf("no login to %s within %s: nobody came back from the login page (run again, with --timeout for longer)", name, timeout)
			case err != nil:
				return err
			}
			st, err := serverStatus(cfg, name)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Logged in to %s: %s\n", name, describeAuth(st))
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the login")
	return cmd
}

// browse opens authURL in the desktop's browser when there is a way to;
// never an error: the URL is printed either way.
func (a *app) browse(ctx context.Context, authURL string) error {
	if a.browser != nil {
		return a.browser(ctx, authURL)
	}
	opener := "xdg-open"
	if runtime.GOOS == "darwin" {
		opener = "open"
	}
	path, err := exec.LookPath(opener)
	if err != nil {
		return nil
	}
	c := exec.Command(path, authURL)
	if c.Start() == nil {
		go c.Wait() // reaped in the background; its outcome does not matter
	}
	return nil
}

func (a *app) authLogout() *cobra.Command {
	return &cobra.Command{
		Use:   "logout NAME",
		Short: "Revoke and delete the stored token of the MCP server NAME",
		Long: "Ask the server's authorization server to revoke the stored token (RFC 7009:\n" +
			"the refresh token, then the access token) and delete it; the next host needs a\n" +
			"new login. The token is deleted even when the server offers no revocation or\n" +
			"refuses it; that is reported on stderr.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.authConfig()
			if err != nil {
				return err
			}
			had, rev, err := toolhost.Logout(cmd.Context(), cfg, args[0], a.logger(cfg.Host.LogLevel))
			if err != nil {
				return err
			}
			switch {
			case !had:
				fmt.Fprintf(a.stdout, "No token stored for %s.\n", args[0])
			case rev.Revoked:
				fmt.Fprintf(a.stdout, "Logged out of %s: its token is revoked at the server and deleted.\n", args[0])
			default:
				fmt.Fprintf(a.stdout, "Logged out of %s: its token is deleted.\n", args[0])
				fmt.Fprintf(a.stderr, "warning: the token was not revoked at the server: %v\n", rev.Err)
			}
			return nil
		},
	}
}

func (a *app) authStatus() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "List each MCP server's auth state",
		Long:  "List each mcp_server and the state of its OAuth token, from the token store\nalone (no server is contacted).",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.authConfig()
			if err != nil {
				return err
			}
			sts, err := toolhost.AuthStatus(cfg, time.Now())
			if err != nil {
				return err
			}
			if len(sts) == 0 {
				fmt.Fprintf(a.stdout, "%s configures no mcp_server.\n", a.g.config)
				return nil
			}
			w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "SERVER\tGRANT\tSTATE")
			for _, st := range sts {
				grant := st.Grant
				if grant == "" {
					grant = "-"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\n", st.Server, grant, describeAuth(st))
			}
			return w.Flush()
		},
	}
}

func serverStatus(cfg *config.Config, name string) (toolhost.MCPAuthStatus, error) {
	sts, err := toolhost.AuthStatus(cfg, time.Now())
	if err != nil {
		return toolhost.MCPAuthStatus{}, err
	}
	for _, st := range sts {
		if st.Server == name {
			return st, nil
		}
	}
	return toolhost.MCPAuthStatus{}, fmt.Errorf("no mcp_server %q", name)
}

// describeAuth is a server's state in words.
func describeAuth(st toolhost.MCPAuthStatus) string {
	s := describeState(st)
	if st.StoreError != nil {
		s += fmt.Sprintf(" (its token file is unreadable, and ignored: %v)", st.StoreError)
	}
	return s
}

func describeState(st toolhost.MCPAuthStatus) string {
	var s string
	switch st.State {
	case toolhost.AuthNone:
		return "none (no oauth block)"
	case toolhost.AuthValid:
		s = "token valid"
		if !st.Expiry.IsZero() {
			s += " until " + st.Expiry.UTC().Format(time.RFC3339)
		}
	case toolhost.AuthRefreshable:
		s = "token expired at " + st.Expiry.UTC().Format(time.RFC3339) + ", refreshed on use"
	case toolhost.AuthNeedsLogin:
		return fmt.Sprintf("needs login: run `host auth login %s`", st.Server)
	default:
		return string(st.State)
	}
	if len(st.Scopes) > 0 {
		s += " (scopes: " + strings.Join(st.Scopes, " ") + ")"
	}
	return s
}
