package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/foresight-router/foresight/host/admin"
	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/router"
	"github.com/foresight-router/foresight/internal/chromium"
	"github.com/foresight-router/foresight/internal/eventually"
)

// dashboardToken is the admin token of the dashboard test's router.
const dashboardToken = "dashboard-e2e-token"

// TestDashboardInChromium opens GET /dashboard in headless Chromium while an A/B experiment
// serves traffic on an emulated fleet, and reads the panels' live numbers out of the rendered
// DOM. Set FORESIGHT_DASHBOARD_PNG to a path (docs/img/dashboard.png for the README) to keep the
// screenshot it takes.
func TestDashboardInChromium(t *testing.T) {
	if _, err := os.Stat(chromium.Path); err != nil {
		t.Skipf("%s is missing (Debian's chromium package; tools/system-deps.sh installs it): %v", chromium.Path, err)
	}
	t.Setenv(config.AdminTokenEnv, dashboardToken)
	var logs syncBuffer
	r := startLogged(t, "ab-scorer.yaml", zerolog.New(&logs))

	// Traffic: sessions split between the arms, then a reload for the timeline, and requests
	// that keep running while the browser looks, so the engines' gauges are not all zero.
	for s := range 60 { // enough for both arms to reach the 20 TTFTs their interval needs
		sessionRequest(t, r, fmt.Sprint("session-", s))
	}
	if code, body := dashboardAdmin(t, r, http.MethodPost, "/admin/reload"); code != 200 {
		t.Fatalf("POST /admin/reload: %d %s", code, body)
	}
	ctx, stop := context.WithCancel(context.Background())
	var traffic sync.WaitGroup
	for w := range 4 {
		traffic.Add(1)
		go func() {
			defer traffic.Done()
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+r.Addr()+"/v1/chat/completions",
					strings.NewReader(chat(200)))
				req.Header.Set("x-session-id", fmt.Sprint("busy-", w))
				if resp, err := http.DefaultClient.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}()
	}
	defer func() { stop(); traffic.Wait() }()
	// A crashed picker: its cycles fall back until the supervisor restarts it, and the router's
	// poll of the restart counts puts the restart on the timeline.
	killPlugin(t, r, "picker")
	eventually.Wait(t, 20*time.Second, "the picker's restart in /admin/dashboard.json", func() bool {
		_, body := dashboardAdmin(t, r, http.MethodGet, "/admin/dashboard.json")
		return strings.Contains(body, `"kind": "restart"`)
	})
	eventually.Wait(t, 10*time.Second, "predicted-vs-actual pairs in /admin/dashboard.json", func() bool {
		_, body := dashboardAdmin(t, r, http.MethodGet, "/admin/dashboard.json")
		var d admin.Dashboard
		return json.Unmarshal([]byte(body), &d) == nil && len(d.Predictions.Points) > 0
	})

	url := "http://" + r.AdminAddr() + "/dashboard#token=" + dashboardToken
	dom := runChromium(t, "--dump-dom", url)
	field := func(id string) string {
		m := regexp.MustCompile(`id="` + id + `"[^>]*>([^<]*)<`).FindStringSubmatch(dom)
		if m == nil {
			t.Fatalf("no element %q in the rendered page:\n%s", id, dom)
		}
		return m[1]
	}
	if got := field("status"); got != "live" {
		t.Errorf("status %q, want live (the page read the JSON with the token from its fragment)", got)
	}
	// 60 sessions answered before the page loaded: the total can only be higher.
	if n, err := strconv.Atoi(field("requests-total")); err != nil || n < 60 {
		t.Errorf("requests-total %q, want at least 60", field("requests-total"))
	}
	if got := field("endpoint-count"); got != "2" {
		t.Errorf("endpoint-count %q, want the fleet's 2", got)
	}
	if n, err := strconv.Atoi(field("points-count")); err != nil || n == 0 {
		t.Errorf("points-count %q, want predicted-vs-actual pairs", field("points-count"))
	}
	if got := field("mape-ttft"); !strings.HasSuffix(got, "%") {
		t.Errorf("mape-ttft %q, want a percentage", got)
	}
	for _, want := range []string{`data-endpoint="vllm-0"`, `data-endpoint="vllm-1"`, `data-arm="least"`, `data-arm="most"`,
		`data-stage="default/producer/`, `data-stage="default/picker/`, `data-event="start"`, `data-event="reload"`, `data-event="restart"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("no %s in the rendered page", want)
		}
	}
	if n := strings.Count(dom, "<circle"); n < 2 {
		t.Errorf("%d circles drawn, want the scatter's points and the timeline's events", n)
	}

	png := filepath.Join(t.TempDir(), "dashboard.png")
	if keep := os.Getenv("FORESIGHT_DASHBOARD_PNG"); keep != "" {
		png, _ = filepath.Abs(filepath.Join(repo, keep))
	}
	runChromium(t, "--screenshot="+png, "--window-size=1280,900", url)
	if b, err := os.ReadFile(png); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("the screenshot %s is not a PNG: %v", png, err)
	}
	// The token travelled in the URL's fragment and a header: no log line of the router holds it.
	if strings.Contains(logs.String(), dashboardToken) {
		t.Errorf("the router's log holds the admin token")
	}
}

// killPlugin kills the process of the plugin named name with SIGKILL, as a crash would.
func killPlugin(t *testing.T, r *router.Router, name string) {
	t.Helper()
	for _, p := range r.Describe().Plugins {
		if p.Name == name && p.PID != 0 {
			if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no running plugin %q in %+v", name, r.Describe().Plugins)
}

// startLogged is startExample with the router's log kept.
func startLogged(t *testing.T, name string, log zerolog.Logger) *router.Router {
	t.Helper()
	r, err := router.Start(context.Background(), exampleOnFleet(t, name), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// dashboardAdmin sends an admin request with the test's token.
func dashboardAdmin(t *testing.T, r *router.Router, method, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+r.AdminAddr()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+dashboardToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// runChromium runs headless Chromium on url with mode's flags, letting the page run for five
// seconds of virtual time (five polls), and returns its standard output. Its own profile in a
// temp dir and no background services keep it off the network and apart from other runs.
func runChromium(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, err := chromium.Run(t.TempDir(), args...)
	if err != nil {
		// The URL holds the token: keep it out of the test's output.
		t.Fatalf("chromium %s: %v\n%s", strings.ReplaceAll(strings.Join(args, " "), dashboardToken, "TOKEN"), err,
			strings.ReplaceAll(stderr, dashboardToken, "TOKEN"))
	}
	return stdout
}

// syncBuffer is a bytes.Buffer safe for the router's concurrent log writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
