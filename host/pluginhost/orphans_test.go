package pluginhost

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/foresight-router/foresight/internal/procstat"
	"github.com/rs/zerolog"
)

// fakeProc is one process of a fake /proc.
type fakeProc struct {
	state   byte
	start   uint64
	env     []string          // nil: no environ file (unreadable)
	fds     map[string]string // fd number → link target
	netUnix []string          // lines of net/unix after its header
}

// writeProc lays procs out as /proc does under a temp dir and returns it.
func writeProc(t *testing.T, procs map[int]fakeProc) string {
	t.Helper()
	root := t.TempDir()
	for pid, p := range procs {
		dir := filepath.Join(root, fmt.Sprint(pid))
		must(t, os.MkdirAll(filepath.Join(dir, "fd"), 0o755))
		must(t, os.MkdirAll(filepath.Join(dir, "net"), 0o755))
		// The command name holds a space and a parenthesis, as a real one may.
		stat := fmt.Sprintf("%d (plug in)) %c 1 %d 0 0 0 0 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0\n", pid, p.state, pid, p.start)
		must(t, os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644))
		if p.env != nil {
			must(t, os.WriteFile(filepath.Join(dir, "environ"), []byte(strings.Join(p.env, "\x00")+"\x00"), 0o644))
		}
		for fd, target := range p.fds {
			must(t, os.Symlink(target, filepath.Join(dir, "fd", fd)))
		}
		unix := "Num       RefCount Protocol Flags    Type St Inode Path\n" + strings.Join(p.netUnix, "\n")
		must(t, os.WriteFile(filepath.Join(dir, "net", "unix"), []byte(unix), 0o644))
	}
	return root
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestFindOrphans(t *testing.T) {
	const self = 100
	mark := func(v string) []string { return []string{"PATH=/bin", routerEnv + "=" + v} }
	procs := map[int]fakeProc{
		// This host (started at tick 555) and one of its plugins: alive, never an orphan.
		self: {state: 'S', start: 555},
		101:  {state: 'S', start: 600, env: mark("100.555")},
		// Another host that runs, and its plugin: not ours to touch.
		600: {state: 'S', start: 70},
		601: {state: 'S', start: 80, env: mark("600.70")},
		// A plugin of host 200, which no longer exists: an orphan. It listens on /tmp/plugin123
		// (inode 9001), also holds an unnamed socket (9002) and /dev/null; 9003 is another
		// process's socket.
		201: {state: 'S', start: 800, env: mark("200.777"),
			fds: map[string]string{"3": "socket:[9001]", "4": "socket:[9002]", "5": "/dev/null"},
			netUnix: []string{
				"0000000000000000: 00000002 00000000 00010000 0001 01  9001 /tmp/plugin123",
				"0000000000000000: 00000003 00000000 00000000 0001 03  9002",
				"0000000000000000: 00000002 00000000 00010000 0001 01  9003 /tmp/plugin999",
			}},
		// Host 300's pid now belongs to a process started later (tick 2000, not 1000): host 300
		// is gone, so its plugin is an orphan.
		300: {state: 'S', start: 2000},
		301: {state: 'S', start: 1500, env: mark("300.1000")},
		// Host 400 was killed and is a zombie its parent has not reaped: gone too.
		400: {state: 'Z', start: 50},
		401: {state: 'S', start: 60, env: mark("400.50")},
		// Set twice in its environment: the last value is the one the process saw (host 100, alive).
		402: {state: 'S', start: 61, env: append(mark("200.777"), routerEnv+"=100.555")},
		// No marker, an unreadable environment, and a marker that does not parse: never killed.
		501: {state: 'S', start: 90, env: []string{"PATH=/bin"}},
		502: {state: 'S', start: 91},
		503: {state: 'S', start: 92, env: mark("junk")},
		504: {state: 'S', start: 93, env: mark("200.0")},
	}
	proc := writeProc(t, procs)
	uid := uint32(os.Getuid())

	tests := []struct {
		name string
		uid  uint32
		want []orphan
	}{
		{"this user's orphans of dead hosts", uid, []orphan{
			{pid: 201, router: "200.777", sockets: []string{"/tmp/plugin123"}},
			{pid: 301, router: "300.1000"},
			{pid: 401, router: "400.50"},
		}},
		// Another user's processes are never ours, whatever their environment says.
		{"another user", uid + 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := findOrphans(proc, tt.uid, self)
			slices.SortFunc(got, func(a, b orphan) int { return a.pid - b.pid })
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("findOrphans = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestReapOrphansKillsAPluginOfADeadHost runs a process carrying the marker of a host that has
// exited, as a plugin of a router killed with SIGKILL would, and reaps it from the real /proc.
func TestReapOrphansKillsAPluginOfADeadHost(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	dead := exec.Command("true")
	must(t, dead.Start())
	st, err := procstat.Read(procRoot, dead.Process.Pid)
	must(t, err)
	must(t, dead.Wait()) // reaped: its pid and start time name no process now
	gone := fmt.Sprintf("%d.%d", dead.Process.Pid, st.Start)

	live := exec.Command("sleep", "60")
	live.Env = []string{routerEnv + "=" + routerID()} // a plugin of this host: left alone
	must(t, live.Start())
	t.Cleanup(func() { _ = live.Process.Kill(); _ = live.Wait() })
	orphaned := exec.Command("sleep", "60")
	orphaned.Env = []string{routerEnv + "=" + gone}
	must(t, orphaned.Start())
	t.Cleanup(func() { _ = orphaned.Process.Kill() })

	reapOrphans(zerolog.Nop())
	err = orphaned.Wait()
	if ws, ok := orphaned.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the orphan ended with %v, want killed by SIGKILL", err)
	}
	if err := live.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("this host's own plugin was touched: %v", err)
	}
}
