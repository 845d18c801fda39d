package pluginhost

import (
	"os/exec"
	"time"

	"github.com/hashicorp/go-plugin"
)

// killGrace is how long a kill lets go-plugin's graceful close run before it sends SIGKILL, and
// then how long it waits for the close to finish its cleanup. A process that answers its
// Shutdown call exits well within it; a frozen one (SIGSTOP, a stuck runtime) never answers.
const killGrace = 500 * time.Millisecond

// kill ends an incarnation's process for good and releases its connection; only its first call
// does the work, later ones wait for it (at most twice killGrace).
func (inc *incarnation) kill() {
	if inc.client == nil {
		return
	}
	inc.killOnce.Do(func() { killClient(inc.client, inc.cmd) })
}

// killClient stops a plugin process within killGrace whatever go-plugin does: its Kill first
// asks the process to shut down and waits for that answer with no bound, so a frozen process
// would keep it (and whoever called it) waiting forever and never receive SIGKILL. Here Kill runs
// aside; if the process has not exited after killGrace it is sent SIGKILL through cmd, the
// process handle go-plugin started (so never a recycled pid), which also ends Kill's wait.
func killClient(client *plugin.Client, cmd *exec.Cmd) {
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		client.Kill()
	}()
	select {
	case <-closed:
		return
	case <-time.After(killGrace):
	}
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Kill() // os.ErrProcessDone when it exited meanwhile: nothing to do
	}
	select {
	case <-closed:
	case <-time.After(killGrace): // Kill still cleaning up; it ends on its own now the process is gone
	}
}
