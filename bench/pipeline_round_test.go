package bench

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
	"github.com/rs/zerolog"
)

// noopPluginEnv, set in a test binary's environment, makes it serve NoopFilter instead of
// running tests: the floor's plugin in TestRunPipelineFillsTheResult. It is read in init, before
// the package's TestMain, so that the helper stays with the test that launches it.
const noopPluginEnv = "FORESIGHT_BENCH_NOOP_PLUGIN"

func init() {
	if os.Getenv(noopPluginEnv) == "1" {
		sdk.ServeFilter(NoopFilter{}, "0.0.0")
		os.Exit(0)
	}
}

// Rounds take the waiting requests from the head of the queue, at most size at a time, and a
// request answered is followed by its client's next: every request is decided once, in order.
func TestMeasureRoundsDecidesEachRequestOnceInRounds(t *testing.T) {
	tests := []struct {
		name             string
		n, waiting, size int
		want             []int // each round's size
	}{
		// 8 wait, a round takes all 8; their 8 clients send 8 more, of which 2 remain to send.
		{"all waiting in one round", 10, 8, 200, []int{8, 2}},
		// 3 wait, rounds of 2: one waits a round, and the 2 answered bring 2 more (3 waiting).
		{"more waiting than a round takes", 10, 3, 2, []int{2, 2, 2, 2, 2}},
		// One client: one request at a time, whatever a round could take.
		{"one client", 5, 1, 4, []int{1, 1, 1, 1, 1}},
		// Fewer requests than clients: 7 wait at the start, in rounds of 3, 3, 1.
		{"fewer requests than clients", 7, 8, 3, []int{3, 3, 1}},
		// A round of 1 (server.decisionConcurrency: 1): 4 wait, one decided at a time.
		{"rounds of one", 6, 4, 1, []int{1, 1, 1, 1, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sizes, order []int
			lat, _, rounds := measureRounds(tt.n, tt.waiting, tt.size, 1, 0, func(first, k int, prior pipeline.Prior) map[string]int {
				if prior != nil {
					t.Errorf("round from %d: given an earlier round's placements, one round at a time", first)
				}
				sizes = append(sizes, k)
				for i := first; i < first+k; i++ {
					order = append(order, i)
				}
				return nil
			})
			if !slices.Equal(sizes, tt.want) || rounds != len(tt.want) {
				t.Errorf("rounds of %v (%d rounds), want %v", sizes, rounds, tt.want)
			}
			if want := seq(tt.n); !slices.Equal(order, want) {
				t.Errorf("decided %v, want each of %v once, in order", order, want)
			}
			// The requests waiting at the start all arrived together: one decided in a later
			// round waited for the rounds before it (the clock is monotonic, so never less).
			for i := 1; i < min(tt.waiting, tt.n); i++ {
				if lat[i] < lat[i-1] {
					t.Errorf("request %d took %v, less than request %d before it in the queue (%v)", i, lat[i], i-1, lat[i-1])
				}
			}
		})
	}
}

// With two rounds under way at once, as the router's decider runs them, a round starts while the
// one before it is under way and is given its placements once they are known; every request is
// still decided once.
func TestMeasureRoundsOverlapsTwoRounds(t *testing.T) {
	first, second := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var starts []int
	var given map[string]int
	decided := make([]int, 12)
	_, _, rounds := measureRounds(12, 4, 2, 2, 0, func(from, k int, prior pipeline.Prior) map[string]int {
		mu.Lock()
		starts = append(starts, from)
		mu.Unlock()
		n := from/2 + 1 // the rounds take the queue in order: the n-th round starts at 2(n−1)
		switch n {
		case 1: // held until the second round has begun beside it
			select {
			case <-second:
			case <-time.After(5 * time.Second):
				t.Error("no second round began while the first was under way")
			}
			close(first)
		case 2:
			close(second)
			if prior == nil {
				t.Error("the second round was not given the first's placements")
			} else {
				given = prior() // waits for the first
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for i := from; i < from+k; i++ {
			decided[i]++
		}
		return map[string]int{"round-" + fmt.Sprint(n): k}
	})
	<-first
	if !maps.Equal(given, map[string]int{"round-1": 2}) {
		t.Errorf("the second round was given %v, want the first's {round-1: 2}", given)
	}
	slices.Sort(starts)
	if rounds != 6 || !slices.Equal(starts, []int{0, 2, 4, 6, 8, 10}) || slices.ContainsFunc(decided, func(n int) bool { return n != 1 }) {
		t.Errorf("%d rounds starting at %v, decisions by request %v; want 6 rounds of 2, each request once", rounds, starts, decided)
	}
}

// seq returns 0, 1, …, n−1.
func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// seedFilter is a filter that keeps every endpoint and records the seed of every cycle it is
// asked about: the bench's cycle number.
type seedFilter struct {
	mu    sync.Mutex
	seeds []uint64
}

func (*seedFilter) Type() string           { return "seed-filter" }
func (*seedFilter) Description() string    { return "keeps every endpoint, records each cycle's seed" }
func (*seedFilter) Configure([]byte) error { return nil }
func (f *seedFilter) Filter(_ context.Context, c *sdk.Cycle) (sdk.FilterVerdict, error) {
	f.mu.Lock()
	f.seeds = append(f.seeds, c.Seed)
	f.mu.Unlock()
	return sdk.FilterVerdict{Kept: heuristics.AllIndices(len(c.Endpoints))}, nil
}

// roundBenchYAML is a pipeline of stages in process: the seed filter, the built-in queue scorer
// on requests in flight (which gives after-scores) and the built-in max-score picker (which
// places rounds); maxBatch 4.
const roundBenchYAML = "plugins:\n  - {name: seeds, type: seed-filter}\n" +
	"  - {name: load, type: queue-scorer, parameters: {source: inflight}}\n  - {name: pick, type: max-score-picker}\n" +
	"pipeline:\n  maxBatch: 4\n  filters: [{pluginRef: seeds}]\n  scorers: [{pluginRef: load}]\n  picker: {pluginRef: pick}\n"

// The bench's decisions in rounds decide every cycle once, a round's cycles in one RunRound
// (one batch per stage for each pass of maxBatch), and count the picks that accounted for their
// round; in cohorts, every cycle once too.
func TestDecisionsInRoundsAndCohorts(t *testing.T) {
	tests := []struct {
		name              string
		n, waiting, round int // round 0: cohorts
		rounds, batches   int // RunRound calls, and batches per stage
		accounted         int64
	}{
		// 8 waiting in rounds of up to 8 at most maxBatch 4: rounds of 8, 8, 4, each 8 in two
		// passes of 4, so 2 + 2 + 1 = 5 batches; every member of a round of 2 or more accounts.
		{name: "rounds of 8 in passes of 4", n: 20, waiting: 8, round: 8, rounds: 3, batches: 5, accounted: 20},
		// Rounds of 3 from 8 waiting: 3, 3, 3, 1; the last, alone, is no round (nothing to account
		// for): 9 accounted. Each round is one batch: 4.
		{name: "rounds of 3", n: 10, waiting: 8, round: 3, rounds: 4, batches: 4, accounted: 9},
		// Rounds of 1 (server.decisionConcurrency: 1): 5 single decisions, none in a round.
		{name: "rounds of 1", n: 5, waiting: 4, round: 1, rounds: 5, batches: 5, accounted: 0},
		// Cohorts: Run per cycle, 4 at once; however the cohorts gather them, no round.
		{name: "cohorts", n: 12, waiting: 4, round: 0, rounds: 0, batches: -1, accounted: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse("round-bench.yaml", []byte(roundBenchYAML))
			if err != nil {
				t.Fatal(err)
			}
			seeds := &seedFilter{}
			p, err := pipeline.BuildInProcess(context.Background(), cfg, map[string]sdk.Plugin{"seeds": seeds}, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			d := &decisions{ctx: context.Background(), p: p, pool: synthCycles(4, 6, 1, true), detect: make([]time.Duration, tt.n)}
			drive := driver{n: tt.n, conc: tt.waiting, round: tt.round, maxBatch: cfg.Pipeline.MaxBatch}
			lat, _, rounds := drive.run(d.one, d.round)

			if rounds != tt.rounds || len(lat) != tt.n {
				t.Errorf("%d rounds, %d latencies; want %d rounds, %d latencies", rounds, len(lat), tt.rounds, tt.n)
			}
			got := slices.Clone(seeds.seeds)
			slices.Sort(got)
			want := make([]uint64, tt.n)
			for i := range want {
				want[i] = uint64(i)
			}
			if !slices.Equal(got, want) {
				t.Errorf("filtered seeds %v, want each of 0…%d once", got, tt.n-1)
			}
			for _, s := range p.Stats() {
				if s.Calls != int64(tt.n) || (tt.batches >= 0 && s.Batches != int64(tt.batches)) {
					t.Errorf("%s: %d calls in %d batches, want %d in %d", s.Plugin, s.Calls, s.Batches, tt.n, tt.batches)
				}
			}
			if got := d.accounted.Load(); got != tt.accounted {
				t.Errorf("%d picks accounted for their round, want %d", got, tt.accounted)
			}
		})
	}
}

// RunPipeline in rounds and in cohorts fills its result: the mode, the rounds (rounds mode), the
// latencies and rates of the pipeline and of the floor, served by this test binary as the no-op
// plugin.
func TestRunPipelineFillsTheResult(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "builtins.yaml")
	yaml := "plugins:\n  - {name: load, type: queue-scorer, parameters: {source: inflight}}\n  - {name: pick, type: max-score-picker}\n" +
		"pipeline:\n  scorers: [{pluginRef: load}]\n  picker: {pluginRef: pick}\n"
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(noopPluginEnv, "1")
	tests := []struct {
		name      string
		round     int
		cohorts   bool
		mode      string
		wantRound int     // the round size the result reports
		rounds    int     // 0 in cohorts; −1: rounds overlap, so any number that takes at most wantRound each
		meanRound float64 // cycles per round (with rounds −1: 36 / the rounds)
	}{
		// 4 endpoints: the router's round under a backlog is max(2 × 4, 16) = 16; 6 waiting
		// make rounds of 6: 36 cycles in 6 rounds.
		{name: "rounds, the router's size", mode: "rounds", wantRound: 16, rounds: 6, meanRound: 6},
		// Rounds of 4 from 6 waiting: the first takes 4, the second the other 2 beside it, and
		// each round's clients, answered, join the next: how they split depends on which round's
		// clients are back first, but no round takes more than 4.
		{name: "rounds of 4", round: 4, mode: "rounds", wantRound: 4, rounds: -1},
		{name: "cohorts", cohorts: true, mode: "cohorts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := RunPipeline(context.Background(), PipelineOptions{Config: file, Endpoints: 4, Cycles: 36, Concurrency: 6,
				Round: tt.round, Cohorts: tt.cohorts, Seed: 1, FloorPlugin: []string{os.Args[0]}, Log: zerolog.Nop()})
			if err != nil {
				t.Fatal(err)
			}
			if tt.rounds < 0 && res.Rounds >= 36/tt.wantRound {
				tt.rounds, tt.meanRound = res.Rounds, 36/float64(res.Rounds)
			}
			if res.Mode != tt.mode || res.Round != tt.wantRound || res.Rounds != tt.rounds || math.Abs(res.MeanRound-tt.meanRound) > 1e-9 {
				t.Errorf("mode %q, round %d, %d rounds of %.2f; want %q, %d, %d of %.2f",
					res.Mode, res.Round, res.Rounds, res.MeanRound, tt.mode, tt.wantRound, tt.rounds, tt.meanRound)
			}
			// The built-in queue scorer gives after-scores and the max-score picker places
			// rounds: every member of a round accounts. Cohorts have no share.
			if (res.Accounted == nil) != tt.cohorts || (!tt.cohorts && *res.Accounted != 1) {
				t.Errorf("accounted share %v, want 1 in rounds, none in cohorts", res.Accounted)
			}
			if res.P50Us <= 0 || res.P99Us < res.P50Us || res.DecisionsPerS <= 0 || res.FloorP50Us <= 0 || res.FloorPerS <= 0 ||
				res.MeanBatch <= 0 || res.Fallbacks != 0 || res.PayloadBytes <= 0 || res.Stages != 0 {
				t.Errorf("result not filled as expected: %+v", res)
			}
		})
	}
}

// The options name the flag that is wrong.
func TestPipelineOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		o    PipelineOptions
		ok   bool
	}{
		{"rounds, the router's size", PipelineOptions{Endpoints: 1, Cycles: 1, Concurrency: 1}, true},
		{"rounds of 3", PipelineOptions{Endpoints: 1, Cycles: 1, Concurrency: 1, Round: 3}, true},
		{"cohorts", PipelineOptions{Endpoints: 1, Cycles: 1, Concurrency: 1, Cohorts: true}, true},
		{"negative round", PipelineOptions{Endpoints: 1, Cycles: 1, Concurrency: 1, Round: -1}, false},
		{"a round size with cohorts", PipelineOptions{Endpoints: 1, Cycles: 1, Concurrency: 1, Round: 2, Cohorts: true}, false},
		{"no concurrency", PipelineOptions{Endpoints: 1, Cycles: 1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.o.Validate(); (err == nil) != tt.ok {
				t.Errorf("Validate() = %v, want ok %t", err, tt.ok)
			}
		})
	}
}

// With a pause each client answered sends its next request that much later: one client, four
// requests, three pauses between them; each request is still decided once, in order.
func TestMeasureRoundsPauses(t *testing.T) {
	const pause = 20 * time.Millisecond
	var order []int
	_, wall, rounds := measureRounds(4, 1, 1, 2, pause, func(first, k int, _ pipeline.Prior) map[string]int {
		for i := first; i < first+k; i++ {
			order = append(order, i)
		}
		return nil
	})
	if want := seq(4); !slices.Equal(order, want) || rounds != 4 {
		t.Errorf("decided %v in %d rounds, want %v in 4", order, rounds, want)
	}
	if wall < 3*pause {
		t.Errorf("4 requests of one client took %v, less than its 3 pauses of %v", wall, pause)
	}
}
