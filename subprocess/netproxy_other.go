//go:build !linux

package subprocess

import (
	"errors"
	"os"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/internal/netguard"
	"github.com/toolhost/toolhost/plugin"
)

// treeProxy is Linux-only (see netproxy_linux.go): the adapter refuses
// subprocess tools elsewhere, so none is ever made.
type treeProxy struct{ child *os.File }

func newTreeProxy(string, []plugin.HostRule, netguard.Lookup, hclog.Logger) (*treeProxy, error) {
	return nil, errors.New("subprocess network proxies run only on Linux")
}

func (*treeProxy) started() {}
func (*treeProxy) close()   {}

func proxyEnv(env []string) []string { return env }
