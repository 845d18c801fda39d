package demo

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sync"

	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/sim/testbed"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
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
}

// monitor scrapes the emulated servers' and the router's metrics.
type monitor struct {
	endpoints []testbed.Endpoint
	admin     string
	decisions func() []*pipeline.Trace
	client    *http.Client
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
			v, err := m.get(ctx, "http://"+e.Addr+"/metrics")
			if err != nil {
				return
			}
			l.ok = true
			l.running, _ = v.sum("vllm:num_requests_running")
			l.waiting, _ = v.sum("vllm:num_requests_waiting")
			l.kv, _ = v.sum("vllm:kv_cache_usage_perc")
		})
	}
	wg.Go(func() {
		v, err := m.get(ctx, m.admin+"/metrics")
		if err != nil {
			return
		}
		p := &st.predictor
		p.ok = true
		_, p.producer = v.sum("foresight_predictor_observe_batches_total")
		p.version, _ = v.sum("foresight_predictor_model_version")
		p.rows, _ = v.sum("foresight_predictor_training_rows")
		p.accepted, _ = v.with("foresight_predictor_samples_total", "result", "accepted")
		if x, ok := v.with("foresight_predictor_mape", "target", "ttft"); ok {
			p.mapeTTFT = x
		}
		if x, ok := v.with("foresight_predictor_mape", "target", "tpot"); ok {
			p.mapeTPOT = x
		}
	})
	wg.Wait()
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

// textFormat asks for the classic Prometheus text format, as host/endpoints does.
const textFormat = "text/plain;version=0.0.4;q=1,*/*;q=0.1"

// get reads the Prometheus text exposition at url into its metric families.
func (m *monitor) get(ctx context.Context, url string) (promValues, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", textFormat)
	resp, err := m.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return parseProm(resp.Body)
}

// promValues are the metric families of one Prometheus text exposition, by name.
type promValues map[string]*dto.MetricFamily

// parseProm reads a Prometheus text exposition with expfmt (UTF-8 names, so vLLM's
// "vllm:…" read as they are); a body it cannot read is an error.
func parseProm(r io.Reader) (promValues, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	return fams, nil
}

// sum returns the sum of the gauge, counter or untyped metric name over its series; ok is false
// when the exposition has no sample of it.
func (v promValues) sum(name string) (x float64, ok bool) {
	for _, m := range v[name].GetMetric() {
		if y, isValue := sampleValue(m); isValue {
			x, ok = x+y, true
		}
	}
	return x, ok
}

// with returns the value of the series of name whose label is value; ok is false when there is
// none.
func (v promValues) with(name, label, value string) (float64, bool) {
	for _, m := range v[name].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				return sampleValue(m)
			}
		}
	}
	return 0, false
}

// sampleValue reads a gauge, counter or untyped sample.
func sampleValue(m *dto.Metric) (float64, bool) {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue(), true
	case m.Counter != nil:
		return m.Counter.GetValue(), true
	case m.Untyped != nil:
		return m.Untyped.GetValue(), true
	}
	return 0, false
}
