package predictor

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/producer/internal/share"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// kvLaw is a latency law the prior cannot follow (its TTFT has no KV-cache term): on top of the
// tests' law, TTFT grows steeply once the KV cache is over 70 % full (preemptions, say), up to
// seven times at 100 %. The trees must learn that part from samples of full caches.
func kvLaw(r *sdk.Request, s *sdk.EndpointState) (ttft, tpot float64) {
	ttft, tpot = truth(r, s)
	if s.KVCacheUsage > 0.7 {
		ttft *= 1 + 20*(s.KVCacheUsage-0.7)
	}
	return ttft, tpot
}

// workload is the tests' traffic under kvLaw: batches of 100 samples, one a second for 40 s.
func workload(seed uint64) [][]sdk.Sample {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	out := make([][]sdk.Sample, 40)
	for b := range out {
		out[b] = samples(rng, 100, t0.Add(time.Duration(b)*time.Second), nil)
		for i := range out[b] {
			s := &out[b][i]
			ttft, _ := truth(&s.Request, &s.State)
			law, _ := kvLaw(&s.Request, &s.State)
			s.ActualTTFTMs *= law / ttft
		}
	}
	return out
}

// testCycles are fresh request and endpoint states the producers' errors are measured on, on
// the endpoint the samples come from (whose speed factor the prior learned).
func testCycles(n int) []*sdk.Cycle {
	rng := rand.New(rand.NewPCG(99, 100))
	out := make([]*sdk.Cycle, n)
	for i := range out {
		out[i] = cycle(rng, 10, t0.Add(time.Minute))
		for k := range out[i].Endpoints {
			out[i].Endpoints[k].ID = "e"
		}
	}
	return out
}

// mape is p's mean absolute percentage error against kvLaw on cycles.
func mape(t *testing.T, p *Producer, cycles []*sdk.Cycle) (ttft, tpot float64) {
	t.Helper()
	n := 0
	for _, c := range cycles {
		preds, err := p.Produce(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		for i, pr := range preds {
			wt, wp := kvLaw(&c.Request, &c.Endpoints[i].State)
			if !pr.Valid || !(pr.TPOTMs > 0) {
				t.Fatalf("no prediction: %+v", pr)
			}
			ttft += math.Abs(pr.TTFTMs-wt) / wt
			tpot += math.Abs(pr.TPOTMs-wp) / wp
			n++
		}
	}
	return ttft / float64(n), tpot / float64(n)
}

func observe(t *testing.T, p *Producer, batch []sdk.Sample) sdk.ObserveResult {
	t.Helper()
	res, err := p.Observe(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// advance moves p's clock to at, as a cycle does.
func advance(t *testing.T, p *Producer, at time.Time) {
	t.Helper()
	if _, err := p.Produce(context.Background(), &sdk.Cycle{Now: at}); err != nil {
		t.Fatal(err)
	}
}

// sharingParams returns the parameters of a replica of the tests: inline training (and
// exchanges), one exchange a second of cycle time.
func sharingParams(dir, id string, extra map[string]any) map[string]any {
	params := map[string]any{"trainInline": true, "shareDir": dir, "replicaID": id, "sharePeriodMs": 1000}
	for k, v := range extra {
		params[k] = v
	}
	return params
}

// TestReplicasLearnAsOne: two replicas, each fed a disjoint half of a workload, end up
// predicting as well as one producer fed all of it. Two ways of halving: a gateway's (every
// other request) and a lopsided one (one replica sees only the endpoints whose KV cache is less
// than 60 % full), where a replica alone has never seen the states where latencies blow up.
func TestReplicasLearnAsOne(t *testing.T) {
	cycles := testCycles(200)
	end := t0.Add(time.Minute) // after the workload's 40 s and a training interval
	one := New()
	configure(t, one, map[string]any{"trainInline": true})
	for _, batch := range workload(1) {
		observe(t, one, batch)
	}
	advance(t, one, end)
	observe(t, one, nil)
	oneTTFT, oneTPOT := mape(t, one, cycles)
	t.Logf("one producer fed everything: TTFT MAPE %.4f, TPOT %.4f, %d rows", oneTTFT, oneTPOT, one.Stats().TrainingRows)

	for _, split := range []struct {
		name   string
		second func(i int, s *sdk.Sample) bool // whether the second replica gets the sample
		alone  float64                         // the least TTFT MAPE the first replica has alone
	}{
		{"every other request", func(i int, _ *sdk.Sample) bool { return i%2 == 1 }, 0},
		{"by KV cache", func(_ int, s *sdk.Sample) bool { return s.State.KVCacheUsage >= 0.6 }, 0.2},
	} {
		t.Run(split.name, func(t *testing.T) {
			dir := t.TempDir()
			a, b := New(), New()
			configure(t, a, sharingParams(dir, "a", nil))
			configure(t, b, sharingParams(dir, "b", nil))
			alone := New() // the first replica's half without the other's
			configure(t, alone, map[string]any{"trainInline": true})
			for _, batch := range workload(1) {
				var ha, hb []sdk.Sample
				for i := range batch {
					if split.second(i, &batch[i]) {
						hb = append(hb, batch[i])
					} else {
						ha = append(ha, batch[i])
					}
				}
				observe(t, a, ha)
				observe(t, b, hb)
				observe(t, alone, ha)
			}
			// Past the workload, each publishes its last rows and takes the other's; a
			// training is due.
			for _, r := range []*Producer{a, b, a} {
				advance(t, r, end)
				observe(t, r, nil)
			}
			advance(t, alone, end)
			observe(t, alone, nil)
			aloneTTFT, aloneTPOT := mape(t, alone, cycles)
			t.Logf("the first replica's half alone: TTFT MAPE %.4f, TPOT %.4f", aloneTTFT, aloneTPOT)
			if aloneTTFT < split.alone {
				t.Errorf("alone, TTFT MAPE %.4f; the split was meant to leave it at least %.2f", aloneTTFT, split.alone)
			}
			for _, r := range []*Producer{a, b} {
				ttft, tpot := mape(t, r, cycles)
				rows := r.Stats().TrainingRows
				t.Logf("replica %s: TTFT MAPE %.4f, TPOT %.4f, %d rows", r.Params().ReplicaID, ttft, tpot, rows)
				if rows != one.Stats().TrainingRows {
					t.Errorf("replica %s trained on %d rows, one producer on %d", r.Params().ReplicaID, rows, one.Stats().TrainingRows)
				}
				if ttft > 1.25*oneTTFT+0.005 || tpot > 1.25*oneTPOT+0.005 {
					t.Errorf("replica %s: TTFT MAPE %.4f, TPOT %.4f; want within 25 %% + 0.5 points of one producer's %.4f and %.4f",
						r.Params().ReplicaID, ttft, tpot, oneTTFT, oneTPOT)
				}
			}
		})
	}
}

// TestSharingAloneChangesNothing: a replica with no peers predicts exactly as a producer that
// does not share (its exchanges only publish), and a producer without shareDir touches no
// directory.
func TestSharingAloneChangesNothing(t *testing.T) {
	dir := t.TempDir()
	plain, rng := trainedProducer(t, nil)
	solo, _ := trainedProducer(t, sharingParams(dir, "solo", nil))
	if plain.share != nil {
		t.Fatal("sharing is on without shareDir")
	}
	c := cycle(rng, 20, t0.Add(time.Minute))
	want, _ := plain.Produce(context.Background(), c)
	got, _ := solo.Produce(context.Background(), c)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("endpoint %d: %+v sharing alone, %+v not sharing", i, got[i], want[i])
		}
	}
	if solo.Stats() != plain.Stats() {
		t.Errorf("stats %+v sharing alone, %+v not sharing", solo.Stats(), plain.Stats())
	}
	files, _ := filepath.Glob(filepath.Join(dir, share.SamplesDir, "solo.*"))
	if len(files) == 0 {
		t.Error("the replica published nothing")
	}
}

// TestShareUnavailable: with the share directory missing (a volume not mounted) the producer
// configures, learns from its own samples and serves; it keeps the newest shareMaxRows samples
// to publish, and publishes them once the directory is there.
func TestShareUnavailable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "share")
	p := New()
	configure(t, p, sharingParams(dir, "a", map[string]any{"shareMaxRows": 500}))
	work := workload(2)
	for _, batch := range work[:20] {
		observe(t, p, batch)
	}
	if v := p.Stats().ModelVersion; v < 1 {
		t.Fatalf("no model after 20 s of samples with the share down (version %d)", v)
	}
	preds, _ := p.Produce(context.Background(), testCycles(1)[0])
	if !preds[0].Valid {
		t.Fatal("no prediction with the share down")
	}
	if f := p.share.ex.Failures(); f < 20 {
		t.Errorf("%d failed exchanges, want one a batch (20)", f)
	}
	if n, d := len(p.share.pending), p.share.dropped; n != 500 || d != 2000-500 {
		t.Errorf("%d samples waiting, %d dropped; want the newest 500 waiting of 2,000", n, d)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	observe(t, p, work[20])
	if p.share.ex.Failures() != 0 || len(p.share.pending) != 0 {
		t.Fatalf("after the directory appeared: %d failures, %d waiting", p.share.ex.Failures(), len(p.share.pending))
	}
	data, err := os.ReadFile(filepath.Join(dir, share.SamplesDir, "a.1"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := share.Decode(data)
	if err != nil || len(f.Samples) != 500 || f.Samples[499].Request.ID != work[20][99].Request.ID {
		t.Fatalf("the first file: %v; want the newest 500 samples, ending with the last one observed", err)
	}
}

// TestReplicasThatStart: a new replica serves, from its first cycle, the models another
// replica published, with that replica's samples in its store; a replica restarted under its
// ID continues its sequence and takes back its own samples and models.
func TestReplicasThatStart(t *testing.T) {
	dir := t.TempDir()
	a, rng := trainedProducer(t, sharingParams(dir, "a", nil))
	published := a.share.published
	if published == 0 {
		t.Fatal("replica a published no models")
	}
	// b must not train on what it merges: it serves a's models until its own schedule says so.
	b := New()
	configure(t, b, sharingParams(dir, "b", map[string]any{"minNewSamples": 1_000_000, "youngRows": 0}))
	if v := b.Stats().ModelVersion; v != published {
		t.Errorf("the new replica serves version %d, want a's published %d", v, published)
	}
	if b.store.Len() != a.store.Len() || b.store.Len() == 0 {
		t.Errorf("the new replica's store holds %d samples, replica a's %d", b.store.Len(), a.store.Len())
	}
	c := cycle(rng, 50, t0.Add(time.Minute))
	preds, _ := b.Produce(context.Background(), c)
	var sum float64
	for i, pr := range preds {
		ttft, _ := truth(&c.Request, &c.Endpoints[i].State)
		if !pr.Valid {
			t.Fatalf("endpoint %d: no prediction from the new replica", i)
		}
		sum += math.Abs(pr.TTFTMs-ttft) / ttft
	}
	if m := sum / float64(len(preds)); m > 0.1 {
		t.Errorf("the new replica's TTFT MAPE %.3f, want <= 0.10", m)
	}

	next := a.share.ex.(*share.Exchanger).NextSeq()
	restarted := New()
	configure(t, restarted, sharingParams(dir, "a", map[string]any{"minNewSamples": 1_000_000, "youngRows": 0}))
	if got := restarted.share.ex.(*share.Exchanger).NextSeq(); got != next {
		t.Errorf("the restarted replica writes file %d next, want %d", got, next)
	}
	if restarted.store.Len() != a.store.Len() {
		t.Errorf("the restarted replica took back %d samples, want %d", restarted.store.Len(), a.store.Len())
	}
	if v := restarted.Stats().ModelVersion; v != published {
		t.Errorf("the restarted replica serves version %d, want its own published %d", v, published)
	}
}

// TestPeersClocksDoNotMoveOurs: samples from a replica whose clock is a year ahead are learned
// from, but this replica's clock (its training schedule, its judgement of gone peers) stays its
// own.
func TestPeersClocksDoNotMoveOurs(t *testing.T) {
	dir := t.TempDir()
	a, b := New(), New()
	configure(t, a, sharingParams(dir, "a", nil))
	configure(t, b, sharingParams(dir, "b", nil))
	work := workload(3)
	ahead := work[1]
	for i := range ahead {
		ahead[i].DispatchedAt = ahead[i].DispatchedAt.AddDate(1, 0, 0)
	}
	observe(t, a, work[0])
	observe(t, b, ahead)
	observe(t, a, work[2])
	if got, want := time.Unix(0, a.lastNow.Load()).UTC(), work[2][99].DispatchedAt; !got.Equal(want) {
		t.Errorf("replica a's clock is %v, want its own latest sample's %v", got, want)
	}
	if n := a.store.Len(); n < 150 {
		t.Errorf("replica a holds %d samples; it did not merge b's", n)
	}
}

// TestExchangesInTheBackground: replicas that train and exchange in the background (the
// router's setting), fed and asked at the same time, end up with every sample of both.
func TestExchangesInTheBackground(t *testing.T) {
	dir := t.TempDir()
	work := workload(4)
	ref := New()
	configure(t, ref, map[string]any{"minNewSamples": 1_000_000, "youngRows": 0})
	replicas := []*Producer{New(), New()}
	for i, p := range replicas {
		t.Cleanup(p.WaitIdle) // exchanges run in the background: let them end before dir goes
		configure(t, p, map[string]any{"shareDir": dir, "replicaID": string(rune('a' + i)), "sharePeriodMs": 1000})
	}
	var wg sync.WaitGroup
	// Reconfigured as it runs: the limits change between exchanges, never under one.
	wg.Go(func() {
		for k := range 20 {
			configure(t, replicas[0], map[string]any{"shareDir": dir, "replicaID": "a", "sharePeriodMs": 1000, "shareKeep": 60 + k})
		}
	})
	for i, p := range replicas {
		wg.Go(func() {
			for _, batch := range work {
				if _, err := p.Observe(context.Background(), batch[i*50:(i+1)*50]); err != nil {
					t.Error(err)
				}
				if _, err := p.Produce(context.Background(), cycle(rand.New(rand.NewPCG(1, uint64(i))), 4, t0)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	for _, batch := range work {
		observe(t, ref, batch)
	}
	wg.Wait()
	for k, p := range []*Producer{replicas[0], replicas[1], replicas[0]} {
		p.WaitIdle()
		advance(t, p, t0.Add(time.Minute+time.Duration(k)*time.Second))
		observe(t, p, nil)
		p.WaitIdle()
	}
	for i, p := range replicas {
		p.mu.Lock()
		n, want := p.store.Len(), ref.store.Len()
		p.mu.Unlock()
		if n != want {
			t.Errorf("replica %d holds %d training samples, want all %d", i, n, want)
		}
	}
}

func TestShareParameters(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("POD_NAME", "router-7d9f-x2v")
	t.Setenv("HOSTNAME", "host-1")
	p := New()
	t.Cleanup(p.WaitIdle) // a configure starts an exchange in the background: let it end before dir goes
	configure(t, p, map[string]any{"shareDir": dir})
	if id := p.Params().ReplicaID; id != "router-7d9f-x2v" {
		t.Errorf("replicaID %q, want $POD_NAME's", id)
	}
	t.Setenv("POD_NAME", "")
	configure(t, p, map[string]any{"shareDir": dir})
	if id := p.Params().ReplicaID; id != "host-1" {
		t.Errorf("replicaID %q, want $HOSTNAME's", id)
	}
	t.Setenv(sdk.ConfigDirEnv, filepath.Dir(dir))
	configure(t, p, map[string]any{"shareDir": filepath.Base(dir), "replicaID": "r1"})
	if got := p.Params().ShareDir; got != dir {
		t.Errorf("shareDir %q, want it resolved against the config's directory: %q", got, dir)
	}
	configure(t, p, nil)
	if p.share != nil {
		t.Error("sharing still on without shareDir")
	}
	t.Setenv("HOSTNAME", "")
	for _, tt := range []struct {
		params map[string]any
		says   string
	}{
		{map[string]any{"shareDir": dir}, `"replicaID": empty`},
		{map[string]any{"shareDir": dir, "replicaID": "a/b"}, "replicaID"},
		{map[string]any{"sharePeriodMs": 5000, "sharePeerTimeoutMs": 10000}, "sharePeerTimeoutMs"},
		{map[string]any{"shareKeep": 0}, "shareKeep"},
		{map[string]any{"shareMaxRows": 2_000_000}, "shareMaxRows"},
	} {
		raw, _ := json.Marshal(tt.params)
		if err := New().Configure(raw); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("Configure(%s): %v; want an error naming %s", raw, err, tt.says)
		}
	}
	// Without shareDir, the replica ID is neither needed nor looked for.
	configure(t, New(), map[string]any{})
}

// BenchmarkMergeShared times what a replica does with 10,000 rows of another's once they are
// read: file them in its store and teach them to its prior.
func BenchmarkMergeShared(b *testing.B) {
	rows := slices.Concat(workload(5)...)
	p := New()
	configure(b, p, map[string]any{"trainInline": true, "minNewSamples": 1_000_000, "youngRows": 0})
	p.mu.Lock()
	defer p.mu.Unlock()
	for b.Loop() {
		for k := 0; k < 10_000; k += len(rows) {
			p.mergeShared(rows[:min(len(rows), 10_000-k)])
		}
	}
}
