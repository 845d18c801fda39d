package e2e

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pluginProcesses lists the running processes whose executable is one of root's plugin binaries
// (by /proc/PID/exe, whatever their argv says).
func pluginProcesses(t *testing.T) []string {
	t.Helper()
	dir := filepath.Join(root, "bin", "plugins") + string(filepath.Separator)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc to look for processes: %v", err)
	}
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err == nil && strings.HasPrefix(exe, dir) {
			out = append(out, e.Name()+" "+exe)
		}
	}
	return out
}

// checkNoPlugins fails if a plugin process of root is still running a moment after the host exited.
func checkNoPlugins(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		left := pluginProcesses(t)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("plugin processes left behind: %v", left)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var completedRE = regexp.MustCompile(`completed (\d+)`)

// checkSummary checks that stdout ends with a summary, in which requests completed if completed.
func checkSummary(t *testing.T, stdout string, completed bool) {
	t.Helper()
	i := strings.LastIndex(stdout, "summary:")
	if i < 0 {
		t.Fatalf("no summary in the output:\n%s", stdout)
	}
	m := completedRE.FindStringSubmatch(stdout[i:])
	if m == nil {
		t.Fatalf("the summary has no completed count:\n%s", stdout[i:])
	}
	if n, _ := strconv.Atoi(m[1]); completed && n == 0 {
		t.Errorf("no request completed:\n%s", stdout[i:])
	}
	for _, want := range []string{"TTFT ms", "TPOT ms", "SLO attained", "predictor"} {
		if !strings.Contains(stdout[i:], want) {
			t.Errorf("the summary lacks %q:\n%s", want, stdout[i:])
		}
	}
}

// TestDemo runs the live demo briefly: the router with the real plugins in front of two emulated
// servers, a workload through it, a summary, a clean exit.
func TestDemo(t *testing.T) {
	start := time.Now()
	stdout, stderr, code := foresight(t, "demo", "--duration", "4s", "--drain", "1s", "--servers", "2")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	// Non-terminal output: one line when the first second is up, then one every 5 s.
	if !strings.Contains(stdout, "foresight demo: sharegpt") || !strings.Contains(stdout, "\ndashboard http://127.0.0.1:") ||
		!strings.Contains(stdout, "t=1s ") {
		t.Errorf("no header or status line:\n%s", stdout)
	}
	checkSummary(t, stdout, true)
	// By default the demo is an A/B experiment of two pipelines, and its summary has the verdict.
	if !strings.Contains(stdout, "verdict       predicted-latency against ") {
		t.Errorf("no verdict of the A/B experiment:\n%s", stdout)
	}
	checkNoPlugins(t)
	t.Logf("demo took %v", time.Since(start))
}

// TestDemoInterrupt stops the demo with SIGINT mid-run: it prints the summary, exits 130 and
// leaves no plugin process.
func TestDemoInterrupt(t *testing.T) {
	cmd := exec.Command(hostBin, "demo", "--duration", "60s", "--servers", "2")
	cmd.Dir = root
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }() // only if the test failed before it exited
	lines := make(chan string)
	rest := make(chan string, 1)
	go func() {
		br := bufio.NewReader(stdout)
		for {
			line, err := br.ReadString('\n')
			if strings.HasPrefix(line, "t=") {
				lines <- line
				b, _ := io.ReadAll(br)
				rest <- string(b)
				return
			}
			if err != nil {
				rest <- ""
				return
			}
		}
	}()
	select {
	case <-lines:
	case out := <-rest:
		_ = cmd.Wait()
		t.Fatalf("the demo ended before a status line: %s\nstderr:\n%s", out, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("no status line within 30 s\nstderr:\n%s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	var out string
	select {
	case out = <-rest:
	case <-time.After(20 * time.Second):
		t.Fatalf("still running 20 s after SIGINT\nstderr:\n%s", stderr.String())
	}
	err = cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 130 {
		t.Errorf("exit %v after SIGINT, want 130\nstderr:\n%s", err, stderr.String())
	}
	checkSummary(t, out, false) // a second in, maybe nothing has finished yet
	checkNoPlugins(t)
	t.Logf("stopped %v after SIGINT", time.Since(stopped))
}
