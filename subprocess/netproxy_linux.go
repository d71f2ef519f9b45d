package subprocess

import (
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/internal/netguard"
	"github.com/toolhost/toolhost/plugin"
)

// proxyPort is where a tool granted hosts finds its proxy: 127.0.0.1 in
// the tool's own network namespace, where nothing else listens.
const proxyPort = 3128

// treeProxy is the network of one sandboxed tree granted hosts: the tree
// runs in a network namespace with only a loopback, where its shim opens a
// listener on 127.0.0.1:proxyPort and hands the descriptor to the host
// over a socket pair; the host serves a [netguard.Proxy] for the tool's
// allowlist on it. The namespace has no other way out, so every
// connection the tool makes goes through the guard: by name to a granted
// host:port, dialled at a checked public address (or one a rule names).
type treeProxy struct {
	conn  *net.UnixConn // the host's end of the pair
	child *os.File      // the shim's end, passed to it as an extra file
	proxy *netguard.Proxy
	done  chan struct{} // closed when serve returns
}

// newTreeProxy prepares the proxy of one tree of tool, allowed hosts: it
// waits for the listener of the shim that gets tp.child.
func newTreeProxy(tool string, hosts []plugin.HostRule, lookup netguard.Lookup, log hclog.Logger) (*treeProxy, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("proxy socket pair: %w", err)
	}
	host := os.NewFile(uintptr(fds[0]), "proxy-control")
	c, err := net.FileConn(host)
	host.Close()
	if err != nil {
		unix.Close(fds[1])
		return nil, fmt.Errorf("proxy socket pair: %w", err)
	}
	tp := &treeProxy{conn: c.(*net.UnixConn), child: os.NewFile(uintptr(fds[1]), "proxy-control"), done: make(chan struct{})}
	tp.proxy = netguard.NewProxy(netguard.New(hosts, lookup), netguard.ProxyOptions{
		OnRefuse: func(target string, err error) {
			log.Warn("network request refused", "tool", tool, "target", target, "reason", err)
		},
	})
	go tp.serve()
	return tp, nil
}

// started closes the host's copy of the shim's end, once the shim has it.
func (tp *treeProxy) started() {
	tp.child.Close()
}

// serve receives the listener from the shim and serves the proxy on it
// until close; it returns at once if the shim exits without sending one.
func (tp *treeProxy) serve() {
	defer close(tp.done)
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := tp.conn.ReadMsgUnix(buf, oob)
	if err != nil || oobn == 0 {
		return // the shim exited, or close
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return
	}
	f := os.NewFile(uintptr(fds[0]), "proxy-listener")
	l, err := net.FileListener(f)
	f.Close()
	if err != nil {
		return
	}
	_ = tp.proxy.Serve(l) // closes l
}

// close stops the proxy and its open tunnels.
func (tp *treeProxy) close() {
	tp.child.Close()
	tp.conn.Close()
	tp.proxy.Close()
	<-tp.done
}

// sendProxyListener is the shim's half: in the tree's network namespace,
// with its loopback up, it listens on 127.0.0.1:proxyPort and sends the
// descriptor to the host over sock, then closes both: the plugin inherits
// neither.
func sendProxyListener(sock int) error {
	defer unix.Close(sock)
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: proxyPort, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return fmt.Errorf("bind 127.0.0.1:%d: %w", proxyPort, err)
	}
	if err := unix.Listen(fd, 128); err != nil {
		return err
	}
	return unix.Sendmsg(sock, []byte{1}, unix.UnixRights(fd), nil, 0)
}

// proxyEnv sets the proxy variables common clients read (curl, Go,
// Python, git, npm) in env, replacing any the environment had.
func proxyEnv(env []string) []string {
	u := fmt.Sprintf("http://127.0.0.1:%d", proxyPort)
	vars := map[string]string{
		"HTTP_PROXY": u, "HTTPS_PROXY": u, "http_proxy": u, "https_proxy": u,
		"ALL_PROXY": u, "all_proxy": u, "NO_PROXY": "", "no_proxy": "",
	}
	out := env[:0:0]
	for _, e := range env {
		name, _, _ := strings.Cut(e, "=")
		if _, ok := vars[name]; !ok {
			out = append(out, e)
		}
	}
	for _, name := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"} {
		out = append(out, name+"="+vars[name])
	}
	return out
}
