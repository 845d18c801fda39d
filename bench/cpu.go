package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/foresight-router/foresight/internal/procstat"
)

// clockTick is the kernel's USER_HZ, the unit of utime and stime in /proc/<pid>/stat (100 on
// every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// cpuTime returns the user+system CPU time a process has used, from /proc/<pid>/stat (Linux).
func cpuTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; the fields after its closing parenthesis are
	// state, ppid, …; utime and stime are fields 14 and 15 overall, 12 and 13 after the name.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// cpuMeter sums the CPU time of a set of processes between two readings.
type cpuMeter struct {
	pids  []int
	start []time.Duration
}

// newCPUMeter takes the first reading of the processes pids.
func newCPUMeter(pids ...int) *cpuMeter {
	m := &cpuMeter{pids: pids, start: make([]time.Duration, len(pids))}
	for i, pid := range pids {
		m.start[i], _ = cpuTime(pid)
	}
	return m
}

// used returns the CPU time the processes used since newCPUMeter, or false where /proc is missing.
func (m *cpuMeter) used() (time.Duration, bool) {
	var total time.Duration
	for i, pid := range m.pids {
		t, err := cpuTime(pid)
		if err != nil {
			return 0, false
		}
		total += t - m.start[i]
	}
	return total, true
}

// meter is a CPU reading begun: what a process, a set of them or a process tree used since.
type meter interface {
	// used returns the CPU time used since the first reading, or false where /proc is missing.
	used() (time.Duration, bool)
}

// process names one process: its pid and its start time, so that a pid given again to another
// process between two readings is not taken for the first.
type process struct {
	pid   int
	start uint64
}

// treeMeter sums the CPU time of a process and all its descendants between two readings: a
// proxy's whole cost (nginx's master and workers, the router and its plugin processes). A
// process that appears after the first reading counts from zero; one that ends between the
// readings takes the CPU time it used since the first one with it.
type treeMeter struct {
	root  int
	start map[process]time.Duration
}

// newTreeCPUMeter takes the first reading of the process tree rooted at root.
func newTreeCPUMeter(root int) *treeMeter {
	start, _ := treeCPU(root)
	return &treeMeter{root: root, start: start}
}

// used returns the CPU time the tree used since newTreeCPUMeter, or false where the root cannot
// be read.
func (m *treeMeter) used() (time.Duration, bool) {
	now, ok := treeCPU(m.root)
	if !ok {
		return 0, false
	}
	var total time.Duration
	for p, t := range now {
		total += t - m.start[p]
	}
	return total, true
}

// treeCPU reads the CPU time of pid and each of its descendants; false when pid itself cannot
// be read. A descendant that ends while it is read is left out.
func treeCPU(pid int) (map[process]time.Duration, bool) {
	out := map[process]time.Duration{}
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		st, err := procstat.Read(procstat.Root, p)
		t, err2 := cpuTime(p)
		if err != nil || err2 != nil {
			if p == pid {
				return nil, false
			}
			continue
		}
		out[process{p, st.Start}] = t
		queue = append(queue, procstat.Children(procstat.Root, p)...)
	}
	return out, true
}

// hostMeter reads how busy all the host's CPUs were between two readings, from /proc/stat's
// "cpu" line (every CPU the kernel counts, whatever runs on them).
type hostMeter struct {
	busy, total uint64
	ok          bool
}

// newHostMeter takes the first reading of /proc/stat.
func newHostMeter() *hostMeter {
	m := &hostMeter{}
	m.busy, m.total, m.ok = hostCPU(procstat.Root)
	return m
}

// share returns the share of the CPUs' time since newHostMeter that was busy (not idle nor
// waiting for I/O), in [0, 1], or false where /proc/stat is missing.
func (m *hostMeter) share() (float64, bool) {
	busy, total, ok := hostCPU(procstat.Root)
	if !ok || !m.ok || total <= m.total {
		return 0, false
	}
	return float64(busy-m.busy) / float64(total-m.total), true
}

// hostCPU reads the busy and total time of all CPUs, in clock ticks, from root/stat: the "cpu"
// line's user, nice, system, idle, iowait, irq, softirq and steal (guest time is already in
// user); idle and iowait are not busy.
func hostCPU(root string) (busy, total uint64, ok bool) {
	data, err := os.ReadFile(root + "/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, 0, false
	}
	var idle uint64
	for i, f := range fields[1:9] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += v
		if i == 3 || i == 4 { // idle, iowait
			idle += v
		}
	}
	return total - idle, total, true
}
