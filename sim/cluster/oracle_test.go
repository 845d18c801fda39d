package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/sim/engine"
)

// cloneEngine returns an independent copy of e, of either family.
func cloneEngine(e engine.Engine) engine.Engine {
	switch e := e.(type) {
	case *engine.Batch:
		return e.Clone()
	case *engine.Slot:
		return e.Clone()
	}
	panic(fmt.Sprintf("cannot clone a %T", e))
}

// cloneFirstToken is the oracle's forward simulation as it was before Speculate: on a clone.
func cloneFirstToken(e engine.Engine, r engine.Request, now time.Duration) (time.Duration, error) {
	c := cloneEngine(e)
	c.ExpectStepTimes()
	return firstToken(c, r, now)
}

// checkingOracle routes as Oracle, after checking that every candidate's speculative TTFT is
// the TTFT of the same simulation on a clone.
type checkingOracle struct {
	t        testing.TB
	arrivals int
}

func (o *checkingOracle) Route(c *sdk.Cycle, f *Fleet) (Decision, error) {
	o.arrivals++
	for i, e := range f.Engines {
		want, werr := cloneFirstToken(e, f.Arrival, f.Now)
		got, gerr := f.ExpectedTTFT(i)
		if got != want || (werr == nil) != (gerr == nil) {
			o.t.Fatalf("request %d on server %d: speculative TTFT %v (%v), clone's %v (%v)", f.Arrival.ID, i, got, gerr, want, werr)
		}
	}
	return Oracle{}.Route(c, f)
}

// TestOracleSpeculationIsExact runs scenario C with the oracle, checking every candidate's TTFT
// against the clone-based simulation, and checks the outcomes are those of a clone-based oracle.
func TestOracleSpeculationIsExact(t *testing.T) {
	reqs := scenarioC(t, 4, 600)
	co := &checkingOracle{t: t}
	got, err := Run(fleet(t, 4), reqs, co, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Run(fleet(t, 4), reqs, cloneOracle{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if co.arrivals != len(reqs) {
		t.Fatalf("checked %d arrivals, want %d", co.arrivals, len(reqs))
	}
	for i := range want.Outcomes {
		if got.Outcomes[i] != want.Outcomes[i] {
			t.Fatalf("request %d: outcome %+v, clone-based oracle %+v", i, got.Outcomes[i], want.Outcomes[i])
		}
	}
}

// cloneOracle is Oracle as it was before Speculate, simulating on clones.
type cloneOracle struct{}

func (cloneOracle) Route(_ *sdk.Cycle, f *Fleet) (Decision, error) {
	return fastest(f, func(i int) (time.Duration, error) { return cloneFirstToken(f.Engines[i], f.Arrival, f.Now) })
}

// snapshotter routes to the least loaded server and records clones of the fleet at arrivals
// [from, from+n).
type snapshotter struct {
	from, n, seen int
	fleets        []Fleet
}

func (s *snapshotter) Route(_ *sdk.Cycle, f *Fleet) (Decision, error) {
	if s.seen >= s.from && s.seen < s.from+s.n {
		snap := Fleet{Arrival: f.Arrival, Now: f.Now}
		for _, e := range f.Engines {
			snap.Engines = append(snap.Engines, cloneEngine(e))
		}
		s.fleets = append(s.fleets, snap)
	}
	s.seen++
	best, bestLoad := 0, int(^uint(0)>>1)
	for i, e := range f.Engines {
		m := e.Metrics()
		if l := m.Waiting + m.Running + m.Pending; l < bestLoad {
			best, bestLoad = i, l
		}
	}
	return Decision{Endpoint: best}, nil
}

// BenchmarkOracleRoute measures the oracle's cost per arrival on 8 loaded servers (scenario C,
// mid-run), with the speculative simulation and with the former clone-based one.
func BenchmarkOracleRoute(b *testing.B) {
	reqs := scenarioC(b, 8, 1500)
	snap := &snapshotter{from: 1000, n: 64}
	cfg := fleet(b, 8)
	if _, err := Run(cfg, reqs, snap, nil); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		router Router
	}{{"speculate", Oracle{}}, {"clone", cloneOracle{}}} {
		b.Run(bc.name, func(b *testing.B) {
			// One pass first, so that the snapshots own their pages as a live engine does.
			for i := range snap.fleets {
				if _, err := bc.router.Route(nil, &snap.fleets[i]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				f := &snap.fleets[i%len(snap.fleets)]
				if _, err := bc.router.Route(nil, f); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// TestOracleDoesNotForeseeNoise routes one request to two idle, identical servers whose next
// step-time noise differs. The oracle must see a tie (and take the lower index) whatever the
// draws: a router cannot know them, and an oracle that did would shun an idle server for as long
// as its next draw was unlucky, since an idle engine draws nothing.
func TestOracleDoesNotForeseeNoise(t *testing.T) {
	ec, err := engine.Preset("llama-3.1-8b-h100-tp2")
	if err != nil {
		t.Fatal(err)
	}
	r := engine.Request{ID: 1, InputTokens: 4000, OutputTokens: 10}
	for seed := uint64(1); seed <= 16; seed++ {
		f := &Fleet{Arrival: r, Now: time.Second}
		for i := range 2 {
			c := ec
			c.Noise, c.Seed = 0.5, 2*seed+uint64(i)
			e, err := engine.New(c)
			if err != nil {
				t.Fatal(err)
			}
			f.Engines = append(f.Engines, e)
		}
		d, err := Oracle{}.Route(nil, f)
		if err != nil {
			t.Fatal(err)
		}
		if d.Endpoint != 0 {
			t.Fatalf("noise seeds %d and %d: oracle picked server %d of two idle identical servers, want 0", 2*seed, 2*seed+1, d.Endpoint)
		}
	}
}
