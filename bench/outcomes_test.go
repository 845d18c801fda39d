package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// --outcomes writes one file per strategy, one line per request in arrival order, whose figures
// are the summary's: round-robin over 2 servers puts 60 requests on each, and the TTFTs written
// (to the microsecond) have the summary's p50; without a producer no line carries a prediction.
func TestWriteOutcomes(t *testing.T) {
	res, err := RunRouting(context.Background(), RoutingOptions{Scenario: "C", Servers: 2, Requests: 120, Seed: 1,
		Preset: "llama-3.1-8b-h100-tp2", Strategies: "rr,least-load", Examples: "../examples", Classes: []string{"chat:1:ttft=500"}})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	paths, err := res.WriteOutcomes(dir, "x-")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(dir, "x-rr.jsonl"), filepath.Join(dir, "x-least-load.jsonl")}; !slices.Equal(paths, want) {
		t.Fatalf("files %v, want %v", paths, want)
	}
	f, err := os.Open(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []OutcomeRecord
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r OutcomeRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %d: %v", len(recs)+1, err)
		}
		recs = append(recs, r)
	}
	if len(recs) != 120 {
		t.Fatalf("%d lines, want 120", len(recs))
	}
	perServer := map[string]int{}
	var ttft []float64
	met := 0
	for i, r := range recs {
		if i > 0 && r.ArrivalMs < recs[i-1].ArrivalMs {
			t.Fatalf("line %d arrives at %v ms, before line %d's %v", i+1, r.ArrivalMs, i, recs[i-1].ArrivalMs)
		}
		perServer[r.Server]++
		ttft = append(ttft, r.TTFTMs)
		if r.SLO.TTFTMs != 500 {
			t.Fatalf("line %d: objective %v, want the class's TTFT of 500 ms", i+1, r.SLO)
		}
		if r.MetSLO {
			met++
		}
		if r.Predicted != nil {
			t.Fatalf("line %d: a prediction %+v under round-robin, which has no producer", i+1, *r.Predicted)
		}
	}
	if perServer["sim-0"] != 60 || perServer["sim-1"] != 60 {
		t.Errorf("requests per server %v, want 60 each", perServer)
	}
	slices.Sort(ttft)
	s := res.Strategies["rr"].Summary
	if p50 := (ttft[59] + ttft[60]) / 2; math.Abs(p50-s.TTFTMs.P50) > 0.001 {
		t.Errorf("the lines' TTFT p50 is %v ms, the summary's %v", p50, s.TTFTMs.P50)
	}
	if got := float64(met) / 120; got != *s.SLOAttainment {
		t.Errorf("the lines' attainment is %v, the summary's %v", got, *s.SLOAttainment)
	}
}
