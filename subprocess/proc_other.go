//go:build !linux

package subprocess

import (
	"context"
	"os"
	"syscall"
	"time"
)

// platformSupported is false: process groups exist on other Unix systems,
// but there is no subreaper, parent-death signal, seccomp or Landlock, and
// toolhost does not pretend to contain a plugin without them.
const platformSupported = false

func becomeSubreaper() error                      { return errUnsupportedPlatform }
func subreaperSupported() bool                    { return false }
func pidNamespaceAllowed() bool                   { return false }
func sysProcAttr(bool, bool) *syscall.SysProcAttr { return nil }
func landlockABI() int                            { return 0 }
func seccompSupported() bool                      { return false }

func killTree(context.Context, *group, time.Duration) error { return errUnsupportedPlatform }

func tree(context.Context, *group, bool, int) []int { return nil }

type usage struct {
	Processes int
	Threads   int
	RSS       uint64
	CPU       time.Duration

	ForksRefused int
}

func sample(context.Context, *group, bool, int) usage { return usage{} }

func fileKey(*os.File) (string, error) { return "", errUnsupportedPlatform }

func limitSignal(syscall.Signal) string { return "" }

func pidsCgroupParent() string                      { return "" }
func newCgroup(string, string, int) (string, error) { return "", nil }
func removeCgroup(string)                           {}
func joinCgroup(string) error                       { return nil }
func moveToCgroup(string, int) error                { return nil }

func alive(int) bool { return false }

func pidsCgroupAvailable() bool { return false }

func waitExit(int, chan<- struct{}) {}

func removeCgroupWhenEmpty(string) {}

func isSubreaper() bool { return false }

func signalName(sig syscall.Signal) string { return sig.String() }

func hideHostProc() error { return nil }
