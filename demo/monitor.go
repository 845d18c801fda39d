package demo

import (
	"context"
	"math"
	"net/http"
	"sync"

	"github.com/foresight-router/foresight/host/experiment"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/internal/promtext"
	"github.com/foresight-router/foresight/sim/testbed"
)

// endpointLoad is one server's scraped gauges and its share of the router's recent picks.
type endpointLoad struct {
	id                   string
	ok                   bool // the scrape worked
	running, waiting, kv float64
	picks                int
}

// predictorState is the producer's figures from the router's /metrics.
type predictorState struct {
	ok                 bool // the scrape worked
	producer           bool // the pipeline has a producer (its metrics are there)
	version, rows      float64
	accepted           float64 // samples the producer accepted
	mapeTTFT, mapeTPOT float64 // NaN until the producer reports an error
}

// fleetState is one scrape of the fleet and the router.
type fleetState struct {
	endpoints []endpointLoad
	decisions int // decision traces the picks count
	predictor predictorState
	// experiment is the router's experiment report (GET /admin/experiments); nil without one.
	experiment *experiment.Report
}

// monitor scrapes the emulated servers' and the router's metrics.
type monitor struct {
	endpoints []testbed.Endpoint
	admin     string
	decisions func() []*pipeline.Trace
	// experiments is the router's experiment report (router.Router.Experiments).
	experiments func() (any, bool)
	client      *http.Client
}

// scrape reads every server's /metrics and the router's, concurrently; what fails shows as
// unknown.
func (m *monitor) scrape(ctx context.Context) fleetState {
	st := fleetState{endpoints: make([]endpointLoad, len(m.endpoints)), predictor: predictorState{mapeTTFT: math.NaN(), mapeTPOT: math.NaN()}}
	var wg sync.WaitGroup
	for i, e := range m.endpoints {
		wg.Go(func() {
			l := &st.endpoints[i]
			l.id = e.ID
			v, err := promtext.Scrape(ctx, m.client, "http://"+e.Addr+"/metrics")
			if err != nil {
				return
			}
			l.ok = true
			l.running, _ = v.Sum("vllm:num_requests_running")
			l.waiting, _ = v.Sum("vllm:num_requests_waiting")
			l.kv, _ = v.Sum("vllm:kv_cache_usage_perc")
		})
	}
	wg.Go(func() {
		v, err := promtext.Scrape(ctx, m.client, m.admin+"/metrics")
		if err != nil {
			return
		}
		p := &st.predictor
		p.ok = true
		_, p.producer = v.Sum("foresight_predictor_observe_batches_total")
		p.version, _ = v.Sum("foresight_predictor_model_version")
		p.rows, _ = v.Sum("foresight_predictor_training_rows")
		p.accepted, _ = v.With("foresight_predictor_samples_total", "result", "accepted")
		if x, ok := v.With("foresight_predictor_mape", "target", "ttft"); ok {
			p.mapeTTFT = x
		}
		if x, ok := v.With("foresight_predictor_mape", "target", "tpot"); ok {
			p.mapeTPOT = x
		}
	})
	wg.Wait()
	if m.experiments != nil {
		if rep, ok := m.experiments(); ok {
			if r, ok := rep.(experiment.Report); ok {
				st.experiment = &r
			}
		}
	}
	idx := map[string]int{}
	for i, e := range m.endpoints {
		idx[e.ID] = i
	}
	for _, t := range m.decisions() {
		if t.Outcome() != "picked" {
			continue
		}
		st.decisions++
		if i, ok := idx[t.Candidates[t.Order[0]].ID]; ok {
			st.endpoints[i].picks++
		}
	}
	return st
}
