package profiled

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// Two small profiles: TTFT 20 ms at 100 tokens to 110 ms at 1,000 (0.1 ms a token); a decode
// step 10 ms alone to 20 ms at batch 11, 2 ms more at 1,008 tokens a request than at 8.
const (
	ttftJSON = `{"metadata":{"model":"m","timestamp":"t","max_num_batched_tokens":1000,"chunked_prefill":true},"results":[
		{"tokens_num":100,"p50":20,"p95":30},{"tokens_num":1000,"p50":110,"p95":150}]}`
	tpotJSON = `{"metadata":{"model":"m","timestamp":"t","kv_cache_tokens":10000},"results":[
		{"batch_size":1,"tokens_per_request":8,"p50":10,"p95":12},{"batch_size":1,"tokens_per_request":1008,"p50":12,"p95":14},
		{"batch_size":11,"tokens_per_request":8,"p50":20,"p95":24},{"batch_size":11,"tokens_per_request":1008,"p50":22,"p95":26}]}`
)

// profiles writes the two profiles into a directory and returns the parameters naming them.
func profiles(t *testing.T, extra map[string]any) []byte {
	t.Helper()
	dir := t.TempDir()
	for name, data := range map[string]string{"ttft.json": ttftJSON, "tpot.json": tpotJSON} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(sdk.ConfigDirEnv, dir) // relative paths resolve against the config's directory
	prm := map[string]any{"ttftProfile": "ttft.json", "tpotProfile": "tpot.json"}
	for k, v := range extra {
		prm[k] = v
	}
	b, _ := json.Marshal(prm)
	return b
}

// TestProduce: each endpoint's TTFT and TPOT by Llumnix's formulas, computed by hand.
func TestProduce(t *testing.T) {
	p := New()
	if err := p.Configure(profiles(t, nil)); err != nil {
		t.Fatal(err)
	}
	c := &sdk.Cycle{Request: sdk.Request{InputTokens: 500}, Endpoints: []sdk.Endpoint{
		{ID: "idle"},
		{ID: "cached", State: sdk.EndpointState{PrefixMatch: 0.8}},
		{ID: "busy", State: sdk.EndpointState{Running: 4, InflightRequests: 6, KVCacheUsage: 0.3048, PrefillTokensInFlight: 1950}},
		{ID: "gauge ahead", State: sdk.EndpointState{Running: 11, InflightRequests: 1, KVCacheUsage: 0.0088}},
	}}
	got, err := p.Produce(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	// idle: 500 tokens to prefill, 20 + 400 × 0.1 ms; TPOT: batch 1 at 500 tokens, 10 + 2 × 492/1000.
	// cached: 100 uncached tokens, the first point.
	// busy: 6 requests (the router's count beats the gauge's 4) holding 3,048 tokens: a decode
	// step of 16 ms; 2,450 tokens to prefill in chunks of 1,000, 1,000 and 450 (55 ms), each
	// beside the decode step: 2 × (110 + 16) + (55 + 16) = 323. TPOT: batch 7 holding 3,548
	// tokens, 506.86 a request.
	// gauge ahead: 11 running (the gauge beats the router's 1) holding 88 tokens, 8 a request: a
	// decode step of 20 ms beside a 60 ms prefill. TPOT: batch 12 (extrapolated: 1 ms a request)
	// at 588/12 = 49 tokens.
	alone := 10 + 2*0.492
	perReq := 3548.0/7 - 8
	want := []sdk.Prediction{
		{Valid: true, TTFTMs: 60, TPOTMs: alone},
		{Valid: true, TTFTMs: 20, TPOTMs: alone},
		{Valid: true, TTFTMs: 2*(110+16) + 55 + 16, TPOTMs: lerp(lerp(10, 12, perReq/1000), lerp(20, 22, perReq/1000), 0.6)},
		{Valid: true, TTFTMs: 60 + 20, TPOTMs: lerp(lerp(10, 12, 41.0/1000), lerp(20, 22, 41.0/1000), 1.1)},
	}
	for i, w := range want {
		g := got[i]
		if g.Valid != w.Valid || math.Abs(g.TTFTMs-w.TTFTMs) > 1e-9 || math.Abs(g.TPOTMs-w.TPOTMs) > 1e-9 {
			t.Errorf("%s: got %+v, want %+v", c.Endpoints[i].ID, g, w)
		}
	}
}

func lerp(a, b, w float64) float64 { return a + w*(b-a) }

// TestParameters: the step budget, chunking and KV capacity come from the parameters first,
// then the metadata; the percentile is a parameter.
func TestParameters(t *testing.T) {
	c := &sdk.Cycle{Request: sdk.Request{InputTokens: 2500}, Endpoints: []sdk.Endpoint{{ID: "a"}}}
	for _, tc := range []struct {
		name string
		prm  map[string]any
		ttft float64
	}{
		{"metadata: chunks of 1,000", nil, 110 + 110 + 60},
		{"a budget of 2,000", map[string]any{"maxNumBatchedTokens": 2000}, 210 + 60},
		{"no chunking", map[string]any{"chunked": false}, 260},
		{"p95", map[string]any{"percentile": "p95"}, 150 + 150 + (30 + 400*120.0/900)},
	} {
		p := New()
		if err := p.Configure(profiles(t, tc.prm)); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, err := p.Produce(context.Background(), c)
		if err != nil || math.Abs(got[0].TTFTMs-tc.ttft) > 1e-9 {
			t.Errorf("%s: TTFT %v (%v), want %v", tc.name, got[0].TTFTMs, err, tc.ttft)
		}
	}
}

// TestConfigureErrors: bad parameters and bad files are refused with what is wrong, and the
// profiles in force stay.
func TestConfigureErrors(t *testing.T) {
	p := New()
	if _, err := p.Produce(context.Background(), &sdk.Cycle{}); err == nil || !strings.Contains(err.Error(), "not configured") {
		t.Errorf("unconfigured: %v", err)
	}
	good := profiles(t, nil)
	if err := p.Configure(good); err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv(sdk.ConfigDirEnv)
	if err := os.WriteFile(filepath.Join(dir, "bare.json"), []byte(strings.Replace(tpotJSON, `"kv_cache_tokens":10000`, `"x":1`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "empty.json"), []byte(`{"metadata":{},"results":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		prm  string
		want string
	}{
		{`{}`, `"ttftProfile" and "tpotProfile" are required`},
		{`{"ttftProfile":"ttft.json","tpotProfile":"tpot.json","percentile":"p90"}`, `"percentile" must be one of`},
		{`{"ttftProfile":"ttft.json","tpotProfile":"tpot.json","maxNumBatchedTokens":-1}`, `"maxNumBatchedTokens" must be in`},
		{`{"ttftProfile":"missing.json","tpotProfile":"tpot.json"}`, "missing.json: no such file"},
		{`{"ttftProfile":"empty.json","tpotProfile":"tpot.json"}`, "empty.json: results is empty"},
		{`{"ttftProfile":"ttft.json","tpotProfile":"ttft.json"}`, "ttft.json: results[0] has no batch_size"},
		{`{"ttftProfile":"ttft.json","tpotProfile":"bare.json"}`, `"kvCacheTokens" is needed`},
		{`{"ttftProfile":"ttft.json","tpotProfile":"tpot.json","kvCacheTokens":1}`, ""}, // fine
	} {
		err := p.Configure([]byte(tc.prm))
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.prm, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.prm, err, tc.want)
		}
	}
	if _, err := p.Produce(context.Background(), &sdk.Cycle{Endpoints: []sdk.Endpoint{{ID: "a"}}}); err != nil {
		t.Errorf("after refused configurations: %v", err)
	}
}

// TestObserveScores: Observe counts the samples with a valid prediction and reports their error.
func TestObserveScores(t *testing.T) {
	p := New()
	if err := p.Configure(profiles(t, nil)); err != nil {
		t.Fatal(err)
	}
	res, err := p.Observe(context.Background(), []sdk.Sample{
		{Predicted: sdk.Prediction{Valid: true, TTFTMs: 100}, ActualTTFTMs: 80},
		{Predicted: sdk.Prediction{Valid: true, TTFTMs: 100, TPOTMs: 10}, ActualTPOTMs: 8},
		{Predicted: sdk.Prediction{Valid: false, TTFTMs: 100}, ActualTTFTMs: 1},
	})
	if err != nil || res.Accepted != 2 || res.Stats == nil || res.Stats.ModelVersion != 1 ||
		res.Stats.TTFT.Samples != 1 || math.Abs(res.Stats.TTFT.MAPE-0.25) > 1e-9 || math.Abs(res.Stats.TPOT.MAPE-0.25) > 1e-9 {
		t.Errorf("observe: %+v %+v, %v", res, res.Stats, err)
	}
}

// BenchmarkProduce: one cycle of 8 endpoints, in process (the plugin's own cost; the transport
// is bench pipeline's).
func BenchmarkProduce(b *testing.B) {
	p := New()
	dir := b.TempDir()
	for name, data := range map[string]string{"ttft.json": ttftJSON, "tpot.json": tpotJSON} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := p.Configure([]byte(`{"ttftProfile":"` + filepath.Join(dir, "ttft.json") + `","tpotProfile":"` + filepath.Join(dir, "tpot.json") + `"}`)); err != nil {
		b.Fatal(err)
	}
	c := &sdk.Cycle{Request: sdk.Request{InputTokens: 3000}, Endpoints: make([]sdk.Endpoint, 8)}
	for i := range c.Endpoints {
		c.Endpoints[i].State = sdk.EndpointState{Running: int64(4 * i), InflightRequests: int64(3 * i),
			KVCacheUsage: 0.1 * float64(i), PrefillTokensInFlight: int64(2500 * i), PrefixMatch: 0.3}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Produce(context.Background(), c); err != nil {
			b.Fatal(err)
		}
	}
}
