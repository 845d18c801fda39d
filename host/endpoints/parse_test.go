package endpoints

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/sim/emulator"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func TestParseMetrics(t *testing.T) {
	vllm, _ := Names("vllm")
	sglang, _ := Names("sglang")
	tests := []struct {
		name    string
		names   MetricNames
		body    string
		want    gauges
		wantErr string
	}{{
		name:  "vllm",
		names: vllm,
		body:  vllmBody(4, 2, 0.25),
		want:  gauges{waiting: 4, running: 2, kvCacheUsage: 0.25, blockSize: 16, numGPUBlocks: 1000, cacheKnown: true},
	}, {
		name:  "older vllm: gpu_cache_usage_perc as the fallback",
		names: vllm,
		body: "vllm:num_requests_waiting{model_name=\"m\"} 1\n" +
			"vllm:num_requests_running{model_name=\"m\"} 3\n" +
			"vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.5\n" +
			"vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"None\"} 1\n",
		// num_gpu_blocks "None" (before profiling) leaves the capacity unknown.
		want: gauges{waiting: 1, running: 3, kvCacheUsage: 0.5},
	}, {
		name:  "several label sets: waiting and running summed, usage the highest, blocks summed",
		names: vllm,
		body: "# TYPE vllm:num_requests_waiting gauge\n" +
			"vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 2\n" +
			"vllm:num_requests_waiting{engine=\"1\",model_name=\"m\"} 5\n" +
			"vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 7\n" +
			"vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 1\n" +
			"vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.3\n" +
			"vllm:kv_cache_usage_perc{engine=\"1\",model_name=\"m\"} 0.7\n" +
			"vllm:cache_config_info{block_size=\"16\",engine=\"0\",num_gpu_blocks=\"100\"} 1\n" +
			"vllm:cache_config_info{block_size=\"16\",engine=\"1\",num_gpu_blocks=\"200\"} 1\n",
		// waiting 2+5 = 7, running 7+1 = 8, usage max(0.3, 0.7), blocks 100+200.
		want: gauges{waiting: 7, running: 8, kvCacheUsage: 0.7, blockSize: 16, numGPUBlocks: 300, cacheKnown: true},
	}, {
		name:  "sglang, two data-parallel ranks",
		names: sglang,
		body: "# HELP sglang:num_queue_reqs The number of requests in the waiting queue.\n" +
			"# TYPE sglang:num_queue_reqs gauge\n" +
			"sglang:num_queue_reqs{dp_rank=\"0\",model_name=\"m\"} 3.0\n" +
			"sglang:num_queue_reqs{dp_rank=\"1\",model_name=\"m\"} 4.0\n" +
			"# TYPE sglang:num_running_reqs gauge\n" +
			"sglang:num_running_reqs{dp_rank=\"0\",model_name=\"m\"} 1.0\n" +
			"sglang:num_running_reqs{dp_rank=\"1\",model_name=\"m\"} 2.0\n" +
			"# TYPE sglang:token_usage gauge\n" +
			"sglang:token_usage{dp_rank=\"0\",model_name=\"m\"} 0.2\n" +
			"sglang:token_usage{dp_rank=\"1\",model_name=\"m\"} 0.5\n" +
			"# TYPE sglang:cache_hit_rate gauge\n" +
			"sglang:cache_hit_rate{model_name=\"m\"} 0.007\n",
		// waiting 3+4, running 1+2, usage max(0.2, 0.5); no cache-config metric.
		want: gauges{waiting: 7, running: 3, kvCacheUsage: 0.5},
	}, {
		name:  "untyped samples and NaN series",
		names: vllm,
		body: "vllm:num_requests_waiting 2\nvllm:num_requests_running NaN\nvllm:num_requests_running{x=\"1\"} 1\n" +
			"vllm:kv_cache_usage_perc 0.1\n",
		want: gauges{waiting: 2, running: 1, kvCacheUsage: 0.1},
	}, {
		name:    "a required metric missing",
		names:   vllm,
		body:    "vllm:num_requests_waiting 2\nvllm:kv_cache_usage_perc 0.1\n",
		wantErr: `metric "vllm:num_requests_running" missing`,
	}, {
		name:    "usage and its fallback missing",
		names:   vllm,
		body:    "vllm:num_requests_waiting 2\nvllm:num_requests_running 1\n",
		wantErr: `metric "vllm:kv_cache_usage_perc" missing (and so is its fallback "vllm:gpu_cache_usage_perc")`,
	}, {
		name:    "only NaN",
		names:   vllm,
		body:    "vllm:num_requests_waiting NaN\nvllm:num_requests_running 1\nvllm:kv_cache_usage_perc 0\n",
		wantErr: `metric "vllm:num_requests_waiting" has no finite value`,
	}, {
		name:    "not Prometheus text at all",
		names:   vllm,
		body:    "<html>502 Bad Gateway</html>\n",
		wantErr: `metric "vllm:num_requests_waiting" missing`,
	}, {
		name:    "an unparseable sample",
		names:   vllm,
		body:    "vllm:num_requests_waiting{model_name=\"m\"} lots\n",
		wantErr: "parsing metrics",
	}, {
		name:  "no trailing newline",
		names: vllm,
		body:  "vllm:num_requests_waiting 2\nvllm:num_requests_running 1\nvllm:kv_cache_usage_perc 0.5",
		want:  gauges{waiting: 2, running: 1, kvCacheUsage: 0.5},
	}}
	var kept bytes.Buffer
	p := expfmt.NewTextParser(model.UTF8Validation)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseMetrics([]byte(tt.body), tt.names, &kept, &p)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestWants(t *testing.T) {
	names, _ := Names("vllm")
	tests := []struct {
		line string
		want bool
	}{
		{"vllm:num_requests_waiting 1", true},
		{`vllm:num_requests_waiting{model_name="m"} 1`, true},
		{"# TYPE vllm:num_requests_waiting gauge", true},
		// HELP text changes no value: skipping it spares the parser most of what it would copy.
		{"# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig", false},
		{"#TYPE\tvllm:num_requests_running\tgauge", true},
		{"# TYPEvllm:num_requests_running gauge", false},
		{"vllm:num_requests_running", true},
		{"vllm:num_requests_running\t3", true},
		{"vllm:num_requests_runnin 3", false},
		{`# TYPE "vllm:num requests" gauge`, true},
		{"vllm:num_requests_waiting_total 1", false},
		{`vllm:time_to_first_token_seconds_bucket{le="0.1"} 1`, false},
		{"# TYPE vllm:time_to_first_token_seconds histogram", false},
		{"# some comment vllm:num_requests_waiting", false},
		{`{"vllm:num_requests_waiting"} 1`, true},
		{"", false},
	}
	for _, tt := range tests {
		if got := names.wants([]byte(tt.line)); got != tt.want {
			t.Errorf("wants(%q) = %v, want %v", tt.line, got, tt.want)
		}
	}
}

// BenchmarkParseMetrics parses a vLLM-sized body (30 histograms of 20 buckets for two models): the
// allocations per scrape stay those of the few kept lines.
func BenchmarkParseMetrics(b *testing.B) {
	data := vllmSizedBody()
	names, _ := Names("vllm")
	var kept bytes.Buffer
	p := expfmt.NewTextParser(model.UTF8Validation)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseMetrics(data, names, &kept, &p); err != nil {
			b.Fatal(err)
		}
	}
}

// vllmSizedBody is vllmBody with 30 histograms of 20 buckets for two models: about 66 kB, the
// size of a busy vLLM server's /metrics.
func vllmSizedBody() []byte {
	var body strings.Builder
	body.WriteString(vllmBody(3, 4, 0.5))
	for h := range 30 {
		fmt.Fprintf(&body, "# TYPE vllm:hist_%d_seconds histogram\n", h)
		for _, model := range []string{"a", "b"} {
			for le := range 20 {
				fmt.Fprintf(&body, "vllm:hist_%d_seconds_bucket{le=\"%d\",model_name=%q} %d\n", h, le, model, le)
			}
		}
	}
	return []byte(body.String())
}

// BenchmarkScrapeApply is one scrape's work after the body arrived: the parse of a /metrics body
// and the update of the endpoint's state. "emulator" is the project's vLLM emulator's body (the
// idle router's fleet in the overhead benchmarks); "vllm-sized" the synthetic 66 kB body above.
func BenchmarkScrapeApply(b *testing.B) {
	fleet, err := emulator.Start(1, 0, "llama-3.1-8b-h100-tp2", 1)
	if err != nil {
		b.Fatal(err)
	}
	defer fleet.Close()
	resp, err := http.Get("http://" + fleet.Addrs()[0] + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	emu, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		body []byte
	}{{"emulator", emu}, {"vllm-sized", vllmSizedBody()}} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := New(Config{}, []Endpoint{{ID: "e", Address: "127.0.0.1:1"}})
			if err != nil {
				b.Fatal(err)
			}
			m := s.members[0]
			sc := newScraper(s.cfg, m.st.Endpoint)
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			for b.Loop() {
				g, err := parseMetrics(bc.body, sc.names, &sc.kept, &sc.parser)
				s.record(m, g, err)
			}
			if st, _ := s.Get("e"); !st.Healthy || st.LastError != "" {
				b.Fatalf("state after the scrapes: %+v", st)
			}
		})
	}
}
