package oauth

// Where the handler's requests may go. Discovery, registration and token
// endpoints are named by the servers themselves (the resource's metadata
// names the authorization server, whose metadata names the rest), so a
// hostile public server could point the client, and the secret or
// assertion it sends, at an address inside the operator's network. The
// rule, checked on the addresses actually dialled: an MCP server that is
// itself publicly routable gets only publicly routable endpoints; one the
// operator reaches inside the network (a private, loopback or link-local
// address) is an internal deployment, whose authorization server may be
// internal too. A proxy the environment names (HTTPS_PROXY, HTTP_PROXY) is
// the operator's choice and is dialled as it is; through it, the proxy
// decides where requests may go.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"

	"golang.org/x/net/http/httpproxy"

	"github.com/toolhost/toolhost/internal/netguard"
)

// dialer dials for the handler's HTTP client.
type dialer struct {
	server  string          // the MCP server's host
	proxies map[string]bool // host:port of the environment's proxies
	lookup  netguard.Lookup
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
}

func newDialer(serverURL string) *dialer {
	host := ""
	if u, err := url.Parse(serverURL); err == nil {
		host = u.Hostname()
	}
	d := &dialer{server: host, proxies: map[string]bool{}, lookup: netguard.DefaultLookup, dial: (&net.Dialer{}).DialContext}
	env := httpproxy.FromEnvironment()
	for _, p := range []string{env.HTTPProxy, env.HTTPSProxy} {
		if p != "" && !strings.Contains(p, "://") {
			p = "http://" + p // as net/http reads it
		}
		if u, err := url.Parse(p); err == nil && u.Host != "" {
			port := u.Port()
			if port == "" {
				port = map[string]string{"https": "443", "socks5": "1080"}[u.Scheme]
				if port == "" {
					port = "80"
				}
			}
			d.proxies[net.JoinHostPort(u.Hostname(), port)] = true
		}
	}
	return d
}

// resolve returns the addresses of host (itself when it is one).
func (d *dialer) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a.Unmap()}, nil
	}
	addrs, err := d.lookup(ctx, host)
	for i := range addrs {
		addrs[i] = addrs[i].Unmap()
	}
	return addrs, err
}

// internal reports whether the MCP server is reached inside the network.
func (d *dialer) internal(ctx context.Context) bool {
	addrs, err := d.resolve(ctx, d.server)
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if netguard.Forbidden(a) {
			return true
		}
	}
	return false
}

// DialContext dials the first address of addr's host that the rule
// allows, by its IP, so that what is checked is what is reached.
func (d *dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if d.proxies[addr] {
		return d.dial(ctx, network, addr)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	addrs, err := d.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	var internal, checked bool
	var errs []error
	for _, a := range addrs {
		if netguard.Forbidden(a) {
			if !checked {
				internal, checked = d.internal(ctx), true
			}
			if !internal {
				errs = append(errs, fmt.Errorf("%s (%s): %w; the MCP server %s is public, so its authorization endpoints must be too", host, a, netguard.ErrAddrForbidden, d.server))
				continue
			}
		}
		c, err := d.dial(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("%s: no address", host)
	}
	return nil, errors.Join(errs...)
}
