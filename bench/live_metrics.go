package bench

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/foresight-router/foresight/internal/promtext"
)

// The metrics the live bench reads: the router's (host/metrics) and the emulated servers'
// (vLLM's names, sim/emulator).
const (
	metricEndpointRequests = "foresight_endpoint_requests_total"
	metricPredictorMAPE    = "foresight_predictor_mape"
	metricWaiting          = "vllm:num_requests_waiting"
	metricFlowDispatched   = "foresight_flow_dispatched_total"
	metricFlowShed         = "foresight_flow_shed_total"
	metricEndpointSlots    = "foresight_endpoint_slots"
	metricStageFallbacks   = "foresight_stage_fallbacks_total"
	metricDecisionWait     = "foresight_decision_wait_seconds"
	metricStageDuration    = "foresight_stage_duration_seconds"
)

// routerFigures are what the live bench reads from the router's /metrics after a run.
type routerFigures struct {
	// dispatched counts the requests the router sent to each endpoint, by endpoint id (the
	// address given in --endpoints); a failover counts once for each endpoint tried.
	dispatched map[string]float64
	// mape is foresight_predictor_mape by target (ttft, tpot): absent without a producer, or
	// before it reported an error.
	mape map[string]float64
	// flowDispatched counts the requests dispatched after waiting in the flow control queue, and
	// flowShed those flow control answered itself, by reason; both empty without flow control.
	flowDispatched float64
	flowShed       map[string]float64
	// slots are the slots flow control's detector believes each endpoint has, by endpoint id;
	// empty without flow control.
	slots map[string]float64
	// fallbacks counts the cycles where a stage's fallback replaced its plugin's answer, by
	// reason (host/pipeline's labels: timeout, unavailable, …), over every stage and profile.
	fallbacks map[string]float64
	// decisionWait is how long requests waited for the decision round that decided them
	// (foresight_decision_wait_seconds' p50 and p99 in ms, interpolated in its buckets); nil
	// when the router decided none.
	decisionWait *DecisionWait
	// stages are the round trips of each plugin instance (foresight_stage_duration_seconds by
	// plugin), in instance order; empty without plugin calls.
	stages []StageRoundTrips
}

// StageRoundTrips is one plugin instance's calls over a run, from the router's
// foresight_stage_duration_seconds (over its profiles): how many, their mean, and their p99
// estimated within the histogram's buckets.
type StageRoundTrips struct {
	Plugin string  `json:"plugin"`
	Calls  uint64  `json:"calls"`
	MeanMs float64 `json:"mean_ms"`
	P99Ms  float64 `json:"p99_ms"`
}

// DecisionWait is the router's foresight_decision_wait_seconds over a run: how long requests
// waited for the round that decided them (not the round itself). The percentiles are estimated
// inside the histogram's doubling buckets, as Prometheus' histogram_quantile does.
type DecisionWait struct {
	Requests uint64  `json:"requests"`
	P50Ms    float64 `json:"p50_ms"`
	P99Ms    float64 `json:"p99_ms"`
}

// readRouter scrapes the router's admin /metrics.
func readRouter(ctx context.Context, client *http.Client, admin string) (routerFigures, error) {
	v, err := promtext.Scrape(ctx, client, "http://"+admin+"/metrics")
	if err != nil {
		return routerFigures{}, fmt.Errorf("reading the router's metrics: %w", err)
	}
	dispatched, _ := v.Sum(metricFlowDispatched)
	var wait *DecisionWait
	if h, ok := v.Histogram(metricDecisionWait); ok && h.GetSampleCount() > 0 {
		wait = &DecisionWait{Requests: h.GetSampleCount(), P50Ms: 1000 * promtext.HistogramQuantile(h, 0.5),
			P99Ms: 1000 * promtext.HistogramQuantile(h, 0.99)}
	}
	var stages []StageRoundTrips
	byPlugin := v.HistogramsBy(metricStageDuration, "plugin")
	for _, name := range slices.Sorted(maps.Keys(byPlugin)) {
		if h := byPlugin[name]; h.GetSampleCount() > 0 {
			stages = append(stages, StageRoundTrips{Plugin: name, Calls: h.GetSampleCount(),
				MeanMs: 1000 * h.GetSampleSum() / float64(h.GetSampleCount()), P99Ms: 1000 * promtext.HistogramQuantile(h, 0.99)})
		}
	}
	return routerFigures{decisionWait: wait, stages: stages, dispatched: v.ByLabel(metricEndpointRequests, "endpoint"), mape: v.ByLabel(metricPredictorMAPE, "target"),
		flowDispatched: dispatched, flowShed: v.ByLabel(metricFlowShed, "reason"), slots: v.ByLabel(metricEndpointSlots, "endpoint"),
		fallbacks: v.ByLabel(metricStageFallbacks, "reason")}, nil
}

// queuePoller samples every emulated server's waiting queue (vllm:num_requests_waiting on its
// /metrics) every period while a run lasts, keeping each one's maximum and mean.
type queuePoller struct {
	mu      sync.Mutex
	max     []float64
	sum     []float64
	samples []int
	stopped chan struct{}
	cancel  context.CancelFunc
}

// pollQueues starts sampling the servers at addrs (host:port) every period, until stop.
func pollQueues(addrs []string, period time.Duration) *queuePoller {
	ctx, cancel := context.WithCancel(context.Background())
	q := &queuePoller{max: make([]float64, len(addrs)), sum: make([]float64, len(addrs)), samples: make([]int, len(addrs)),
		stopped: make(chan struct{}), cancel: cancel}
	client := &http.Client{Timeout: period, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1}}
	go func() {
		defer close(q.stopped)
		defer client.CloseIdleConnections()
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			for i, a := range addrs {
				v, err := promtext.Scrape(ctx, client, "http://"+a+"/metrics")
				if err != nil {
					continue
				}
				if w, ok := v.Sum(metricWaiting); ok {
					q.add(i, w)
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return q
}

func (q *queuePoller) add(i int, waiting float64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.max[i] = max(q.max[i], waiting)
	q.sum[i] += waiting
	q.samples[i]++
}

// stop ends the sampling and returns each server's maximum and mean waiting queue.
func (q *queuePoller) stop() (maxWaiting, meanWaiting []float64) {
	q.cancel()
	<-q.stopped
	q.mu.Lock()
	defer q.mu.Unlock()
	mean := make([]float64, len(q.sum))
	for i, s := range q.sum {
		if q.samples[i] > 0 {
			mean[i] = s / float64(q.samples[i])
		}
	}
	return append([]float64(nil), q.max...), mean
}
