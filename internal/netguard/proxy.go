package netguard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Proxy is an HTTP proxy that is a tool's only way to the network: it
// tunnels CONNECT requests (HTTPS, or any protocol over TCP) to a host and
// port the tool's guard allows, and forwards plain-HTTP requests written in
// absolute form ("GET http://host/path") after the same checks. Redirects
// are not followed: the tool sees them and asks again, through the proxy,
// so every hop is checked. Everything else is refused with 403 and a line
// saying why, and reported to [ProxyOptions.OnRefuse].
//
// It injects no secrets and redacts nothing: TLS goes through untouched.
// A tool's output is redacted by the pipeline like any tool's.
type Proxy struct {
	guard *Guard
	opts  ProxyOptions
	tr    *http.Transport
	srv   *http.Server
	slots chan struct{} // one per open tunnel or forwarded request

	mu      sync.Mutex
	tunnels map[net.Conn]struct{}
	closed  bool
}

// ProxyOptions tune a [Proxy]. The zero value is usable.
type ProxyOptions struct {
	// OnRefuse, if set, is called for each request refused by policy, with
	// the target as the tool asked for it and the reason.
	OnRefuse func(target string, err error)
	// MaxConns caps tunnels and forwarded requests open at once; beyond
	// it requests get 503. Default 64.
	MaxConns int
	// DialTimeout bounds connecting to a target. Default 10 s.
	DialTimeout time.Duration
}

// NewProxy returns a proxy for the tool g guards.
func NewProxy(g *Guard, opts ProxyOptions) *Proxy {
	if opts.MaxConns <= 0 {
		opts.MaxConns = 64
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 10 * time.Second
	}
	p := &Proxy{guard: g, opts: opts, tr: NewTransport(), slots: make(chan struct{}, opts.MaxConns), tunnels: map[net.Conn]struct{}{}}
	p.srv = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    64 << 10,
		IdleTimeout:       60 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0), // failures are answered, not logged
	}
	// Forward what the tool asked for as it asked: no compression added
	// (and decoded) on its behalf.
	p.tr.DisableCompression = true
	return p
}

// Serve accepts connections on l until [Proxy.Close]. It returns nil after
// Close, and the listener's error otherwise.
func (p *Proxy) Serve(l net.Listener) error {
	err := p.srv.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops accepting, and closes open tunnels and connections at once.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.tunnels {
		c.Close()
	}
	p.mu.Unlock()
	err := p.srv.Close()
	p.tr.CloseIdleConnections()
	return err
}

// hopHeaders are the hop-by-hop headers a proxy does not forward
// (RFC 9110 section 7.6.1), and the proxy's own.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func removeHopHeaders(h http.Header) {
	for _, f := range h.Values("Connection") {
		for name := range strings.SplitSeq(f, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// ServeHTTP handles one proxy request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case p.slots <- struct{}{}:
		defer func() { <-p.slots }()
	default:
		http.Error(w, fmt.Sprintf("toolhost proxy: more than %d connections at once", p.opts.MaxConns), http.StatusServiceUnavailable)
		return
	}
	if r.Method == http.MethodConnect {
		p.tunnel(w, r)
		return
	}
	p.forward(w, r)
}

func (p *Proxy) refuse(w http.ResponseWriter, target string, err error) {
	if p.opts.OnRefuse != nil {
		p.opts.OnRefuse(target, err)
	}
	http.Error(w, "toolhost proxy: refused: "+err.Error(), http.StatusForbidden)
}

// fail answers a dial or upstream error: 403 for a refusal by policy, 504
// for a timeout, 502 otherwise.
func (p *Proxy) fail(w http.ResponseWriter, target string, err error) {
	if Refused(err) {
		p.refuse(w, target, err)
		return
	}
	status := http.StatusBadGateway
	if errors.Is(err, context.DeadlineExceeded) {
		status = http.StatusGatewayTimeout
	}
	http.Error(w, "toolhost proxy: "+target+": "+err.Error(), status)
}

// splitTarget parses a CONNECT authority, "host:port" or "[v6]:port".
func splitTarget(authority string) (string, int, error) {
	host, ps, err := net.SplitHostPort(authority)
	if err != nil {
		return "", 0, fmt.Errorf("CONNECT target %q: want host:port", authority)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("CONNECT target %q: bad port", authority)
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "" {
		return "", 0, fmt.Errorf("CONNECT target %q: no host", authority)
	}
	if a, err := netip.ParseAddr(host); err == nil && a.Zone() != "" {
		return "", 0, fmt.Errorf("CONNECT target %q: %w (scoped address)", authority, ErrHostNotAllowed)
	}
	return host, port, nil
}

func (p *Proxy) tunnel(w http.ResponseWriter, r *http.Request) {
	target := r.Host
	host, port, err := splitTarget(target)
	if err != nil {
		if errors.Is(err, ErrHostNotAllowed) {
			p.refuse(w, target, err)
		} else {
			http.Error(w, "toolhost proxy: "+err.Error(), http.StatusBadRequest)
		}
		return
	}
	if err := p.guard.CheckHost(host, port); err != nil {
		p.refuse(w, target, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.opts.DialTimeout)
	up, err := p.guard.Dial(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	cancel()
	if err != nil {
		p.fail(w, target, err)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "toolhost proxy: CONNECT needs HTTP/1.1", http.StatusHTTPVersionNotSupported)
		return
	}
	down, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if !p.track(up, down) {
		return
	}
	defer p.untrack(up, down)
	if _, err := io.WriteString(down, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	splice(up, down, buf.Reader)
}

// track registers a tunnel's two ends so that Close can end it; false
// (both closed) if the proxy is closing.
func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.tunnels[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		c.Close()
		delete(p.tunnels, c)
	}
}

// splice copies both ways until either side is done; the client's bytes
// already buffered by the server come first.
func splice(up, down net.Conn, buffered *bufio.Reader) {
	done := make(chan struct{}, 2)
	go func() {
		io.Copy(up, io.MultiReader(io.LimitReader(buffered, int64(buffered.Buffered())), down))
		if tc, ok := up.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		io.Copy(down, up)
		if tc, ok := down.(interface{ CloseWrite() error }); ok {
			tc.CloseWrite()
		}
		done <- struct{}{}
	}()
	<-done
	<-done
}

func (p *Proxy) forward(w http.ResponseWriter, r *http.Request) {
	if !r.URL.IsAbs() {
		http.Error(w, "toolhost proxy: this is a proxy: send absolute-form requests (GET http://host/path) or CONNECT", http.StatusBadRequest)
		return
	}
	target := r.URL.Redacted()
	if r.URL.Scheme != "http" {
		p.refuse(w, target, fmt.Errorf("scheme %q: %w (use CONNECT for https)", r.URL.Scheme, ErrHostNotAllowed))
		return
	}
	if err := p.guard.CheckURL(r.URL); err != nil {
		p.refuse(w, target, err)
		return
	}
	out := r.Clone(WithGuard(r.Context(), p.guard))
	out.RequestURI = ""
	out.Host = r.URL.Host // the Host header names what was checked
	removeHopHeaders(out.Header)
	if r.ContentLength == 0 {
		out.Body = nil
	}
	resp, err := p.tr.RoundTrip(out)
	if err != nil {
		p.fail(w, target, err)
		return
	}
	defer resp.Body.Close()
	removeHopHeaders(resp.Header)
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}
