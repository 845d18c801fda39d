//go:build !linux

// Package deathsig makes a child process die with the process that started it: plugin processes
// with their router, the tests' servers with their test.
package deathsig

import "os/exec"

// Arm does nothing outside Linux, which alone has a parent-death signal: there a child outlives a
// parent killed with SIGKILL, and must be stopped by hand.
func Arm(*exec.Cmd) {}
