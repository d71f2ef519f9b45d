package oauth

// The redirect policy of the handler's HTTP client. The SDK's discovery
// client checks redirects itself only while the client it is given sets no
// policy; token and registration requests (the SDK's and ours, through the
// oauth2 package) follow whatever policy the client has, which for a plain
// http.Client is any ten redirects: a hostile authorization server could
// answer a token request with a 307 to an address inside the network, and
// the client would POST its secret or assertion there.

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"github.com/toolhost/toolhost/internal/netguard"
)

// errRedirect is wrapped by a refused redirect.
var errRedirect = errors.New("redirect refused")

// maxRedirects is the SDK's limit for discovery.
const maxRedirects = 10

// newHTTPClient is the client of a Config without one, for the MCP server
// at serverURL: redirects as checkRedirect allows, and dials as dialer
// allows.
func newHTTPClient(serverURL string) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = newDialer(serverURL).DialContext
	return &http.Client{Timeout: 30 * time.Second, CheckRedirect: checkRedirect, Transport: tr}
}

// checkRedirect never lets a request that is not a GET be redirected (a
// token or registration POST: a 307 or 308 resends its body, a 301-303
// turns it into a GET elsewhere), and lets a discovery GET follow at most
// maxRedirects redirects, never from https to http and never to an
// address that is not publicly routable (netguard.Forbidden, loopback
// included): what the SDK checks when no policy is set, which this one
// replaces.
func checkRedirect(req *http.Request, via []*http.Request) error {
	first, prev := via[0], via[len(via)-1]
	switch {
	case first.Method != http.MethodGet:
		return fmt.Errorf("%w: a %s to %s was redirected to %s", errRedirect, first.Method, first.URL.Redacted(), req.URL.Redacted())
	case len(via) >= maxRedirects:
		return fmt.Errorf("%w: more than %d redirects", errRedirect, maxRedirects)
	case prev.URL.Scheme == "https" && req.URL.Scheme != "https":
		return fmt.Errorf("%w: from https to %s", errRedirect, req.URL.Redacted())
	}
	host := req.URL.Hostname()
	addrs := []netip.Addr{}
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = append(addrs, a)
	} else {
		var err error
		if addrs, err = netguard.DefaultLookup(req.Context(), host); err != nil {
			return fmt.Errorf("%w: resolving %s: %v", errRedirect, host, err)
		}
	}
	for _, a := range addrs {
		if netguard.Forbidden(a.Unmap()) {
			return fmt.Errorf("%w: to %s, %w", errRedirect, req.URL.Redacted(), netguard.ErrAddrForbidden)
		}
	}
	return nil
}
