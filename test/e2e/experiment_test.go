package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/experiment"
	"github.com/foresight-router/foresight/host/router"
)

// startExample runs the router of an example config in front of an emulated fleet.
func startExample(t *testing.T, name string) *router.Router {
	t.Helper()
	return startConfig(t, exampleOnFleet(t, name))
}

// exampleOnFleet starts an emulated fleet and returns the example config name with the fleet as
// its endpoints and listeners on free loopback ports.
func exampleOnFleet(t *testing.T, name string) *config.Config {
	t.Helper()
	fleet := startFleet(t)
	cfg, err := config.Load(filepath.Join(root, "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Endpoints = config.Endpoints{}
	for i, a := range fleet.Addrs() {
		cfg.Endpoints.Static = append(cfg.Endpoints.Static, config.EndpointSpec{ID: fmt.Sprint("vllm-", i), Address: a})
	}
	cfg.Server.Listen, cfg.Server.AdminListen = "127.0.0.1:0", "127.0.0.1:0"
	return cfg
}

func experimentReport(t *testing.T, r *router.Router) experiment.Report {
	t.Helper()
	code, body := adminCall(t, r, "GET", "/admin/experiments", "")
	var rep experiment.Report
	if err := json.Unmarshal([]byte(body), &rep); code != 200 || err != nil {
		t.Fatalf("GET /admin/experiments: %d %s (%v)", code, body, err)
	}
	return rep
}

// sessionRequest sends a streamed chat request of session through the router and reads it all.
func sessionRequest(t *testing.T, r *router.Router, session string) {
	t.Helper()
	resp := post(t, context.Background(), "http://"+r.Addr(), chat(4), "x-session-id", session, "x-llm-d-slo-ttft-ms", "500")
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("request: %d %s", resp.StatusCode, body)
	}
}

// TestABScorerExample: ab-scorer.yaml splits sessions between its two scorer arms, each session
// sticking to one, and the outcomes land in /admin/experiments and the arm metrics.
func TestABScorerExample(t *testing.T) {
	r := startExample(t, "ab-scorer.yaml")
	const sessions, turns = 20, 2
	for s := range sessions {
		for range turns {
			sessionRequest(t, r, fmt.Sprint("session-", s))
		}
	}
	var rep experiment.Report
	waitUntil(t, "every outcome in the report", func() bool {
		rep = experimentReport(t, r)
		return len(rep.Arms) == 2 && rep.Arms[0].Requests+rep.Arms[1].Requests == sessions*turns
	})
	least, most := rep.Arms[0], rep.Arms[1]
	if rep.Slot != "scorers.0" || least.Name != "least" || most.Name != "most" || least.Requests == 0 || most.Requests == 0 ||
		least.Requests%turns != 0 || most.Requests%turns != 0 {
		t.Errorf("report %+v: want both arms used, each session's %d turns on one arm", rep, turns)
	}
	if least.TTFTp50Ms <= 0 || least.WithSLO != int(least.Requests) || most.VsBaseline == nil || most.VsBaseline.Baseline != "least" {
		t.Errorf("arms %+v / %+v", least, most)
	}
	for _, arm := range []string{"least", "most"} {
		series := fmt.Sprintf(`foresight_experiment_ttft_seconds_count{arm=%q}`, arm)
		if metric(t, r, series) <= 0 {
			t.Errorf("%s is not counted", series)
		}
	}
	d := describe(t, r)
	if s := d.Slots[4]; s.Slot != "scorers.0" || len(s.Arms) != 2 || s.Arms[1].Plugin != "scorer-most" || s.Arms[1].Share != 0.5 {
		t.Errorf("GET /admin/pipeline slot %+v", s)
	}
}

// TestShadowPickerExample: shadow-picker.yaml's argmax shadow judges every cycle of the softmax
// picker without taking part.
func TestShadowPickerExample(t *testing.T) {
	r := startExample(t, "shadow-picker.yaml")
	const n = 20
	for i := range n {
		sessionRequest(t, r, fmt.Sprint("s", i))
	}
	var rep experiment.Report
	waitUntil(t, "the shadow to judge every cycle", func() bool {
		rep = experimentReport(t, r)
		return rep.Shadow != nil && rep.Shadow.Cycles == n
	})
	if rep.Slot != "picker" || rep.Shadow.Name != "argmax" || len(rep.Arms) != 0 {
		t.Errorf("report %+v", rep)
	}
	for _, d := range rep.Shadow.LastDisagreements {
		if strings.HasPrefix(d.Shadow, "failed") {
			t.Errorf("the shadow failed: %+v", d)
		}
	}
}
