package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// decision is what examples/expected.json documents for one (cycle, config) pair.
type decision struct {
	Config           string     `json:"config"`
	Outcome          string     `json:"outcome"`
	First            string     `json:"first"`
	KeptAfterFilters []string   `json:"kept_after_filters"`
	Contrasts        []decision `json:"contrasts"`
}

// TestExampleCyclesDecideAsDocumented runs every example cycle through `foresight schedule` with the
// real plugins and compares the trace with the decision examples/README.md explains.
func TestExampleCyclesDecideAsDocumented(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repo, "examples", "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var expected map[string]decision
	if err := json.Unmarshal(data, &expected); err != nil {
		t.Fatal(err)
	}
	cycles, _ := filepath.Glob(filepath.Join(root, "examples", "cycles", "*.json"))
	if len(cycles) != len(expected) {
		t.Errorf("%d cycle snapshots but %d documented decisions", len(cycles), len(expected))
	}
	for file, want := range expected {
		for _, d := range append([]decision{want}, want.Contrasts...) {
			t.Run(file+"/"+filepath.Base(d.Config), func(t *testing.T) {
				checkDecision(t, filepath.Join(root, "examples", "cycles", file), d)
			})
		}
	}
}

func checkDecision(t *testing.T, cycle string, want decision) {
	out, stderr, code := foresight(t, "schedule", "--config", filepath.Join(root, want.Config), "--cycle", cycle)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		Outcome string   `json:"outcome"`
		Order   []string `json:"order"`
		Stages  []struct {
			Stage    string   `json:"stage"`
			Plugin   string   `json:"plugin"`
			Fallback string   `json:"fallback"`
			Kept     []string `json:"kept"`
		} `json:"stages"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("decoding the trace: %v\n%s", err, out)
	}
	if got.Outcome != want.Outcome {
		t.Errorf("outcome %q, want %q", got.Outcome, want.Outcome)
	}
	first := ""
	if got.Outcome == "picked" && len(got.Order) > 0 {
		first = got.Order[0]
	}
	if first != want.First {
		t.Errorf("first %q, want %q (order %v)", first, want.First, got.Order)
	}
	var lastKept []string
	for _, s := range got.Stages {
		if s.Fallback != "" {
			t.Errorf("stage %s (%s) fell back: %s", s.Stage, s.Plugin, s.Fallback)
		}
		if s.Stage == "filter" {
			lastKept = s.Kept
		}
	}
	if want.KeptAfterFilters != nil && !slices.Equal(lastKept, want.KeptAfterFilters) {
		t.Errorf("kept after filters %v, want %v", lastKept, want.KeptAfterFilters)
	}
}

// TestUnsheddableRequestsSkipTheAdmitterProcess: the slo-admitter process declares that it admits
// every request of priority 0 or above unread (ConfigureResponse.admits_unsheddable), so the host
// admits those itself, and still sends it the sheddable ones.
func TestUnsheddableRequestsSkipTheAdmitterProcess(t *testing.T) {
	type stage struct {
		Stage  string `json:"stage"`
		Reason string `json:"reason"`
	}
	for _, tc := range []struct {
		cycle, reason string
	}{
		{"01-prefix-sticky.json", "priority 0 is not sheddable (admitted without a call, as the admitter declares)"},
		{"05-sheddable-rejected.json", "rejected: no endpoint meets the SLO"}, // the process's own verdict
	} {
		out, stderr, code := foresight(t, "schedule", "--config", filepath.Join(root, "examples", "pipeline.yaml"),
			"--cycle", filepath.Join(root, "examples", "cycles", tc.cycle))
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.cycle, code, stderr)
		}
		var got struct {
			Stages []stage `json:"stages"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(got.Stages, func(s stage) bool { return s.Stage == "admitter" })
		if i < 0 || !strings.HasPrefix(got.Stages[i].Reason, tc.reason) {
			t.Errorf("%s: stages %+v, want the admitter's reason to start %q", tc.cycle, got.Stages, tc.reason)
		}
	}
}
