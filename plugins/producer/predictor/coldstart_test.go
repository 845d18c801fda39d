package predictor

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/internal/profile"
	"github.com/foresight-router/foresight/plugins/internal/profiled"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// coldProfiles writes a TTFT and a TPOT profile into a directory and returns the coldStart
// parameter naming them.
func coldProfiles(t *testing.T) map[string]any {
	t.Helper()
	dir := t.TempDir()
	md := profile.Metadata{Model: "m", MaxNumBatchedTokens: 2048, KVCacheTokens: 100_000}
	write := func(name string, w func(f *os.File) error) {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := w(f); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write("ttft.json", func(f *os.File) error {
		return profile.Write(f, md, []profile.TTFTPoint{{TokensNum: 16, Stats: profile.Stats{P50: 12}}, {TokensNum: 2048, Stats: profile.Stats{P50: 60}}})
	})
	var tpot []profile.TPOTPoint
	for _, b := range []int{1, 64} {
		for _, tok := range []int{16, 4096} {
			tpot = append(tpot, profile.TPOTPoint{BatchSize: b, TokensPerRequest: tok, Stats: profile.Stats{P50: 8 + float64(b)/16}})
		}
	}
	write("tpot.json", func(f *os.File) error { return profile.Write(f, md, tpot) })
	return map[string]any{"ttftProfile": filepath.Join(dir, "ttft.json"), "tpotProfile": filepath.Join(dir, "tpot.json")}
}

// TestColdStartProfile: with coldStart, the producer predicts from the profiles (valid, as the
// profile-producer would) until its prior has learned, then from the prior; without it, a cold
// producer's predictions are invalid.
func TestColdStartProfile(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	cold := coldProfiles(t)
	p := New()
	configure(t, p, map[string]any{"trainInline": true, "coldStart": cold})
	c := cycle(rng, 4, t0)
	got, err := p.Produce(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(cold)
	ref := profiled.New()
	if err := ref.Configure(raw); err != nil {
		t.Fatal(err)
	}
	want, err := ref.Produce(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if !got[i].Valid || got[i].TTFTMs != max(want[i].TTFTMs, minPredictionMs) || got[i].TPOTMs != max(want[i].TPOTMs, minPredictionMs) {
			t.Errorf("endpoint %d before any sample: %+v, want the profile's %+v", i, got[i], want[i])
		}
	}
	if _, err := p.Observe(context.Background(), samples(rng, 40, t0, nil)); err != nil {
		t.Fatal(err)
	}
	later, err := p.Produce(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if later[0].TTFTMs == got[0].TTFTMs || !later[0].Valid {
		t.Errorf("after 40 samples the prior should predict TTFT, still the profile's %v", later[0])
	}

	plain := New()
	configure(t, plain, map[string]any{"trainInline": true})
	if pr, _ := plain.Produce(context.Background(), c); pr[0].Valid {
		t.Errorf("without coldStart a cold producer predicted %+v", pr[0])
	}
}

// TestColdStartErrors: a bad coldStart is refused with the parameter's name, and the producer's
// configuration in force stays.
func TestColdStartErrors(t *testing.T) {
	p := New()
	for _, tc := range []struct{ raw, want string }{
		{`{"coldStart":{"ttftProfile":"nope.json","tpotProfile":"nope.json"}}`, `parameter "coldStart": reading a profile`},
		{`{"coldStart":{"ttftProfile":"a"}}`, `parameter "coldStart": parameters "ttftProfile" and "tpotProfile" are required`},
		{`{"coldStart":{"bogus":1}}`, `parameter "coldStart": decoding parameters`},
	} {
		if err := p.Configure([]byte(tc.raw)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.raw, err, tc.want)
		}
	}
	if pr, err := p.Produce(context.Background(), &sdk.Cycle{Endpoints: []sdk.Endpoint{{ID: "a"}}}); err != nil || pr[0].Valid {
		t.Errorf("after refused configurations: %+v, %v", pr, err)
	}
}
