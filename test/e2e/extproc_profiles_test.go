package e2e

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/sim/emulator"
)

// TestExtProcSchedulingProfiles: behind a gateway, the endpoint picker chooses the scheduling
// profile per request as the OpenAI front does — an SLO header or GIE's boolean picks the SLO
// profile, nothing the default, an unknown profile name is a 400 — and /metrics counts the
// decisions by profile.
func TestExtProcSchedulingProfiles(t *testing.T) {
	fleet, err := emulator.Start(2, 0, "llama-3.1-8b-h100-tp2", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fleet.Close)
	addrs := fleet.Addrs()
	yaml := fmt.Sprintf(`plugins:
  - {name: rr, type: round-robin-picker}
  - {name: least-inflight, type: queue-scorer, parameters: {source: inflight}}
  - {name: max-score, type: max-score-picker}
profiles:
  - name: default
    pipeline: {picker: {pluginRef: rr}}
  - name: slo
    pipeline: {scorers: [{pluginRef: least-inflight}], picker: {pluginRef: max-score}}
profileHandler: {sloProfile: slo}
server: {listen: "127.0.0.1:0", adminListen: "127.0.0.1:0"}
endpoints:
  static:
    - {id: a, address: %s}
    - {id: b, address: %s}
`, addrs[0], addrs[1])
	p := startServe(t, writeConfig(t, "extproc-profiles.yaml", yaml), "--ext-proc", "127.0.0.1:0")
	_, gw := dialPicker(t, p.extProc)

	for range 2 {
		checkPick(t, gw.do(chatPath, extChat(true, 2), nil), addrs, 2)
	}
	checkPick(t, gw.do(chatPath, extChat(true, 2), nil, "x-llm-d-slo-ttft-ms", "500"), addrs, 2)
	checkPick(t, gw.do(chatPath, extChat(true, 2), nil, "x-prediction-based-routing", "true"), addrs, 2)
	checkPick(t, gw.do(chatPath, extChat(true, 2), nil, "x-foresight-profile", "slo"), addrs, 2)
	tr := gw.do(chatPath, extChat(true, 2), nil, "x-foresight-profile", "fast")
	if code, msg := immediateBody(t, tr.immediate); code != http.StatusBadRequest || !strings.Contains(msg, `"fast"`) {
		t.Errorf("an unknown profile: %d %s, want 400 naming it", code, msg)
	}

	resp, err := http.Get("http://" + p.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for profile, want := range map[string]string{"default": "2", "slo": "3"} {
		series := regexp.MustCompile(`(?m)^foresight_decisions_total\{outcome="picked",profile="` + profile + `"\} (\S+)$`).FindStringSubmatch(string(body))
		if series == nil || series[1] != want {
			t.Errorf("decisions by profile %q: %v, want %s", profile, series, want)
		}
	}
}
