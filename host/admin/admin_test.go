package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/prometheus/client_golang/prometheus"
)

// control records what the API asked for and answers with err.
type control struct {
	err    error
	source string
	slot   string
	prof   string
	spec   config.PluginSpec
	weight *float64
}

func (c *control) Reload(_ context.Context, source string) (Result, error) {
	c.source = source
	return Result{Generation: 2, Kept: []string{"producer"}}, c.err
}

func (c *control) SwapStage(_ context.Context, profile, slot string, spec config.PluginSpec, weight *float64) (Result, error) {
	c.prof, c.slot, c.spec, c.weight = profile, slot, spec, weight
	return Result{Generation: 3, Started: []string{spec.Name}}, c.err
}

func (c *control) Describe() Description { return Description{Generation: 7} }

func (c *control) Experiments() (any, bool) { return nil, false }

// do sends method path with body and the header name/value pairs to h as a request from this
// machine to a listener on 127.0.0.1:9090 (a "Host" pair sets the Host, a "RemoteAddr" pair
// where the request comes from), and returns the answer's status and body.
func do(t *testing.T, h http.Handler, method, path, body string, header ...string) (int, string) {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Host, r.RemoteAddr = "127.0.0.1:9090", "127.0.0.1:40000"
	for i := 0; i+1 < len(header); i += 2 {
		switch header[i] {
		case "Host":
			r.Host = header[i+1]
		case "RemoteAddr":
			r.RemoteAddr = header[i+1]
		default:
			r.Header.Set(header[i], header[i+1])
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	b, _ := io.ReadAll(w.Result().Body)
	return w.Code, string(b)
}

// observed is the handler's options with c, token, a registry holding one counter at 3 and one
// decision trace.
func observed(c Control, token string) Options {
	reg := prometheus.NewRegistry()
	n := prometheus.NewCounter(prometheus.CounterOpts{Name: "test_requests_total", Help: "test"})
	n.Add(3)
	reg.MustRegister(n)
	traces := []*pipeline.Trace{{RequestID: "r1"}}
	return Options{Control: c, Metrics: reg, Decisions: func() []*pipeline.Trace { return traces }, Token: token}
}

func TestRoutes(t *testing.T) {
	c := &control{}
	h := Handler(observed(c, ""))

	if code, body := do(t, h, "POST", "/admin/reload", ""); code != 200 || !strings.Contains(body, `"generation": 2`) || c.source != "POST /admin/reload" {
		t.Errorf("reload: %d %s (source %q)", code, body, c.source)
	}
	code, body := do(t, h, "PUT", "/admin/stages/scorers.1",
		`{"name":"lat","type":"latency-scorer","path":"../bin/plugins/scorer","parameters":{"mode":"most"},"weight":2,"timeout":"30ms"}`)
	if code != 200 || c.slot != "scorers.1" || c.prof != "" || c.spec.Type != "latency-scorer" || c.spec.Parameters["mode"] != "most" ||
		c.spec.Timeout.Milliseconds() != 30 || c.weight == nil || *c.weight != 2 {
		t.Errorf("swap: %d %s; got slot %q spec %+v", code, body, c.slot, c.spec)
	}
	if code, body := do(t, h, "PUT", "/admin/stages/picker?profile=slo", `{"type":"max-score-picker"}`); code != 200 || c.prof != "slo" || c.slot != "picker" {
		t.Errorf("swap in a profile: %d %s; got profile %q slot %q", code, body, c.prof, c.slot)
	}
	if code, body := do(t, h, "GET", "/admin/pipeline", ""); code != 200 || !strings.Contains(body, `"generation": 7`) {
		t.Errorf("pipeline: %d %s", code, body)
	}
	if code, _ := do(t, h, "GET", "/admin/experiments", ""); code != 404 {
		t.Errorf("experiments without one: %d, want 404", code)
	}
	if code, body := do(t, h, "GET", "/metrics", ""); code != 200 || !strings.Contains(body, "test_requests_total 3") {
		t.Errorf("metrics: %d %s", code, body)
	}
	if code, body := do(t, h, "GET", "/debug/decisions", ""); code != 200 || !strings.Contains(body, `"request_id": "r1"`) {
		t.Errorf("decisions: %d %s", code, body)
	}
	if code, _ := do(t, h, "GET", "/health", ""); code != 200 {
		t.Errorf("health: %d", code)
	}
	if code, body := do(t, h, "GET", "/admin/nope", ""); code != 404 || !strings.Contains(body, "POST /admin/reload") {
		t.Errorf("unknown route: %d %s", code, body)
	}
	if code, body := do(t, h, "GET", "/admin/reload", ""); code != 405 || !strings.Contains(body, "takes POST") {
		t.Errorf("wrong method: %d %s", code, body)
	}
}

func TestBadRequests(t *testing.T) {
	c := &control{}
	h := Handler(Options{Control: c})
	for _, body := range []string{`{"type":`, `{"type":"x","colour":"red"}`, `{"type":"x","timeout":"soon"}`} {
		if code, msg := do(t, h, "PUT", "/admin/stages/picker", body); code != 400 || !strings.Contains(msg, "invalid_request_error") {
			t.Errorf("body %s: %d %s, want 400", body, code, msg)
		}
	}
	c.err = fmt.Errorf("%w %q", config.ErrNoSlot, "scorers.9")
	if code, _ := do(t, h, "PUT", "/admin/stages/scorers.9", `{"type":"queue-scorer"}`); code != 404 {
		t.Errorf("missing slot: %d, want 404", code)
	}
	c.err = fmt.Errorf("%w %q", config.ErrNoProfile, "fast")
	if code, _ := do(t, h, "PUT", "/admin/stages/picker?profile=fast", `{"type":"max-score-picker"}`); code != 404 {
		t.Errorf("missing profile: %d, want 404", code)
	}
	c.err = errors.New("plugin \"kv\": starting ../bin/nope: no such file")
	code, body := do(t, h, "POST", "/admin/reload", "")
	var e struct {
		Error struct{ Message, Code string }
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || code != 422 || e.Error.Code != "reload_failed" ||
		!strings.Contains(e.Error.Message, "previous pipeline keeps serving") || !strings.Contains(e.Error.Message, "no such file") {
		t.Errorf("failed reload: %d %s", code, body)
	}
}

func TestToken(t *testing.T) {
	h := Handler(observed(&control{}, "s3cret-admin-token"))
	for _, tc := range []struct {
		method, path string
		header       []string
		want         int
	}{
		{"GET", "/health", nil, 200},
		{"GET", "/metrics", nil, 401},
		{"POST", "/admin/reload", nil, 401},
		{"POST", "/admin/reload", []string{"Authorization", "Bearer wrong"}, 401},
		{"POST", "/admin/reload", []string{"Authorization", "s3cret-admin-token"}, 401},
		{"POST", "/admin/reload", []string{"Authorization", "Bearer s3cret-admin-token"}, 200},
		{"GET", "/metrics", []string{"Authorization", "Bearer s3cret-admin-token"}, 200},
		// The page holds no data and asks for the token itself; its JSON needs the token.
		{"GET", "/dashboard", nil, 200},
		{"GET", "/admin/dashboard.json", nil, 401},
		{"GET", "/admin/dashboard.json", []string{"Authorization", "Bearer s3cret-admin-token"}, 200},
	} {
		if code, body := do(t, h, tc.method, tc.path, "", tc.header...); code != tc.want {
			t.Errorf("%s %s %v: %d %s, want %d", tc.method, tc.path, tc.header, code, body, tc.want)
		}
	}
}
