package router

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/internal/logbuf"
	"github.com/rs/zerolog"
)

// The flowControl section is read at start: with it on, the router exports the queue's metrics;
// a reload that changes it swaps the pipeline as usual and logs that the section was not
// applied, and a reload that leaves it alone says nothing of it.
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

	const warning = "the flowControl section changed"
	yaml := strings.Replace(builtinYAML, "%s", "127.0.0.1:0", 1)
	if _, err := r.reloadData(context.Background(), "test", []byte(yaml+on)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), warning) {
		t.Errorf("a reload with the same flowControl logged %q", warning)
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
