package bench

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// burnCPU is the CPU time the "burn" helper uses before it says so.
const burnCPU = 300 * time.Millisecond

// cpuHelper is the test binary run as one process of TestTreeCPUMeter's tree. "cpu-tree" waits
// for a line on its standard input, then starts the test binary again as "burn" (its child, the
// same input and output) and waits for it. "burn" spins until it has used burnCPU of CPU time,
// writes "burnt" and waits for its standard input to close.
func cpuHelper(mode string) {
	in := bufio.NewReader(os.Stdin)
	switch mode {
	case "cpu-tree":
		if _, err := in.ReadString('\n'); err != nil {
			os.Exit(2)
		}
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), helperEnv+"=burn")
		child.Stdin, child.Stdout, child.Stderr = os.Stdin, os.Stdout, os.Stderr
		if err := child.Run(); err != nil {
			os.Exit(2)
		}
	case "burn":
		for used := time.Duration(0); used < burnCPU; {
			var ru syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
			used = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
		fmt.Println("burnt")
		_, _ = in.ReadString('\n') // until the test closes the input
	}
}

// The tree meter counts what a process's descendants use, a child started after its first
// reading included (nginx's workers, the router's plugins); the meter of the root alone does not.
func TestTreeCPUMeter(t *testing.T) {
	root := exec.Command(os.Args[0])
	root.Env = append(os.Environ(), helperEnv+"=cpu-tree")
	stdin, err := root.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := root.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := root.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = root.Process.Kill(); _ = root.Wait() }()
	tree, alone := newTreeCPUMeter(root.Process.Pid), newCPUMeter(root.Process.Pid)
	if _, err := fmt.Fprintln(stdin, "go"); err != nil { // the child starts only now
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "burnt\n" {
		t.Fatalf("the burning child said %q, %v", line, err)
	}
	treeUsed, ok1 := tree.used()
	rootUsed, ok2 := alone.used()
	if !ok1 || !ok2 {
		t.Fatalf("readings failed: tree %v, root %v", ok1, ok2)
	}
	// The child used burnCPU (300 ms) after the first reading; /proc counts in 10 ms ticks, one
	// tick per process may be lost to rounding. The root only waited: far less than the child.
	if treeUsed < burnCPU-2*clockTick {
		t.Errorf("the tree used %v, want at least %v (the child's burn)", treeUsed, burnCPU-2*clockTick)
	}
	if rootUsed >= burnCPU/2 {
		t.Errorf("the root alone used %v, want well under the child's %v", rootUsed, burnCPU)
	}
	stdin.Close()
	if err := root.Wait(); err != nil {
		t.Errorf("the helper tree: %v", err)
	}
}

func TestHostCPU(t *testing.T) {
	tests := []struct {
		name, stat  string
		busy, total uint64
		ok          bool
	}{
		// user 100 + nice 2 + system 30 + irq 1 + softirq 4 + steal 3 = 140 busy; idle 500 and
		// iowait 60 are not; guest (7, already in user) is left out: total 700.
		{name: "all fields", stat: "cpu  100 2 30 500 60 1 4 3 7 0\ncpu0 50 1 15 250 30 0 2 1 3 0\n", busy: 140, total: 700, ok: true},
		{name: "no aggregate line first", stat: "cpu0 1 2 3 4 5 6 7 8 9 10\n"},
		{name: "too few fields", stat: "cpu  1 2 3 4\n"},
		{name: "not numbers", stat: "cpu  a b c d e f g h i j\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.WriteFile(filepath.Join(root, "stat"), []byte(tt.stat), 0o644); err != nil {
				t.Fatal(err)
			}
			busy, total, ok := hostCPU(root)
			if busy != tt.busy || total != tt.total || ok != tt.ok {
				t.Errorf("hostCPU = %d, %d, %v; want %d, %d, %v", busy, total, ok, tt.busy, tt.total, tt.ok)
			}
		})
	}
	if _, _, ok := hostCPU(t.TempDir()); ok {
		t.Error("hostCPU without a stat file: ok")
	}
}
