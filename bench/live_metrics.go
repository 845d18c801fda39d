package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The metrics the live bench reads: the router's (host/metrics) and the emulated servers'
// (vLLM's names, sim/emulator).
const (
	metricEndpointRequests = "foresight_endpoint_requests_total"
	metricPredictorMAPE    = "foresight_predictor_mape"
	metricWaiting          = "vllm:num_requests_waiting"
)

// textFormat asks for the classic Prometheus text format, as host/endpoints does.
const textFormat = "text/plain;version=0.0.4;q=1,*/*;q=0.1"

// promValues are the metric families of one Prometheus text exposition, by name.
type promValues map[string]*dto.MetricFamily

// scrape reads the Prometheus text exposition at url.
func scrape(ctx context.Context, client *http.Client, url string) (promValues, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", textFormat)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return parseProm(resp.Body)
}

// parseProm reads a Prometheus text exposition with expfmt (UTF-8 names, so vLLM's "vllm:…"
// read as they are).
func parseProm(r io.Reader) (promValues, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	return fams, nil
}

// byLabel returns the values of the series of name by their label's value.
func (v promValues) byLabel(name, label string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range v[name].GetMetric() {
		x, ok := sampleValue(m)
		if !ok {
			continue
		}
		for _, l := range m.GetLabel() {
			if l.GetName() == label {
				out[l.GetValue()] += x
			}
		}
	}
	return out
}

// sum returns the sum of name over its series; ok is false when there is no sample of it.
func (v promValues) sum(name string) (x float64, ok bool) {
	for _, m := range v[name].GetMetric() {
		if y, isValue := sampleValue(m); isValue {
			x, ok = x+y, true
		}
	}
	return x, ok
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

// routerFigures are what the live bench reads from the router's /metrics after a run.
type routerFigures struct {
	// dispatched counts the requests the router sent to each endpoint, by endpoint id (the
	// address given in --endpoints); a failover counts once for each endpoint tried.
	dispatched map[string]float64
	// mape is foresight_predictor_mape by target (ttft, tpot): absent without a producer, or
	// before it reported an error.
	mape map[string]float64
}

// readRouter scrapes the router's admin /metrics.
func readRouter(ctx context.Context, client *http.Client, admin string) (routerFigures, error) {
	v, err := scrape(ctx, client, "http://"+admin+"/metrics")
	if err != nil {
		return routerFigures{}, fmt.Errorf("reading the router's metrics: %w", err)
	}
	return routerFigures{dispatched: v.byLabel(metricEndpointRequests, "endpoint"), mape: v.byLabel(metricPredictorMAPE, "target")}, nil
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
				v, err := scrape(ctx, client, "http://"+a+"/metrics")
				if err != nil {
					continue
				}
				if w, ok := v.sum(metricWaiting); ok {
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
