//go:build !linux

package pluginhost

import "os/exec"

// dieWithHost does nothing outside Linux, which alone has a parent-death signal: there a plugin
// outlives a host killed with SIGKILL, and must be stopped by hand.
func dieWithHost(*exec.Cmd) {}
