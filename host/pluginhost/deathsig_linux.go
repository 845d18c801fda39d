package pluginhost

import (
	"os/exec"
	"syscall"
)

// dieWithHost asks Linux to SIGKILL the plugin process when the host dies, however it dies
// (kill -9 included), so that no plugin outlives its router.
//
// Linux sends the signal when the thread that started the process ends, not the process. Go ends
// a thread only when a goroutine locked to it (runtime.LockOSThread) returns without unlocking;
// the host starts plugins from ordinary goroutines (a pipeline's build, a supervisor), whose
// threads run until the host exits. Go also checks, in the child before exec, that the host did
// not die before the signal was armed. A plugin that still outlives its host (a host that locked
// the starting goroutine, another OS) is killed by the next host's reapOrphans.
func dieWithHost(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
