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

func becomeSubreaper() error                { return errUnsupportedPlatform }
func pidNamespaceAllowed() bool             { return false }
func sysProcAttr(bool) *syscall.SysProcAttr { return nil }
func landlockABI() int                      { return 0 }
func seccompSupported() bool                { return false }

func killTree(context.Context, int, int, time.Duration) error { return errUnsupportedPlatform }

func tree(context.Context, int, int, bool) []int { return nil }

type usage struct {
	Processes int
	Threads   int
	RSS       uint64
	CPU       time.Duration
}

func sample(context.Context, int, int, bool) usage { return usage{} }

func fileKey(*os.File) (string, error) { return "", errUnsupportedPlatform }

func limitSignal(syscall.Signal) string { return "" }
