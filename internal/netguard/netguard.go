// Package netguard is toolhost's network policy, one implementation for
// both tiers: which URLs and host:port pairs a tool may reach (its
// allowlist of [plugin.HostRule]s), and which addresses a connection may
// go to once a name is resolved (no loopback, private, link-local,
// metadata or otherwise non-public address unless a rule names it
// exactly). Names are checked before a request and before every redirect;
// resolved addresses when dialling, and the checked address is the one
// dialled, so DNS cannot change between check and connect.
//
// The wasm tier's HTTP host function sends requests through [NewTransport]
// with the tool's [Guard] in the request context ([WithGuard]); the
// subprocess tier runs a [Proxy] for a tool granted hosts and hands it to
// the tool as HTTP_PROXY and HTTPS_PROXY in a network namespace where the
// proxy is the only way out.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/toolhost/toolhost/plugin"
)

// Lookup resolves a host name to addresses. It replaces DNS in tests and
// in hosts with their own resolver.
type Lookup func(ctx context.Context, host string) ([]netip.Addr, error)

// DefaultLookup resolves with the system resolver.
func DefaultLookup(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// Guard decides which URLs a tool may fetch and which addresses a client
// may connect to for it. Host names are checked against the allowlist
// before a request (and before every redirect); resolved addresses are
// checked again when dialling, so a name that resolves to a loopback,
// private, link-local or metadata address is refused unless an operator
// rule names that exact address.
type Guard struct {
	rules  []plugin.HostRule
	lookup Lookup
}

// New returns the guard of a tool granted rules; a nil lookup uses
// [DefaultLookup].
func New(rules []plugin.HostRule, lookup Lookup) *Guard {
	if lookup == nil {
		lookup = DefaultLookup
	}
	return &Guard{rules: rules, lookup: lookup}
}

var (
	// ErrHostNotAllowed: the host (or host:port) is not in the tool's
	// allowlist, or is written as a non-canonical IP address.
	ErrHostNotAllowed = errors.New("host is not in the tool's network allowlist")
	// ErrAddrForbidden: the host resolved to an address that is not
	// publicly routable and that no rule names exactly.
	ErrAddrForbidden = errors.New("address is not publicly routable")
	// ErrRedirectRefused: a redirect to a URL that the checks of a first
	// request refuse (another scheme, credentials in the URL, a host not
	// allowed); see [Guard.CheckRedirect].
	ErrRedirectRefused = errors.New("redirect refused")
)

// Refused reports whether err is a refusal by policy (as opposed to a
// network failure).
func Refused(err error) bool {
	return errors.Is(err, ErrHostNotAllowed) || errors.Is(err, ErrAddrForbidden) || errors.Is(err, ErrRedirectRefused)
}

// hostPort splits a URL into a lower-case host and a port.
func hostPort(u *url.URL) (string, int, error) {
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "" {
		return "", 0, fmt.Errorf("URL %q has no host", u.Redacted())
	}
	ps := u.Port()
	if ps == "" {
		switch u.Scheme {
		case "http":
			ps = "80"
		case "https":
			ps = "443"
		}
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("URL %q has a bad port", u.Redacted())
	}
	return host, port, nil
}

// looksNumeric reports whether host is written like an IP address but is not
// one in canonical form (decimal "2130706433", hex "0x7f000001", octal
// "0177.0.0.1", short "127.1"). Some resolvers accept such forms; we refuse
// them outright.
func looksNumeric(host string) bool {
	if _, err := netip.ParseAddr(host); err == nil {
		return false
	}
	if strings.HasPrefix(host, "0x") {
		return true
	}
	for _, c := range host {
		if (c < '0' || c > '9') && c != '.' {
			return false
		}
	}
	return true
}

// CheckURL reports whether the tool may fetch u: http or https, no
// credentials in it, and a host and port the allowlist allows.
func (g *Guard) CheckURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("URL %q: only http and https are allowed", u.Redacted())
	}
	if u.User != nil {
		return fmt.Errorf("URL %q: credentials in URLs are not allowed; use a secret in a header", u.Redacted())
	}
	host, port, err := hostPort(u)
	if err != nil {
		return err
	}
	return g.CheckHost(host, port)
}

// CheckHost reports whether the allowlist allows host (a name or an IP
// address, lower case, without brackets) on port.
func (g *Guard) CheckHost(host string, port int) error {
	if looksNumeric(host) {
		return fmt.Errorf("%s: %w (non-canonical IP address form)", host, ErrHostNotAllowed)
	}
	for _, r := range g.rules {
		if r.Allows(host, port) {
			return nil
		}
	}
	return fmt.Errorf("%s:%d: %w", host, port, ErrHostNotAllowed)
}

var extraForbidden = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),   // NAT64 can reach any IPv4 address
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
	netip.MustParsePrefix("2002::/16"),      // 6to4 embeds IPv4
	netip.MustParsePrefix("2001::/32"),      // Teredo
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("fec0::/10"), // deprecated site-local
}

// Forbidden reports whether a is an address tools may not reach by
// default: loopback, private, link-local (including cloud metadata at
// 169.254.169.254), multicast, unspecified, reserved, and any IPv4-mapped or
// translated form of those.
func Forbidden(a netip.Addr) bool {
	if a.Is4In6() {
		return true // mapped forms are refused whatever they map to
	}
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() || !a.IsValid() {
		return true
	}
	if a.Is4() && a == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return true
	}
	for _, p := range extraForbidden {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// AddrAllowed reports whether a client may connect to a:port for the tool:
// a is public, or a rule names it exactly with that port.
func (g *Guard) AddrAllowed(a netip.Addr, port int) bool {
	if !Forbidden(a) {
		return true
	}
	for _, r := range g.rules {
		if ra, err := netip.ParseAddr(r.Host); err == nil && ra == a && r.AllowsPort(port) {
			return true
		}
	}
	return false
}

// Dial connects to addr (host:port) over TCP after resolving it and
// checking every address. It dials the checked address itself, so DNS
// cannot change between check and connect. It does not check the
// allowlist: callers check the name first ([Guard.CheckURL],
// [Guard.CheckHost]).
func (g *Guard) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(ps)
	if err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		if looksNumeric(host) {
			return nil, fmt.Errorf("dial %s: %w", host, ErrHostNotAllowed)
		}
		addrs, err = g.lookup(ctx, host)
		if err != nil {
			return nil, err
		}
	}
	var lastErr error = fmt.Errorf("dial %s: no addresses", host)
	d := net.Dialer{Timeout: 10 * time.Second}
	for _, a := range addrs {
		if !g.AddrAllowed(a, port) {
			lastErr = fmt.Errorf("dial %s (%s): %w", host, a, ErrAddrForbidden)
			continue
		}
		c, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return c, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

type guardKey struct{}

// WithGuard returns ctx carrying g, for requests sent through
// [NewTransport].
func WithGuard(ctx context.Context, g *Guard) context.Context {
	return context.WithValue(ctx, guardKey{}, g)
}

// guardedDial dials through the guard the request's context carries; a
// request without one is refused.
func guardedDial(ctx context.Context, network, addr string) (net.Conn, error) {
	g, _ := ctx.Value(guardKey{}).(*Guard)
	if g == nil {
		return nil, fmt.Errorf("dial %s: %w", addr, ErrHostNotAllowed)
	}
	return g.Dial(ctx, network, addr)
}

// NewTransport returns an HTTP transport that dials through the guard of
// each request ([WithGuard]; a request without one is refused) and never
// uses a proxy. Idle connections are keyed by
// host:port, and a connection is only made after the address check.
func NewTransport() *http.Transport {
	return &http.Transport{
		Proxy:                  nil, // proxy variables are ignored on purpose
		DialContext:            guardedDial,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  30 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		MaxIdleConns:           4,
		IdleConnTimeout:        30 * time.Second,
	}
}

// MaxRedirects is how many redirects one request follows.
const MaxRedirects = 5

// CheckRedirect returns an http.Client CheckRedirect policy for the tool g
// guards: at most [MaxRedirects] redirects; every target checked as the
// first request was (a refusal is [Refused]); hop called for each
// redirect, to count it against the tool's limits (an error from it stops
// the request with that error); and the headers named in toolHeaders,
// which the tool set and which may carry injected secrets, removed once a
// redirect leaves the host the tool named, so that secrets go only there.
func (g *Guard) CheckRedirect(hop func() error, toolHeaders []string) func(*http.Request, []*http.Request) error {
	return func(r *http.Request, via []*http.Request) error {
		if len(via) > MaxRedirects {
			return fmt.Errorf("stopped after %d redirects", MaxRedirects)
		}
		if err := g.CheckURL(r.URL); err != nil {
			return fmt.Errorf("%w: %w", ErrRedirectRefused, err)
		}
		if hop != nil {
			if err := hop(); err != nil {
				return err
			}
		}
		if r.URL.Host != via[0].URL.Host {
			for _, k := range toolHeaders {
				r.Header.Del(k)
			}
		}
		return nil
	}
}
