package cluster

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/sim/workload"
	"github.com/rs/zerolog"
)

// Decisions that never herd: a burst of arrivals between two scrapes sees the same scraped gauges
// on every arrival. The load heuristics count the router's own dispatches since the scrape
// (dispatched_since_scrape), so the burst spreads over the fleet; on the gauges alone, every
// arrival would score the same endpoint best and the whole burst would go there.

const (
	burstServers  = 4
	burstRequests = 40
	// burstSlack is how many requests above an even share one server may get.
	burstSlack = 2
)

func TestBurstBetweenScrapesSpreads(t *testing.T) {
	routers := []struct {
		name  string
		build func(t *testing.T) Router
	}{
		{"composite-scorer and max-score-picker (the scorer and picker fallbacks)", func(t *testing.T) Router {
			return yamlPipeline(t, `
plugins:
  - {name: composite, type: composite-scorer}
  - {name: max-score, type: max-score-picker}
pipeline:
  scorers: [{pluginRef: composite}]
  picker: {pluginRef: max-score}
`, nil)
		}},
		{"a failing scorer and no picker: the pipeline's fallbacks decide", func(t *testing.T) Router {
			return yamlPipeline(t, `
plugins:
  - {name: broken, type: broken-scorer}
pipeline:
  scorers: [{pluginRef: broken}]
`, map[string]sdk.Plugin{"broken": brokenScorer{}})
		}},
		{"load-prefix-111.yaml (queue-scorer on the waiting queue)", func(t *testing.T) Router {
			return examplePipeline(t, "load-prefix-111.yaml")
		}},
	}
	fleets := []struct {
		name    string
		waiting []int // the waiting gauges of the last scrape, before the burst
	}{
		{"server 0 looked idle at the last scrape, the others had one waiting", []int{0, 1, 1, 1}},
		{"the whole fleet looked idle", []int{0, 0, 0, 0}},
	}
	for _, r := range routers {
		for _, f := range fleets {
			t.Run(r.name+"/"+f.name, func(t *testing.T) {
				counts := burst(t, r.build(t), f.waiting, burstRequests)
				if most := slices.Max(counts); most > burstRequests/burstServers+burstSlack {
					t.Errorf("requests per server %v: one got %d of %d, want at most %d (an even share + %d)",
						counts, most, burstRequests, burstRequests/burstServers+burstSlack, burstSlack)
				}
			})
		}
	}
}

// burst routes n requests arriving together, 10 ms after a scrape and before the next, through
// router on a fleet of idle engines whose last scrape showed the given waiting gauges (the gauges
// are stale: the engines hold nothing). It returns how many requests went to each server.
func burst(t *testing.T, router Router, waiting []int, n int) []int {
	t.Helper()
	reqs := make([]workload.Request, n)
	for i := range reqs {
		reqs[i] = workload.Request{ID: uint64(i), Arrival: 10 * time.Millisecond, InputTokens: 512, OutputTokens: 64, Streaming: true}
	}
	s, err := newSim(fleet(t, len(waiting)), reqs, []Replica{{Router: router}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range waiting {
		s.scraped[i].Waiting = w
	}
	counts := make([]int, len(waiting))
	for i := range reqs {
		if err := s.arrive(i); err != nil {
			t.Fatal(err)
		}
		if s.flights[i] == nil {
			t.Fatalf("request %d was shed", i)
		}
		counts[slices.Index(s.ids, s.flights[i].sample.EndpointID)]++
	}
	return counts
}

// yamlPipeline builds the pipeline a config file holding yaml describes; the plugins named in
// local run in process as the given stages, the others are built-ins.
func yamlPipeline(t *testing.T, yaml string, local map[string]sdk.Plugin) Router {
	t.Helper()
	cfg, err := config.Parse("burst.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.BuildInProcess(context.Background(), cfg, local, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return PipelineRouter{Pipeline: p}
}

// brokenScorer fails every cycle, so the pipeline scores with its fallback.
type brokenScorer struct{}

func (brokenScorer) Type() string           { return "broken-scorer" }
func (brokenScorer) Description() string    { return "fails every cycle" }
func (brokenScorer) Configure([]byte) error { return nil }
func (brokenScorer) Score(context.Context, *sdk.Cycle) ([]float64, error) {
	return nil, errors.New("broken on purpose")
}
