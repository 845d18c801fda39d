package profile

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func ttftFile(points ...string) string {
	return `{"metadata":{"model":"m","timestamp":"2026-01-01T00:00:00Z","description":"TTFT profiling results"},"results":[` +
		strings.Join(points, ",") + `]}`
}

func ttftPoint(tokens, p50 float64) string {
	return fmt.Sprintf(`{"tokens_num":%v,"mean":%v,"p50":%v,"p95":%v,"p99":%v}`, tokens, p50+1, p50, p50*1.5, p50*2)
}

func tpotPoint(batch, tokens, p50 float64) string {
	return fmt.Sprintf(`{"batch_size":%v,"tokens_per_request":%v,"mean":%v,"p50":%v,"p95":%v}`, batch, tokens, p50, p50, p50*1.2)
}

// TestTTFTInterpolation: linear between profiled points, the first point's value below it, the
// last segment's slope beyond the last point; computed by hand.
func TestTTFTInterpolation(t *testing.T) {
	// Out of order on purpose: the parser sorts by tokens_num.
	p, err := ParseTTFT("ttft.json", []byte(ttftFile(ttftPoint(256, 60), ttftPoint(128, 40), ttftPoint(512, 100))), "p50")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ tokens, want float64 }{
		{1, 40}, {64, 40}, {128, 40}, {192, 50}, {256, 60}, {384, 80}, {512, 100},
		{1024, 180}, // 100 + (100 − 60) / 256 × 512
	} {
		if got := p.Predict(c.tokens); got != c.want {
			t.Errorf("Predict(%v) = %v, want %v", c.tokens, got, c.want)
		}
	}
	p95, err := ParseTTFT("ttft.json", []byte(ttftFile(ttftPoint(128, 40), ttftPoint(256, 60))), "p95")
	if err != nil || p95.Predict(192) != 75 { // between 60 and 90
		t.Errorf("p95 at 192 tokens: %v, %v; want 75", p95, err)
	}
	llumnix := `{"metadata":{"model":"m","timestamp":"t","description":"d","gpu":"H100"},"results":[` +
		`{"tokens_num":128,"mean":41,"std":2,"min":38,"max":47,"p50":40,"p95":45,"p99":46,"raw_data":[40,41,38]},` +
		`{"tokens_num":256,"mean":61,"std":2,"min":58,"max":67,"p50":60,"p95":65,"p99":66,"raw_data":[60,61,58]}]}`
	if lp, err := ParseTTFT("llumnix.json", []byte(llumnix), "max"); err != nil || lp.Predict(192) != 57 {
		t.Errorf("Llumnix's own point shape (std, min, max, raw_data; more metadata) at max: %v; want 57 at 192 tokens", err)
	}
	one, err := ParseTTFT("ttft.json", []byte(ttftFile(ttftPoint(128, 40))), "p50")
	if err != nil || one.Predict(10) != 40 || one.Predict(1e6) != 40 {
		t.Errorf("a one-point profile: %v; want its value everywhere", err)
	}
	if p.Metadata.Model != "m" {
		t.Errorf("metadata %+v", p.Metadata)
	}
}

// TestTPOTBilinear: the four corners around a point, each axis clamped below and extrapolated
// beyond; computed by hand on the grid batch {1, 16} × tokens {8, 64}.
func TestTPOTBilinear(t *testing.T) {
	data := `{"metadata":{"model":"m","timestamp":"t"},"results":[` + strings.Join([]string{
		tpotPoint(1, 8, 10), tpotPoint(1, 64, 12), tpotPoint(16, 8, 14), tpotPoint(16, 64, 20)}, ",") + `]}`
	p, err := ParseTPOT("tpot.json", []byte(data), "p50")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ batch, tokens, want float64 }{
		{1, 8, 10}, {16, 64, 20}, {1, 64, 12}, {16, 8, 14},
		{8.5, 36, 14}, // halfway both ways: 10 + 0.5·2 = 11 at batch 1, 14 + 0.5·6 = 17 at 16, then 14
		{8.5, 8, 12},  // along the batch only
		{0.5, 4, 10},  // below both axes: the first corner
		{31, 8, 18},   // twice the batch segment beyond 16: 10 + 2 × (14 − 10)
		{16, 120, 26}, // twice the token segment beyond 64: 14 + 2 × (20 − 14)
		{31, 120, 38}, // both: 10 + 2·2 = 14 at batch 1, 26 at 16, then 14 + 2 × (26 − 14)
	} {
		if got := p.Predict(c.batch, c.tokens); got != c.want {
			t.Errorf("Predict(%v, %v) = %v, want %v", c.batch, c.tokens, got, c.want)
		}
	}
	// A last segment that falls within the noise tolerated (20 → 19.5 ms) is not extrapolated
	// downward: beyond it the last value holds.
	noisy := `{"metadata":{},"results":[` + strings.Join([]string{
		tpotPoint(1, 8, 10), tpotPoint(1, 64, 10), tpotPoint(16, 8, 20), tpotPoint(16, 64, 19.5)}, ",") + `]}`
	if np, err := ParseTPOT("tpot.json", []byte(noisy), "p50"); err != nil || np.Predict(16, 6400) != 19.5 || math.Abs(np.Predict(160, 64)-(10+159.0/15*9.5)) > 1e-9 {
		t.Errorf("a falling last segment: %v", err)
	}
	row := `{"metadata":{"model":"m","timestamp":"t"},"results":[` + tpotPoint(4, 8, 10) + "," + tpotPoint(4, 64, 12) + `]}`
	p, err = ParseTPOT("tpot.json", []byte(row), "p50")
	if err != nil || p.Predict(100, 36) != 11 {
		t.Errorf("a grid one batch size wide: %v; want constant along the batch", err)
	}
}

// TestBadProfiles: every malformed profile is refused with a message naming the file, the point
// and what is wrong.
func TestBadProfiles(t *testing.T) {
	for _, c := range []struct {
		name, data, percentile, want string
		tpot                         bool
	}{
		{name: "not JSON", data: `{"results":`, want: "ttft.json: not a profile (JSON with metadata and results)"},
		{name: "unknown member", data: `{"metadata":{},"results":[],"extra":1}`, want: `ttft.json: unknown member "extra" (a profile holds metadata and results)`},
		{name: "no results", data: `{"metadata":{}}`, want: "ttft.json: results is missing"},
		{name: "empty results", data: `{"metadata":{},"results":[]}`, want: "results is empty: a profile needs at least one point"},
		{name: "no tokens_num", data: ttftFile(`{"p50":3}`), want: "ttft.json: results[0] has no tokens_num"},
		{name: "no percentile", data: ttftFile(`{"tokens_num":128,"mean":3}`), want: "results[0] has no p50"},
		{name: "tokens not whole", data: ttftFile(`{"tokens_num":12.5,"p50":3}`), want: "results[0].tokens_num must be a whole number ≥ 1, got 12.5"},
		{name: "negative latency", data: ttftFile(`{"tokens_num":128,"p50":-3}`), want: "results[0].p50 must be ≥ 0, got -3"},
		{name: "a string", data: ttftFile(`{"tokens_num":"128","p50":3}`), want: `results[0].tokens_num must be a number, got "128"`},
		{name: "duplicate", data: ttftFile(ttftPoint(128, 40), ttftPoint(128, 41)), want: "tokens_num 128 is profiled twice"},
		{name: "non-monotone", data: ttftFile(ttftPoint(128, 40), ttftPoint(256, 30)), want: "p50 falls from 40 ms at tokens_num 128 to 30 ms at 256: a longer prefill must not be faster"},
		{name: "unknown percentile", data: ttftFile(ttftPoint(128, 40)), percentile: "p42", want: `percentile "p42": accepted: mean, min, max, p50, p95, p99`},
		{name: "results not an array", data: `{"metadata":{},"results":{}}`, want: "ttft.json: results must be an array of objects"},
		{name: "incomplete grid", tpot: true, data: `{"metadata":{},"results":[` + tpotPoint(1, 8, 10) + "," + tpotPoint(1, 64, 12) + "," + tpotPoint(16, 8, 14) + `]}`,
			want: "tpot.json: batch_size 16 with tokens_per_request 64 is not profiled: the points must form a grid (batch sizes [1 16] × tokens_per_request [8 64])"},
		{name: "duplicate grid point", tpot: true, data: `{"metadata":{},"results":[` + tpotPoint(1, 8, 10) + "," + tpotPoint(1, 8, 11) + `]}`,
			want: "batch_size 1 with tokens_per_request 8 is profiled twice"},
		{name: "faster with a larger batch", tpot: true, data: `{"metadata":{},"results":[` + tpotPoint(1, 8, 10) + "," + tpotPoint(16, 8, 9) + `]}`,
			want: "p50 falls from 10 to 9 ms as batch_size grows from 1 to 16 at tokens_per_request 8"},
		{name: "faster with a longer context", tpot: true, data: `{"metadata":{},"results":[` + tpotPoint(1, 8, 10) + "," + tpotPoint(1, 64, 9) + `]}`,
			want: "p50 falls from 10 to 9 ms as tokens_per_request grows from 8 to 64 at batch_size 1"},
		{name: "no batch_size", tpot: true, data: `{"metadata":{},"results":[{"tokens_per_request":8,"p50":1}]}`, want: "tpot.json: results[0] has no batch_size"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := c.percentile
			if p == "" {
				p = DefaultPercentile
			}
			var err error
			if c.tpot {
				_, err = ParseTPOT("tpot.json", []byte(c.data), p)
			} else {
				_, err = ParseTTFT("ttft.json", []byte(c.data), p)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// TestPredictor: Llumnix's chunked-prefill TTFT and decode-step TPOT over two small profiles,
// computed by hand.
func TestPredictor(t *testing.T) {
	ttft, err := ParseTTFT("ttft.json", []byte(ttftFile(ttftPoint(100, 20), ttftPoint(1000, 110))), "p50")
	if err != nil {
		t.Fatal(err)
	}
	tpot, err := ParseTPOT("tpot.json", []byte(`{"metadata":{},"results":[`+strings.Join([]string{
		tpotPoint(1, 8, 10), tpotPoint(1, 1008, 12), tpotPoint(11, 8, 20), tpotPoint(11, 1008, 22)}, ",")+`]}`), "p50")
	if err != nil {
		t.Fatal(err)
	}
	p := Predictor{TTFT: ttft, TPOT: tpot, MaxNumBatchedTokens: 1000}
	for _, c := range []struct {
		name                  string
		prefill, reqs, tokens float64
		want                  float64
	}{
		{"idle, one chunk", 550, 0, 0, 65},                            // 20 + 450 × 0.1
		{"nothing to prefill: one step", 0, 0, 0, 20},                 // the first point
		{"a decode batch rides along", 550, 6, 3048, 65 + 16},         // 508 per request: halfway on both axes
		{"few tokens per request read at 8", 100, 1, 2, 20 + 10},      // TPOT(1, 8)
		{"three chunks", 2500, 0, 0, 110 + 110 + 60},                  // 1000, 1000, 500
		{"three chunks beside a batch", 2500, 11, 11 * 8, 3*20 + 280}, // 20 ms a step
	} {
		if got := p.Prefill(c.prefill, c.reqs, c.tokens); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: Prefill(%v, %v, %v) = %v, want %v", c.name, c.prefill, c.reqs, c.tokens, got, c.want)
		}
	}
	if got := p.DecodeStep(6, 3048); math.Abs(got-16) > 1e-9 { // (11 + 21) / 2
		t.Errorf("DecodeStep(6, 3048) = %v, want 16", got)
	}
	whole := Predictor{TTFT: ttft, TPOT: tpot}
	if got := whole.Prefill(2500, 0, 0); math.Abs(got-260) > 1e-9 { // 110 + 1500 × 0.1, one chunk
		t.Errorf("no step budget: Prefill(2500) = %v, want 260", got)
	}
}
