package pluginhost

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/foresight-router/foresight/internal/procstat"
	"github.com/rs/zerolog"
)

// routerEnv names the variable the host sets in every plugin process's environment: the host
// process that started it, as "<pid>.<start time>" (the start time in clock ticks since boot, from
// /proc/<pid>/stat, so that another process given the pid later is not taken for the host).
const routerEnv = "FORESIGHT_ROUTER_ID"

// procRoot is where the proc file system is mounted.
const procRoot = procstat.Root

// host is this process as a host of plugins: its marker, and whether it reaped orphans yet
// (once, before its first plugin process).
var host struct {
	idOnce, reapOnce sync.Once
	id               string
}

// routerID returns this host's marker for its plugins' environment.
func routerID() string {
	host.idOnce.Do(func() {
		pid := os.Getpid()
		st, _ := procstat.Read(procRoot, pid) // zero where there is no /proc: reapOrphans then finds nothing
		host.id = fmt.Sprintf("%d.%d", pid, st.Start)
	})
	return host.id
}

// orphan is a plugin process whose host no longer runs.
type orphan struct {
	pid     int
	router  string   // its routerEnv value
	sockets []string // the Unix sockets it listens on, left behind when it is killed
}

// reapOrphans kills the plugin processes that a previous host left running (one
// killed with SIGKILL on a system without a parent-death signal, or that had locked the thread
// that started them) and removes their sockets. It only touches processes of this user that
// carry the marker of a host that is gone; never another program, never a live host's plugins.
func reapOrphans(log zerolog.Logger) {
	for _, o := range findOrphans(procRoot, uint32(os.Getuid()), os.Getpid()) {
		if err := killOrphan(o); err != nil {
			log.Warn().Err(err).Int("pid", o.pid).Str("router", o.router).Msg("killing a plugin process its router left running failed")
			continue
		}
		for _, s := range o.sockets {
			if fi, err := os.Lstat(s); err == nil && fi.Mode()&fs.ModeSocket != 0 {
				_ = os.Remove(s)
			}
		}
		log.Warn().Int("pid", o.pid).Str("router", o.router).Strs("sockets", o.sockets).
			Msg("killed a plugin process its router left running")
	}
}

// killOrphan sends o SIGKILL through a handle on the process (a pidfd on Linux), after checking
// through that handle that the pid still names the orphan and not a process that took it since.
func killOrphan(o orphan) error {
	p, err := os.FindProcess(o.pid)
	if err != nil {
		return err
	}
	defer p.Release()
	if marker(procRoot, o.pid) != o.router {
		return nil // gone meanwhile
	}
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// findOrphans lists the processes under proc, other than self, that uid owns and that carry the
// marker of a host that no longer runs (no process with its pid and start time, or a zombie).
func findOrphans(proc string, uid uint32, self int) []orphan {
	entries, err := os.ReadDir(proc)
	if err != nil {
		return nil
	}
	var out []orphan
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || !ownedBy(filepath.Join(proc, e.Name()), uid) {
			continue
		}
		m := marker(proc, pid)
		if m == "" || !hostGone(proc, m) {
			continue
		}
		out = append(out, orphan{pid: pid, router: m, sockets: listeningSockets(proc, pid)})
	}
	return out
}

func ownedBy(dir string, uid uint32) bool {
	fi, err := os.Stat(dir)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Uid == uid
}

// marker returns the routerEnv value in the environment pid started with ("" without one, or
// when it cannot be read).
func marker(proc string, pid int) string {
	env, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "environ"))
	if err != nil {
		return ""
	}
	m := ""
	for _, kv := range bytes.Split(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte(routerEnv+"=")); ok {
			m = string(v) // the last one is the one the process sees
		}
	}
	return m
}

// hostGone reports whether the host a marker names has ended. A marker that does not parse, or
// a host whose state cannot be read for another reason than its absence, counts as running.
func hostGone(proc, m string) bool {
	pidText, startText, ok := strings.Cut(m, ".")
	pid, err1 := strconv.Atoi(pidText)
	start, err2 := strconv.ParseUint(startText, 10, 64)
	if !ok || err1 != nil || err2 != nil || pid <= 0 || start == 0 {
		return false
	}
	st, err := procstat.Read(proc, pid)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true
	case err != nil:
		return false
	}
	return st.Start != start || st.Ended()
}

// listeningSockets returns the paths of the Unix sockets pid holds open (its plugin socket).
func listeningSockets(proc string, pid int) []string {
	dir := filepath.Join(proc, strconv.Itoa(pid))
	fds, err := os.ReadDir(filepath.Join(dir, "fd"))
	if err != nil {
		return nil
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(dir, "fd", fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	f, err := os.Open(filepath.Join(dir, "net", "unix"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var paths []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "Num RefCount Protocol Flags Type St Inode Path"; no path for an unnamed socket, and
		// "@…" for one in the abstract namespace, which has no file.
		fields := strings.Fields(sc.Text())
		if len(fields) == 8 && inodes[fields[6]] && strings.HasPrefix(fields[7], "/") {
			paths = append(paths, fields[7])
		}
	}
	return paths
}
