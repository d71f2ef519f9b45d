//go:build !unix

package mcp_test

import "os/exec"

// ownGroup does nothing where there are no process groups.
func ownGroup(*exec.Cmd) {}

// killTree kills cmd.
func killTree(cmd *exec.Cmd) { cmd.Process.Kill() }
