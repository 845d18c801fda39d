package promtext

import (
	"context"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

func TestParse(t *testing.T) {
	text := `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 3
vllm:num_requests_running{model_name="n"} 2
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{model_name="m"} 0.25
# TYPE foresight_predictor_mape gauge
foresight_predictor_mape{target="tpot"} 0.05
foresight_predictor_mape{target="ttft"} 0.2 1700000000000
foresight_predictor_model_version 4
# TYPE foresight_predictor_samples_total counter
foresight_predictor_samples_total{result="accepted"} 42
foresight_predictor_samples_total{result="rejected"} 1
weird{label="a b}"} 7
`
	v, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	sums := []struct {
		name string
		want float64
		ok   bool
	}{
		{"vllm:num_requests_running", 5, true}, // 3 + 2: the series summed
		{"vllm:kv_cache_usage_perc", 0.25, true},
		{"foresight_predictor_mape", 0.25, true}, // 0.05 + 0.2
		{"foresight_predictor_model_version", 4, true},
		{"weird", 7, true}, // a space and a brace inside a label value
		{"foresight_predictor_observe_batches_total", 0, false},
	}
	for _, tt := range sums {
		if got, ok := v.Sum(tt.name); ok != tt.ok || math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("sum(%s) = %v, %v, want %v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
	series := []struct {
		name, label, value string
		want               float64
		ok                 bool
	}{
		{"foresight_predictor_mape", "target", "ttft", 0.2, true}, // the timestamp is dropped
		{"foresight_predictor_mape", "target", "tpot", 0.05, true},
		{"foresight_predictor_samples_total", "result", "accepted", 42, true},
		{"foresight_predictor_samples_total", "result", "failed", 0, false},
		{"vllm:num_requests_running", "model_name", "n", 2, true},
	}
	for _, tt := range series {
		if got, ok := v.With(tt.name, tt.label, tt.value); ok != tt.ok || math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("with(%s, %s=%s) = %v, %v, want %v, %v", tt.name, tt.label, tt.value, got, ok, tt.want, tt.ok)
		}
	}
	if got, want := v.ByLabel("foresight_predictor_samples_total", "result"), map[string]float64{"accepted": 42, "rejected": 1}; !maps.Equal(got, want) {
		t.Errorf("ByLabel(samples, result) = %v, want %v", got, want)
	}
	if got := v.ByLabel("foresight_predictor_model_version", "target"); len(got) != 0 {
		t.Errorf("ByLabel of series without the label = %v, want none", got)
	}
	if _, err := Parse(strings.NewReader("not a sample line\n")); err == nil {
		t.Error("a body that is not the text format was read")
	}
}

func TestScrape(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		if !strings.HasPrefix(r.Header.Get("Accept"), "text/plain;version=0.0.4") {
			t.Errorf("Accept %q, want the classic text format", r.Header.Get("Accept"))
		}
		_, _ = w.Write([]byte("vllm:num_requests_waiting{model_name=\"m\"} 6\n"))
	}))
	defer ts.Close()
	v, err := Scrape(context.Background(), ts.Client(), ts.URL+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := v.Sum("vllm:num_requests_waiting"); !ok || got != 6 {
		t.Errorf("waiting = %v, %v; want 6", got, ok)
	}
	if _, err := Scrape(context.Background(), ts.Client(), ts.URL+"/nope"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a 404 gave %v, want an error naming it", err)
	}
}

func TestHistogramQuantile(t *testing.T) {
	// Buckets 1, 2, 4 s holding 10, 10, 0 observations, and 5 beyond 4 s: 25 in all.
	h := &dto.Histogram{SampleCount: proto[uint64](25), Bucket: []*dto.Bucket{
		{UpperBound: proto(1.0), CumulativeCount: proto[uint64](10)},
		{UpperBound: proto(2.0), CumulativeCount: proto[uint64](20)},
		{UpperBound: proto(4.0), CumulativeCount: proto[uint64](20)},
		{UpperBound: proto(math.Inf(1)), CumulativeCount: proto[uint64](25)},
	}}
	tests := []struct {
		q, want float64
	}{
		{0.2, 0.5},  // rank 5 of 10 in [0, 1]: half way
		{0.6, 1.5},  // rank 15: 5 of 10 in [1, 2]
		{0.8, 2},    // rank 20: the end of [1, 2]
		{0.95, 4},   // rank 23.75 lies beyond 4 s: the last finite bound
		{0.04, 0.1}, // rank 1: a tenth of [0, 1]
	}
	for _, tc := range tests {
		if got := HistogramQuantile(h, tc.q); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("HistogramQuantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if got := HistogramQuantile(&dto.Histogram{}, 0.95); got != 0 {
		t.Errorf("empty histogram: %v, want 0", got)
	}
}

func TestHistogramMergesSeries(t *testing.T) {
	f, err := Parse(strings.NewReader(`# TYPE wait_seconds histogram
wait_seconds_bucket{profile="a",le="0.001"} 2
wait_seconds_bucket{profile="a",le="0.01"} 3
wait_seconds_bucket{profile="a",le="+Inf"} 4
wait_seconds_sum{profile="a"} 1.5
wait_seconds_count{profile="a"} 4
wait_seconds_bucket{profile="b",le="0.001"} 0
wait_seconds_bucket{profile="b",le="0.01"} 5
wait_seconds_bucket{profile="b",le="+Inf"} 6
wait_seconds_sum{profile="b"} 0.5
wait_seconds_count{profile="b"} 6
`))
	if err != nil {
		t.Fatal(err)
	}
	h, ok := f.Histogram("wait_seconds")
	if !ok {
		t.Fatal("no histogram")
	}
	// 10 observations: 2 up to 1 ms, 6 more up to 10 ms, 2 beyond.
	if h.GetSampleCount() != 10 || h.GetSampleSum() != 2 {
		t.Errorf("count %d sum %v, want 10 and 2", h.GetSampleCount(), h.GetSampleSum())
	}
	var counts []uint64
	for _, b := range h.GetBucket() {
		counts = append(counts, b.GetCumulativeCount())
	}
	if !slices.Equal(counts, []uint64{2, 8, 10}) {
		t.Errorf("cumulative counts %v, want [2 8 10]", counts)
	}
	// The median (rank 5) lies 3 of 6 into (1 ms, 10 ms].
	if got := HistogramQuantile(h, 0.5); math.Abs(got-0.0055) > 1e-12 {
		t.Errorf("median %v, want 0.0055", got)
	}
	byProfile := f.HistogramsBy("wait_seconds", "profile")
	if len(byProfile) != 2 || byProfile["a"].GetSampleCount() != 4 || byProfile["b"].GetSampleSum() != 0.5 {
		t.Errorf("by profile %v, want a with 4 and b summing 0.5", byProfile)
	}
	if _, ok := f.Histogram("absent"); ok {
		t.Error("an absent family reads as a histogram")
	}
}
