//go:build !linux

package kubeapi

import (
	"os"
	"os/exec"
)

// dieWithTest does nothing outside Linux, which alone has a parent-death signal: there a server
// outlives a test process killed before its cleanup, and must be stopped by hand.
func dieWithTest(*exec.Cmd) {}

// lockFile does not lock outside Linux: test processes that build the binaries at once may run
// into each other there (build them first with make kube-apiserver).
func lockFile(*os.File) error { return nil }
