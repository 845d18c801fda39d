package features

import (
	"slices"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

func TestFill(t *testing.T) {
	r := sdk.Request{InputTokens: 1000, MaxOutputTokens: 250}
	s := sdk.EndpointState{KVCacheUsage: 0.3, Waiting: 2, Running: 9, InflightRequests: 5,
		PrefillTokensInFlight: 700, DecodeTokensInFlight: 4000, PrefixMatch: 0.6, LastOutputAgeMs: 3.5}
	ttft := make([]float64, len(TTFT))
	FillTTFT(ttft, &r, "e", &s)
	if want := []float64{1, 0.3, 1000, 2, 5, 700, 4000, 0.6, 400, 2, 3.5, 1100, 0}; !slices.Equal(ttft, want) {
		t.Errorf("TTFT features %v, want %v", ttft, want)
	}
	tpot := make([]float64, len(TPOT))
	FillTPOT(tpot, &r, "e", &s)
	if want := append(slices.Clone(ttft[:7]), 250); !slices.Equal(tpot, want) {
		t.Errorf("TPOT features %v, want the first seven TTFT ones and max_tokens %v", tpot, want)
	}
	r.MaxOutputTokens = 0 // none set
	if FillTPOT(tpot, &r, "e", &s); tpot[7] != 0 {
		t.Errorf("TPOT max_output_tokens without max_tokens: %v, want 0", tpot[7])
	}
	// The decode hop of a disaggregated request pulls its uncached prompt as KV: it computes none.
	r.Disaggregation = sdk.Disaggregation{Hop: sdk.HopDecode}
	FillTTFT(ttft, &r, "e", &s)
	if want := []float64{1, 0.3, 1000, 2, 5, 700, 4000, 0.6, 0, 2, 3.5, 700, 400}; !slices.Equal(ttft, want) {
		t.Errorf("decode hop: TTFT features %v, want %v", ttft, want)
	}
	// In a prefill cycle the decode endpoint would serve the request whole, the others prefill it.
	r.Disaggregation = sdk.Disaggregation{Hop: sdk.HopPrefill, DecodeEndpoint: "d"}
	for _, id := range []string{"d", "e"} {
		if FillTTFT(ttft, &r, id, &s); ttft[8] != 400 || ttft[12] != 0 {
			t.Errorf("prefill cycle, endpoint %s: effective input %v, transfer %v; want 400 and 0", id, ttft[8], ttft[12])
		}
	}
	r.Disaggregation = sdk.Disaggregation{}
	s.Waiting, s.PrefixMatch = 0, 1.5 // an out-of-range match is clamped
	FillTTFT(ttft, &r, "e", &s)
	if ttft[0] != 0 || ttft[7] != 1 || ttft[8] != 0 || ttft[9] != 4 || ttft[11] != 700 {
		t.Errorf("no queue, full match: %v", ttft)
	}
}

func TestMonotoneDirectionsCoverEveryFeature(t *testing.T) {
	if len(TTFTMonotone) != len(TTFT) || len(TPOTMonotone) != len(TPOT) {
		t.Fatalf("directions for %d TTFT and %d TPOT features, want %d and %d",
			len(TTFTMonotone), len(TPOTMonotone), len(TTFT), len(TPOT))
	}
	// Every load, size and queue only adds latency (+1), the prefix match only takes it away.
	others := map[string]int8{"prefix_match": -1, "prefix_bucket": -1, "last_output_age_ms": 0, "max_output_tokens": 0}
	for k, names := range [][]string{TTFT, TPOT} {
		dirs := [][]int8{TTFTMonotone, TPOTMonotone}[k]
		for f, name := range names {
			want, ok := others[name]
			if !ok {
				want = 1
			}
			if dirs[f] != want {
				t.Errorf("%s: direction %d, want %d", name, dirs[f], want)
			}
		}
	}
}
