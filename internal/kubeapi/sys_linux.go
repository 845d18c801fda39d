package kubeapi

import (
	"os"
	"os/exec"
	"syscall"
)

// dieWithTest asks Linux to SIGKILL the process when the test process dies without its cleanup
// (a test binary's -timeout panic, a kill -9), so that no server outlives its test. Linux sends
// the signal when the thread that started the process ends; Go ends a thread only under a
// goroutine that locked it and returned, which a test's goroutine does not.
func dieWithTest(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// lockFile waits for an exclusive lock on f, released when f is closed.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}
