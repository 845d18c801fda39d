package promtext

import (
	"context"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
