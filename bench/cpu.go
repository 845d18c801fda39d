package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
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
