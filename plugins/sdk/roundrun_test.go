package sdk_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/transport"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Rounds through both ways a host reaches a stage: a plugin process's shims over gRPC (wire) and
// the host's in-process adapter (local). Both answer through the SDK's round runner, so every case
// must come out the same either way.

// loadScorer scores an endpoint 1/(1 + its requests in flight), and knows nothing of rounds.
type loadScorer struct{ meta }

func (loadScorer) Type() string { return "load-scorer" }
func (loadScorer) Score(_ context.Context, c *sdk.Cycle) ([]float64, error) {
	out := make([]float64, len(c.Endpoints))
	for i, ep := range c.Endpoints {
		out[i] = 1 / float64(1+ep.State.InflightRequests)
	}
	return out, nil
}

// roundScorer is a loadScorer that says its after-scores itself (fixed ones, to tell them apart).
type roundScorer struct {
	loadScorer
	after []float64
}

func (s roundScorer) ScoreAfter(context.Context, *sdk.Cycle, []float64) ([]float64, error) {
	if s.after == nil {
		return nil, errors.New("no after-scores today")
	}
	return s.after, nil
}

// maxScorePicker orders the endpoints by score, highest first, the lower position first among equals.
type maxScorePicker struct{ meta }

func (maxScorePicker) Type() string { return "max-score" }
func (maxScorePicker) Pick(_ context.Context, c *sdk.Cycle, scores []float64) ([]int, error) {
	order := make([]int, len(c.Endpoints))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case scores[a] > scores[b]:
			return -1
		case scores[a] < scores[b]:
			return 1
		}
		return 0
	})
	return order, nil
}

// leastLoadPicker orders the endpoints by requests in flight, fewest first, ignoring the scores.
type leastLoadPicker struct{ meta }

func (leastLoadPicker) Type() string { return "least-load" }
func (leastLoadPicker) Pick(_ context.Context, c *sdk.Cycle, _ []float64) ([]int, error) {
	order := make([]int, len(c.Endpoints))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return int(c.Endpoints[a].State.InflightRequests - c.Endpoints[b].State.InflightRequests)
	})
	return order, nil
}

type meta struct{}

func (meta) Description() string    { return "a round test stage" }
func (meta) Configure([]byte) error { return nil }

// roundCycle is a cycle on endpoints a and b with the requests in flight given, at position pos of
// a round of size (0, 0: decided alone).
func roundCycle(pos, size int, inflightA, inflightB int64) *sdk.Cycle {
	c := testCycle("r")
	c.Endpoints[0].State.InflightRequests = inflightA
	c.Endpoints[1].State.InflightRequests = inflightB
	c.Round = sdk.Round{Position: pos, Size: size}
	return c
}

func TestScoreAfterRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		scorer  sdk.Scorer
		cycle   *sdk.Cycle
		want    transport.Scored
		wantErr string
	}{
		// A scorer that does not say what a placement does says nothing: the SDK does not
		// re-score (it would renormalise the other endpoints too).
		{"not a round scorer: no after-scores", loadScorer{}, roundCycle(1, 2, 1, 3),
			transport.Scored{Scores: []float64{1.0 / 2, 1.0 / 4}}, ""},
		{"alone: no after-scores", loadScorer{}, roundCycle(0, 0, 1, 3),
			transport.Scored{Scores: []float64{1.0 / 2, 1.0 / 4}}, ""},
		{"a round of one: no after-scores", loadScorer{}, roundCycle(0, 1, 1, 3),
			transport.Scored{Scores: []float64{1.0 / 2, 1.0 / 4}}, ""},
		{"the scorer's own", roundScorer{after: []float64{0.1, 0.2}}, roundCycle(0, 2, 1, 3),
			transport.Scored{Scores: []float64{1.0 / 2, 1.0 / 4}, After: []float64{0.1, 0.2}}, ""},
		{"too few of its own", roundScorer{after: []float64{0.1}}, roundCycle(0, 2, 1, 3),
			transport.Scored{}, "1 after-scores for 2 endpoints"},
		{"its own failing", roundScorer{}, roundCycle(0, 2, 1, 3), transport.Scored{}, "no after-scores today"},
	}
	for _, tt := range tests {
		for way, score := range map[string]func() ([]transport.Result[transport.Scored], error){
			"wire": func() ([]transport.Result[transport.Scored], error) {
				c := dispense(t, sdk.StageScorer, tt.scorer).(*transport.ScorerClient)
				return c.ScoreBatch(context.Background(), []*sdk.Cycle{tt.cycle})
			},
			"local": func() ([]transport.Result[transport.Scored], error) {
				return transport.Local{P: tt.scorer}.ScoreBatch(context.Background(), []*sdk.Cycle{tt.cycle})
			},
		} {
			t.Run(tt.name+"/"+way, func(t *testing.T) {
				got, err := score()
				if err != nil {
					t.Fatal(err)
				}
				if tt.wantErr != "" {
					if got[0].Err == nil || !strings.Contains(got[0].Err.Error(), tt.wantErr) {
						t.Fatalf("got %+v, %v; want an error containing %q", got[0].Value, got[0].Err, tt.wantErr)
					}
					return
				}
				if diff := cmp.Diff(tt.want, got[0].Value, cmpopts.EquateApprox(0, 1e-12)); diff != "" || got[0].Err != nil {
					t.Errorf("scored (-want +got):\n%s err %v", diff, got[0].Err)
				}
			})
		}
	}
}

func TestPickRoundRoundTrip(t *testing.T) {
	round := func(inflightA, inflightB int64, rounds ...int) []*sdk.Cycle { // rounds: the sizes, one after the other
		var out []*sdk.Cycle
		for _, size := range rounds {
			for pos := range size {
				if size == 1 {
					out = append(out, roundCycle(0, 0, inflightA, inflightB))
					continue
				}
				out = append(out, roundCycle(pos, size, inflightA, inflightB))
			}
		}
		return out
	}
	repeat := func(n int, v []float64) [][]float64 {
		out := make([][]float64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	tests := []struct {
		name          string
		picker        sdk.Picker
		cycles        []*sdk.Cycle
		scores, after [][]float64
		want          string // each cycle's first choice
	}{
		// Scores 1 and 1, 0.5 after one more: a (first among equals); then a is 1 − 1×(1 − 0.5) =
		// 0.5 against b's 1: b; then 0.5 and 0.5: a; then a 1 − 2×0.5 = 0 against b 0.5: b.
		{"max-score on after-scores", maxScorePicker{}, round(0, 0, 4), repeat(4, []float64{1, 1}), repeat(4, []float64{0.5, 0.5}), "abab"},
		// Without after-scores the scores do not move: a every time.
		{"max-score without after-scores", maxScorePicker{}, round(0, 0, 4), repeat(4, []float64{1, 1}), nil, "aaaa"},
		// 0 and 2 in flight: a (0); a (1 < 2); a (2 = 2, first among equals); b (3 > 2).
		{"least-load on the placed state", leastLoadPicker{}, round(0, 2, 4), repeat(4, []float64{0, 0}), nil, "aaab"},
		// Alone, each sees 0 and 2: a every time.
		{"alone", leastLoadPicker{}, round(0, 2, 1, 1, 1, 1), repeat(4, []float64{0, 0}), nil, "aaaa"},
		// Two rounds of two in one batch: the second starts again from the scraped state, a and a
		// (it would be a, b had it counted the first round's).
		{"two rounds", leastLoadPicker{}, round(0, 2, 2, 2), repeat(4, []float64{0, 0}), nil, "aaaa"},
	}
	for _, tt := range tests {
		for way, pick := range map[string]func() ([]transport.Result[[]int], error){
			"wire": func() ([]transport.Result[[]int], error) {
				c := dispense(t, sdk.StagePicker, tt.picker).(*transport.PickerClient)
				return c.PickBatch(context.Background(), tt.cycles, tt.scores, tt.after)
			},
			"local": func() ([]transport.Result[[]int], error) {
				return transport.Local{P: tt.picker}.PickBatch(context.Background(), tt.cycles, tt.scores, tt.after)
			},
		} {
			t.Run(tt.name+"/"+way, func(t *testing.T) {
				got, err := pick()
				if err != nil {
					t.Fatal(err)
				}
				var firsts strings.Builder
				for i, r := range got {
					if r.Err != nil || len(r.Value) == 0 {
						t.Fatalf("cycle %d: %v, %v", i, r.Value, r.Err)
					}
					firsts.WriteString(tt.cycles[i].Endpoints[r.Value[0]].ID[:1])
				}
				if firsts.String() != tt.want {
					t.Errorf("first choices %q, want %q", firsts.String(), tt.want)
				}
			})
		}
	}
}

// Every picker the SDK serves says it places rounds; no other stage does.
func TestInfoRounds(t *testing.T) {
	for stage, want := range map[sdk.Stage]bool{sdk.StagePicker: true, sdk.StageScorer: false} {
		info, err := dispense(t, stage, &echoStage{}).Info(context.Background())
		if err != nil || info.Rounds != want {
			t.Errorf("%v: rounds %v (%v), want %v", stage, info.Rounds, err, want)
		}
	}
}

// A cycle's round and its predictions' after columns cross the wire intact, and a stage that
// declares it reads only the endpoint count still gets, in a round, the round and the endpoint
// ids (the SDK tells the round's endpoints apart by them).
func TestRoundConversion(t *testing.T) {
	c := roundCycle(1, 3, 1, 3)
	c.Endpoints[1].Prediction.TTFTAfterMs, c.Endpoints[1].Prediction.TPOTAfterMs = 95, 9.5
	got, err := sdk.CycleFromProto(transport.CycleToProto(c))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, got, cmpopts.IgnoreUnexported(sdk.Cycle{})); diff != "" {
		t.Errorf("cycle round trip (-want +got):\n%s", diff)
	}
	if p := transport.CycleToProto(roundCycle(0, 0, 1, 3)); p.GetRound() != nil || p.GetEndpoints().GetPredictions().GetTtftAfterMs() != nil {
		t.Errorf("a cycle decided alone carries a round %v or after columns %v", p.GetRound(), p.GetEndpoints().GetPredictions())
	}
	for _, tt := range []struct {
		cycle   *sdk.Cycle
		wantIDs bool
	}{{roundCycle(1, 3, 1, 3), true}, {roundCycle(0, 0, 1, 3), false}} {
		got, err := transport.ProjectCycle(tt.cycle, []string{"endpoints.count"})
		if err != nil {
			t.Fatal(err)
		}
		if got.Round != tt.cycle.Round || (got.Endpoints[1].ID == "b:2") != tt.wantIDs {
			t.Errorf("projected %+v: round %+v, ids %q; want round %+v, ids %v", tt.cycle.Round, got.Round,
				[]string{got.Endpoints[0].ID, got.Endpoints[1].ID}, tt.cycle.Round, tt.wantIDs)
		}
	}
}
