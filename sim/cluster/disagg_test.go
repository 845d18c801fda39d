package cluster

import (
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// hopRouter picks the last candidate of a prefill cycle (the decode endpoint, last in the fleet's
// order, when it is one) or its first otherwise, and keeps the cycles it saw.
type hopRouter struct {
	cycles []*sdk.Cycle
	whole  bool // pick the decode endpoint in prefill cycles
}

func (r *hopRouter) Route(c *sdk.Cycle, _ *Fleet) (Decision, error) {
	r.cycles = append(r.cycles, c)
	i := 0
	if r.whole && c.Request.Disaggregation.Hop == sdk.HopPrefill {
		i = len(c.Endpoints) - 1
	}
	return Decision{Endpoint: i, Predicted: sdk.Prediction{Valid: true, TTFTMs: 50, TPOTMs: 10}}, nil
}

// pdFleet is one prefill server and one decode server.
func pdFleet(t *testing.T, split string) Config {
	cfg := fleet(t, 2)
	cfg.Disaggregation = &Disaggregation{Roles: []endpoints.Role{endpoints.RolePrefill, endpoints.RoleDecode}, Split: split}
	return cfg
}

func TestSplitRequestsRunAsAPrefillAndADecodeHop(t *testing.T) {
	reqs := scenarioC(t, 2, 40)
	var samples []sdk.Sample
	rt := &hopRouter{}
	out, err := Run(pdFleet(t, config.SplitAlways), reqs, rt, func(s sdk.Sample, _ time.Time) { samples = append(samples, s) })
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range out.Outcomes {
		if o.Server != "sim-1" || o.Prefill != "sim-0" {
			t.Fatalf("request %d served by %q after a prefill on %q, want sim-1 after sim-0", i, o.Server, o.Prefill)
		}
		if o.TTFT <= 0 || o.OutputTokens != reqs[i].OutputTokens {
			t.Errorf("request %d: TTFT %v, %d tokens of %d", i, o.TTFT, o.OutputTokens, reqs[i].OutputTokens)
		}
	}
	// Two decisions per request: the decode one among decode servers, then the prefill one among
	// prefill servers (split always: not the decode server), carrying the decode pick's prediction.
	if len(rt.cycles) != 2*len(reqs) {
		t.Fatalf("%d cycles for %d requests", len(rt.cycles), len(reqs))
	}
	for i := 0; i < len(rt.cycles); i += 2 {
		dc, pc := rt.cycles[i], rt.cycles[i+1]
		if dc.Request.Disaggregation.Hop != sdk.HopDecode || len(dc.Endpoints) != 1 || dc.Endpoints[0].ID != "sim-1" {
			t.Fatalf("decode cycle %+v over %v", dc.Request.Disaggregation, dc.Endpoints)
		}
		d := pc.Request.Disaggregation
		if d.Hop != sdk.HopPrefill || d.DecodeEndpoint != "" || d.DecodeTTFTMs != 50 || len(pc.Endpoints) != 1 || pc.Endpoints[0].ID != "sim-0" {
			t.Fatalf("prefill cycle %+v over %v", d, pc.Endpoints)
		}
	}
	// The prefill server looked every prompt up in its cache: it computed them.
	prompts := int64(0)
	for _, r := range reqs {
		prompts += int64(r.InputTokens)
	}
	if q := out.Engines[0].PrefixCacheQueries; q != prompts {
		t.Errorf("the prefill server looked up %d prompt tokens, want all %d", q, prompts)
	}
	// Samples: each prefill hop's (its answer), each decode hop's TTFT and TPOT, timed from its
	// own request.
	hops := map[string]int{}
	for _, s := range samples {
		hops[s.EndpointID+"/"+s.Request.HopOn(s.EndpointID).String()]++
		if s.Request.HopOn(s.EndpointID) == sdk.HopPrefill && !(s.ActualTTFTMs > 0) {
			t.Errorf("a prefill hop's sample without its latency: %+v", s)
		}
	}
	if hops["sim-0/prefill"] != len(reqs) || hops["sim-1/decode"] == 0 {
		t.Errorf("samples by endpoint and hop %v, want %d prefill hops on sim-0 and decode hops on sim-1", hops, len(reqs))
	}
}

func TestAdaptiveServesWholeWhenThePrefillDecisionPicksTheDecodeServer(t *testing.T) {
	reqs := scenarioC(t, 2, 20)
	rt := &hopRouter{whole: true}
	out, err := Run(pdFleet(t, config.SplitAdaptive), reqs, rt, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range out.Outcomes {
		if o.Server != "sim-1" || o.Prefill != "" {
			t.Fatalf("request %d served by %q after a prefill on %q, want sim-1 whole", i, o.Server, o.Prefill)
		}
	}
	if pc := rt.cycles[1]; pc.Request.Disaggregation.DecodeEndpoint != "sim-1" || len(pc.Endpoints) != 2 {
		t.Errorf("an adaptive prefill cycle %+v over %v, want the decode server among its candidates", pc.Request.Disaggregation, pc.Endpoints)
	}
	if out.Engines[0].PrefixCacheQueries != 0 {
		t.Errorf("the prefill server saw %d prompt tokens of requests served whole", out.Engines[0].PrefixCacheQueries)
	}
}

func TestSplitNeverServesWholeOnDecodeServers(t *testing.T) {
	reqs := scenarioC(t, 2, 20)
	rt := &hopRouter{}
	out, err := Run(pdFleet(t, config.SplitNever), reqs, rt, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rt.cycles) != len(reqs) || rt.cycles[0].Request.Disaggregation != (sdk.Disaggregation{}) || len(rt.cycles[0].Endpoints) != 1 {
		t.Fatalf("%d cycles for %d requests, the first %+v over %v", len(rt.cycles), len(reqs), rt.cycles[0].Request.Disaggregation, rt.cycles[0].Endpoints)
	}
	for i, o := range out.Outcomes {
		if o.Server != "sim-1" || o.Prefill != "" {
			t.Fatalf("request %d on %q/%q", i, o.Prefill, o.Server)
		}
	}
}
