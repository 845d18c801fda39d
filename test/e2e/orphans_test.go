package e2e

import (
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/foresight-router/foresight/internal/eventually"
	"github.com/foresight-router/foresight/internal/procstat"
)

// TestPluginsDieWithTheRouter kills `foresight serve` with SIGKILL, which it cannot catch: its
// plugin processes must end with it rather than run on as orphans.
func TestPluginsDieWithTheRouter(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc to find the plugin processes in")
	}
	file := writeConfig(t, "die-with-router.yaml", `plugins:
  - {name: scorer, type: latency-scorer, path: ../bin/plugins/scorer}
  - {name: picker, type: weighted-random-picker, path: ../bin/plugins/picker}
pipeline:
  scorers: [{pluginRef: scorer}]
  picker: {pluginRef: picker}
server: {listen: "127.0.0.1:0", adminListen: "127.0.0.1:0"}
endpoints:
  static: [{id: a, address: "127.0.0.1:9"}]
`)
	cmd, _ := spawnServe(t, file)
	plugins := procstat.Children(procstat.Root, cmd.Process.Pid)
	if len(plugins) != 2 {
		t.Fatalf("serve runs %d child processes %v, want its 2 plugins", len(plugins), plugins)
	}
	t.Cleanup(func() { // should the test fail, leave nothing running
		for _, pid := range plugins {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for _, pid := range plugins {
		eventually.Wait(t, 10*time.Second, "the end of plugin process "+strconv.Itoa(pid), func() bool { return !procstat.Running(pid) })
	}
}
