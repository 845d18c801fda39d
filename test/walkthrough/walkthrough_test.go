// Package walkthrough does what README.md tells a newcomer, as one test: its own package, so that
// go test runs it beside test/e2e rather than after it.
package walkthrough

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/internal/chromium"
)

// The README's first request to a running router: its curl of /v1/completions with an SLO header
// and a JSON body, the two lines of its "Try it" section.
var readmeCurl = regexp.MustCompile(`curl -s localhost:8080/v1/completions -H '([^']+)' -d \\\n\s*'([^']+)'`)

// The demo's header lines that give its addresses.
var (
	apiLine       = regexp.MustCompile(`OpenAI API http://(127\.0\.0\.1:\d+)`)
	dashboardLine = regexp.MustCompile(`(?m)^dashboard (http://127\.0\.0\.1:\d+/dashboard)$`)
)

// TestNewcomerWalkthrough does what README.md tells a newcomer, on a clone of the repository's
// last commit: `make run` (its demo shortened with DEMO_FLAGS), the dashboard at the address the
// demo prints first, in headless Chromium, and the README's first curl against the demo's router.
// Run with the other packages, the clone builds with the cache their builds filled (all -trimpath,
// internal/buildbin), so it mostly links.
func TestNewcomerWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("a clone, a build and a 20 s demo")
	}
	for _, tool := range []string{"git", "make", "curl", chromium.Path} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is missing (tools/system-deps.sh installs Chromium): %v", tool, err)
		}
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	curl := readmeCurl.FindStringSubmatch(string(readme))
	if curl == nil {
		t.Fatalf("README.md has no curl of localhost:8080/v1/completions with a header and a body (%s)", readmeCurl)
	}

	clone := filepath.Join(t.TempDir(), "foresight")
	if out, err := exec.Command("git", "clone", "--quiet", repo, clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "run", "DEMO_FLAGS=--duration 20s")
	cmd.Dir = clone
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); pw.Close() }()
	var out strings.Builder        // make's output, read once scanned is closed
	header := make(chan string, 1) // the output up to the dashboard's line
	scanned := make(chan struct{}) // closed when make's output has ended
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		sent := false
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if !sent && dashboardLine.MatchString(out.String()) {
				header <- out.String()
				sent = true
			}
		}
		close(header)
	}()

	var head string
	select {
	case head = <-header:
	case <-ctx.Done():
	}
	if head == "" {
		<-done
		<-scanned
		t.Fatalf("make run printed no dashboard address:\n%s", out.String())
	}
	dashboard := dashboardLine.FindStringSubmatch(head)[1]
	api := apiLine.FindStringSubmatch(head)
	if api == nil {
		t.Fatalf("the demo's header has no OpenAI API address:\n%s", head)
	}

	// The README's curl, at the demo's router.
	answer, err := exec.CommandContext(ctx, "curl", "-s", "--max-time", "30", api[1]+"/v1/completions",
		"-H", curl[1], "-d", curl[2]).CombinedOutput()
	if err != nil || !strings.Contains(string(answer), "data: [DONE]") {
		t.Errorf("the README's curl at %s: %v\n%s", api[1], err, answer)
	}
	// The dashboard, as a browser renders it: live, with the demo's four servers.
	dom, stderr, err := chromium.Run(t.TempDir(), "--dump-dom", dashboard)
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v\n%s", dashboard, err, stderr)
	}
	for id, want := range map[string]string{"status": "live", "endpoint-count": "4"} {
		if m := regexp.MustCompile(`id="` + id + `"[^>]*>([^<]*)<`).FindStringSubmatch(dom); m == nil || m[1] != want {
			t.Errorf("the dashboard at %s: #%s is %v, want %q:\n%s", dashboard, id, m, want, dom)
		}
	}

	err = <-done
	<-scanned
	if err != nil {
		t.Fatalf("make run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "verdict       predicted-latency against ") {
		t.Errorf("make run's demo ended without its verdict:\n%s", out.String())
	}
}
