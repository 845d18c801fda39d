// Package deathsig makes a child process die with the process that started it: plugin processes
// with their router, the tests' servers with their test.
package deathsig

import (
	"os/exec"
	"syscall"
)

// Arm asks Linux to SIGKILL cmd's process when its parent dies, however it dies (kill -9
// included), so that it does not outlive it.
//
// Linux sends the signal when the thread that started the process ends, not the process. Go ends
// a thread only when a goroutine locked to it (runtime.LockOSThread) returns without unlocking;
// ordinary goroutines' threads run until the process exits. Go also checks, in the child before
// exec, that the parent did not die before the signal was armed.
func Arm(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
