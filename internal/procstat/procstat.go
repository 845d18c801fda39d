// Package procstat reads what Linux's /proc/PID/stat says of a process: its state, its parent
// and its start time. The router's orphan reaper, the benches and the end-to-end tests use it to
// find a process's children and to tell a running process from an ended one.
package procstat

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Root is where the proc file system is mounted.
const Root = "/proc"

// Stat is what /proc/PID/stat says of a process.
type Stat struct {
	// State is the one-letter state: R running, S sleeping, D disk wait, T stopped, Z zombie
	// (ended, its status not yet collected by its parent), X dead, ….
	State byte
	// PPID is its parent's pid.
	PPID int
	// Start is when it started, in clock ticks after boot: with the pid, it names one process
	// even after the pid is given to another.
	Start uint64
}

// Ended reports whether the process has ended: a zombie or dead.
func (s Stat) Ended() bool { return s.State == 'Z' || s.State == 'X' }

// Read reads pid's stat under the proc file system mounted at root (Root, or a test's tree). A
// process that does not exist is an error wrapping fs.ErrNotExist.
func Read(root string, pid int) (Stat, error) {
	file := filepath.Join(root, strconv.Itoa(pid), "stat")
	data, err := os.ReadFile(file)
	if err != nil {
		return Stat{}, err
	}
	// "pid (comm) state ppid …": comm may hold spaces and parentheses, so fields count from the
	// last ')'; the start time is the 22nd field, the 20th after it.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return Stat{}, fmt.Errorf("%s: no command name", file)
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("%s: %d fields after the command name, want at least 20", file, len(f))
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return Stat{}, fmt.Errorf("%s: parent: %w", file, err)
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return Stat{}, fmt.Errorf("%s: start time: %w", file, err)
	}
	return Stat{State: f[0][0], PPID: ppid, Start: start}, nil
}

// Running reports whether pid is a process under Root that has not ended.
func Running(pid int) bool {
	st, err := Read(Root, pid)
	return err == nil && !st.Ended()
}

// Children returns the pids of the processes under root whose parent is pid, none where root
// cannot be read.
func Children(root string, pid int) []int {
	entries, _ := os.ReadDir(root)
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil || !e.IsDir() {
			continue
		}
		if st, err := Read(root, child); err == nil && st.PPID == pid {
			out = append(out, child)
		}
	}
	return out
}
