package endpoints

import (
	"strings"
	"testing"
	"time"
)

func TestBaseURL(t *testing.T) {
	tests := []struct{ addr, want string }{
		{"127.0.0.1:8000", "http://127.0.0.1:8000"},
		{"http://127.0.0.1:8000", "http://127.0.0.1:8000"},
		{"http://127.0.0.1:8000/", "http://127.0.0.1:8000"},
		{"https://vllm.example:443/pool-a/", "https://vllm.example:443/pool-a"},
		{"[::1]:8000", "http://[::1]:8000"},
	}
	for _, tt := range tests {
		if got := (Endpoint{Address: tt.addr}).BaseURL(); got != tt.want {
			t.Errorf("BaseURL(%q) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}

func TestValidateAddress(t *testing.T) {
	tests := []struct {
		addr    string
		wantErr string // "" for valid
	}{
		{"127.0.0.1:8000", ""},
		{"vllm-0.vllm:8000", ""},
		{"[::1]:8000", ""},
		{"http://127.0.0.1:8000", ""},
		{"https://vllm.example", ""},
		{"http://10.0.0.1:8000/prefix", ""},
		{"", "address is required"},
		{"127.0.0.1", "neither host:port nor an http(s) URL"},
		{":8000", "has no host"},
		{"127.0.0.1:0", "accepted: 1 to 65535"},
		{"127.0.0.1:http", "accepted: 1 to 65535"},
		{"ftp://127.0.0.1:21", `scheme "ftp"`},
		{"http://", "has no host"},
		{"http://127.0.0.1:8000/?x=1", "without user, query or fragment"},
		{"http://127.0.0.1:99999", "accepted: 1 to 65535"},
	}
	for _, tt := range tests {
		err := ValidateAddress(tt.addr)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("ValidateAddress(%q) = %v, want nil", tt.addr, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("ValidateAddress(%q) = %v, want an error containing %q", tt.addr, err, tt.wantErr)
		}
	}
}

func TestNames(t *testing.T) {
	v, err := Names("vllm")
	if err != nil || v.Waiting != "vllm:num_requests_waiting" || v.Running != "vllm:num_requests_running" ||
		v.KVCacheUsage != "vllm:kv_cache_usage_perc" || v.KVCacheUsageFallback != "vllm:gpu_cache_usage_perc" ||
		v.CacheConfig != "vllm:cache_config_info" {
		t.Errorf("Names(vllm) = %+v, %v", v, err)
	}
	s, err := Names("sglang")
	if err != nil || s.Waiting != "sglang:num_queue_reqs" || s.Running != "sglang:num_running_reqs" ||
		s.KVCacheUsage != "sglang:token_usage" || s.CacheConfig != "" {
		t.Errorf("Names(sglang) = %+v, %v", s, err)
	}
	if _, err := Names("tgi"); err == nil || !strings.Contains(err.Error(), `unknown engine "tgi"; accepted: vllm, sglang`) {
		t.Errorf("Names(tgi) error = %v", err)
	}
}

func TestNewValidates(t *testing.T) {
	ok := []Endpoint{{ID: "a", Address: "127.0.0.1:1"}}
	tests := []struct {
		name    string
		cfg     Config
		eps     []Endpoint
		wantErr string
	}{
		{"empty id", Config{}, []Endpoint{{Address: "127.0.0.1:1"}}, `endpoint 0 (address "127.0.0.1:1"): id is required`},
		{"duplicate id", Config{}, []Endpoint{{ID: "a", Address: "127.0.0.1:1"}, {ID: "a", Address: "127.0.0.1:2"}},
			`endpoint 1: id "a" is also endpoint 0's id`},
		{"bad address", Config{}, []Endpoint{{ID: "vllm-3", Address: "nowhere"}}, `endpoint "vllm-3": address "nowhere" is neither`},
		{"negative interval", Config{Interval: -time.Second}, ok, "interval must not be negative, got -1s"},
		{"negative fail-after", Config{FailAfter: -1}, ok, "fail-after must not be negative"},
		{"names without running", Config{Names: MetricNames{Waiting: "w", KVCacheUsage: "kv"}}, ok, "running is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg, tt.eps)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("New error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestNewDefaults(t *testing.T) {
	s, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := s.Config()
	vllm, _ := Names("vllm")
	if c.Interval != 50*time.Millisecond || c.Timeout != time.Second || c.FailAfter != 3 ||
		c.ProbeInterval != time.Second || c.ModelsInterval != 10*time.Second || c.Names != vllm ||
		c.Client == nil || c.Now == nil {
		t.Errorf("defaults: %+v", c)
	}
	if got := s.Snapshot(); len(got) != 0 {
		t.Errorf("empty set's snapshot = %v", got)
	}
}

func TestNewCopiesLabels(t *testing.T) {
	labels := map[string]string{"accelerator": "h100"}
	s, err := New(Config{}, []Endpoint{{ID: "a", Address: "127.0.0.1:1", Labels: labels}})
	if err != nil {
		t.Fatal(err)
	}
	labels["accelerator"] = "a100"
	if st, _ := s.Get("a"); st.Labels["accelerator"] != "h100" {
		t.Errorf("the set's labels changed with the caller's map: %v", st.Labels)
	}
}
