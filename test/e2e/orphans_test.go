package e2e

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/foresight-router/foresight/internal/eventually"
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
	cmd := exec.Command(hostBin, "serve", "--config", file)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// serve prints its listeners once the pipeline, and so every plugin process, is up.
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatalf("serve printed no first line: %v; stderr: %s", err, stderr.String())
	}
	plugins := childrenOf(t, cmd.Process.Pid)
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
		eventually.Wait(t, 10*time.Second, "the end of plugin process "+strconv.Itoa(pid), func() bool { return !processAlive(pid) })
	}
}

// childrenOf returns the pids of the processes whose parent is pid, from /proc.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range stats {
		if ppid, _, ok := statOf(f); ok && ppid == pid {
			child, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			out = append(out, child)
		}
	}
	return out
}

// processAlive reports whether pid is a process that has not ended (a zombie has: it only waits for
// whichever process adopted it to collect its status).
func processAlive(pid int) bool {
	_, state, ok := statOf("/proc/" + strconv.Itoa(pid) + "/stat")
	return ok && state != "Z"
}

// statOf reads a process's parent and state from its /proc stat file.
func statOf(file string) (ppid int, state string, ok bool) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, "", false
	}
	i := bytes.LastIndexByte(data, ')') // the command name may hold spaces and parentheses
	if i < 0 {
		return 0, "", false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 2 {
		return 0, "", false
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, f[0], err == nil
}
