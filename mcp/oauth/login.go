package oauth

// The person's part of a login: the handler listens on the loopback
// redirect URL, has the Browser send the person to the authorization URL,
// and waits for their browser to come back with the code (RFC 8252: a
// native app's loopback redirect).

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// fetchCode is the SDK's AuthorizationCodeFetcher.
func (h *Handler) fetchCode(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	redirect, err := url.Parse(h.RedirectURL())
	if err != nil {
		return nil, fmt.Errorf("redirect URL: %w", err)
	}
	path := redirect.Path
	if path == "" {
		path = "/"
	}
	// The state this login sent: a return that does not carry it is not
	// this login's (a stale tab, another page hitting the port) and must
	// not end the wait with the SDK's "state mismatch".
	authURL, err := url.Parse(args.URL)
	if err != nil {
		return nil, fmt.Errorf("authorization URL: %w", err)
	}
	if authURL.Scheme != "https" && authURL.Scheme != "http" {
		// The authorization server names its login page, and the SDK lets
		// any scheme through for a "localhost" host: no Browser (xdg-open,
		// an application's) is handed file://localhost/… or an app link.
		return nil, fmt.Errorf("the authorization server's login page %q is not an http(s) URL", authURL.Redacted())
	}
	state := authURL.Query().Get("state")
	ln, err := net.Listen("tcp", redirect.Host)
	if err != nil {
		return nil, fmt.Errorf("listening for the login's redirect on %s: %w", redirect.Host, err)
	}
	// Closed here too: srv.Close closes only a listener Serve has begun
	// on, and a login that ends at once (cancelled) may return before the
	// goroutine does, leaving the port bound for the next login.
	defer ln.Close()
	got := make(chan callback, 1)
	mux := http.NewServeMux()
	mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		a, ok := readCallback(r.URL.Query(), state)
		if !ok {
			http.Error(w, "not the return of this login (no code, or another state)", http.StatusBadRequest)
			return
		}
		select {
		case got <- a:
		default: // a second return: the first one counts
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if a.err != nil {
			fmt.Fprintf(w, "<p>toolhost: the login to %s failed: %s</p>", html.EscapeString(h.cfg.Server), html.EscapeString(a.err.Error()))
			return
		}
		fmt.Fprintf(w, "<p>toolhost: logged in to %s. You can close this tab.</p>", html.EscapeString(h.cfg.Server))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()

	if err := h.cfg.Browser(ctx, args.URL); err != nil {
		return nil, fmt.Errorf("sending the user to log in: %w", err)
	}
	t := time.NewTimer(h.cfg.LoginTimeout)
	defer t.Stop()
	select {
	case a := <-got:
		return a.res, a.err
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the login to %s: %w", h.cfg.Server, ctx.Err())
	case <-t.C:
		return nil, fmt.Errorf("waiting for the login to %s: %w: no browser came back to %s within %s", h.cfg.Server, errLoginTimeout, h.RedirectURL(), h.cfg.LoginTimeout)
	}
}

// callback is the browser's return: a code, or the authorization
// server's refusal.
type callback struct {
	res *auth.AuthorizationResult
	err error
}

// readCallback reads the query of a request to the redirect URL; ok is
// false when it is not the return of the login that sent state: no code
// and no error, or another state (RFC 6749, 4.1.2 and 4.1.2.1: both carry
// the request's state).
func readCallback(q url.Values, state string) (callback, bool) {
	if q.Get("state") != state {
		return callback{}, false
	}
	switch {
	case q.Get("error") != "":
		// Quoted and cut: the words are the server's, and go to a
		// terminal (an escape sequence in them would be run by it).
		return callback{err: fmt.Errorf("the authorization server refused the login: %s %s", quoteCut(q.Get("error")), quoteCut(q.Get("error_description")))}, true
	case q.Get("code") == "":
		return callback{}, false
	}
	return callback{res: &auth.AuthorizationResult{Code: q.Get("code"), State: state, Iss: q.Get("iss")}}, true
}

// quoteCut quotes s as Go does (control characters and invalid UTF-8
// escaped) and cuts the quoted text to about 200 bytes.
func quoteCut(s string) string {
	const max = 200
	q := strconv.Quote(s)
	if len(q) <= max {
		return q
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(q[cut]) {
		cut--
	}
	return q[:cut] + "…"
}

// errLoginTimeout is wrapped when nobody came back from the login page.
var errLoginTimeout = errors.New("timed out")
