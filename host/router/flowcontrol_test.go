package router

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/internal/logbuf"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/rs/zerolog"
)

// The flowControl section's queue settings are read at start: with it on, the router exports the
// queue's metrics; a reload that changes them swaps the pipeline as usual and logs that they
// were not applied, and a reload that leaves them alone says nothing of it. Its policy and
// detector configure the pipeline's built-in stages, which a reload swaps in with the pipeline.
func TestFlowControlIsReadAtStart(t *testing.T) {
	const on = "flowControl: {enabled: true, default: {ttl: 30s}}\n"
	cfg := parseRouterWith(t, on)
	logs := &logbuf.Buffer{}
	r, err := Start(context.Background(), cfg, zerolog.New(logs))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	resp, err := http.Get("http://" + r.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "foresight_flow_waiting_room_requests 0") {
		t.Errorf("/metrics lacks the flow control metrics with flowControl.enabled")
	}

	const warning = "flowControl's queue settings changed"
	yaml := strings.Replace(builtinYAML, "%s", "127.0.0.1:0", 1)
	if _, err := r.reloadData(context.Background(), "test", []byte(yaml+on)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), warning) {
		t.Errorf("a reload with the same flowControl logged %q", warning)
	}
	// The policy is the pipeline's: slo-feasible keys a request with an objective hopeless after
	// its deadline, edf does not.
	hopeless := func() bool {
		k, _ := r.pipes.Order(context.Background(), &sdk.Cycle{Now: time.Unix(1, 0), Request: sdk.Request{SLO: sdk.SLO{TTFTMs: 100}}})
		return !k.HopelessAfter.IsZero()
	}
	if !hopeless() {
		t.Error("the default policy slo-feasible gave no hopeless-after time")
	}
	if _, err := r.reloadData(context.Background(), "test", []byte(yaml+"flowControl: {enabled: true, default: {ttl: 30s}, policy: edf}\n")); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), warning) || hopeless() {
		t.Errorf("a reload that changed the policy to edf: warned %t, still slo-feasible %t", strings.Contains(logs.String(), warning), hopeless())
	}
	if _, err := r.reloadData(context.Background(), "test", []byte(yaml+"flowControl: {enabled: true, default: {ttl: 5s}}\n")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), warning) {
		t.Errorf("a reload that changed flowControl did not log %q:\n%s", warning, logs.String())
	}
}

// parseRouterWith is builtinYAML, its admin listener on loopback, followed by extra sections.
func parseRouterWith(t *testing.T, extra string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(t.TempDir()+"/router.yaml", []byte(strings.Replace(builtinYAML, "%s", "127.0.0.1:0", 1)+extra))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
