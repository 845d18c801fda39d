package sdk

import (
	"encoding/json"
	"testing"
)

func TestHopOn(t *testing.T) {
	r := Request{Disaggregation: Disaggregation{Hop: HopPrefill, DecodeEndpoint: "d:1"}}
	if r.HopOn("d:1") != HopWhole || r.HopOn("p:1") != HopPrefill {
		t.Errorf("prefill cycle: HopOn(decode endpoint) %v, HopOn(other) %v; want whole and prefill", r.HopOn("d:1"), r.HopOn("p:1"))
	}
	r.Disaggregation = Disaggregation{Hop: HopDecode}
	if r.HopOn("d:1") != HopDecode {
		t.Errorf("decode cycle: HopOn %v", r.HopOn("d:1"))
	}
	if (&Request{}).HopOn("d:1") != HopWhole {
		t.Error("a request without disaggregation is not whole")
	}
}

func TestHopJSON(t *testing.T) {
	b, err := json.Marshal(Request{Disaggregation: Disaggregation{Hop: HopDecode}})
	if err != nil || string(b) != `{"slo":{},"disaggregation":{"hop":"decode"}}` {
		t.Errorf("marshal: %s, %v", b, err)
	}
	if b, _ := json.Marshal(Request{}); string(b) != `{"slo":{}}` {
		t.Errorf("a whole request marshals as %s", b)
	}
	var r Request
	if err := json.Unmarshal([]byte(`{"disaggregation":{"hop":"prefill","decode_endpoint":"d"}}`), &r); err != nil || r.Disaggregation.Hop != HopPrefill {
		t.Errorf("unmarshal: %+v, %v", r.Disaggregation, err)
	}
	if err := json.Unmarshal([]byte(`{"disaggregation":{"hop":"encode"}}`), &r); err == nil {
		t.Error("an unknown hop is accepted")
	}
}

func TestADecodeHopPlacesNoPrefill(t *testing.T) {
	c := &Cycle{Request: Request{InputTokens: 100, Disaggregation: Disaggregation{Hop: HopDecode}}, Endpoints: []Endpoint{{ID: "d"}}}
	if c.UncachedTokens(0) != 0 {
		t.Errorf("a decode hop brings %d prompt tokens to compute, want 0", c.UncachedTokens(0))
	}
	PlaceOn(c, 0, 2)
	if s := c.Endpoints[0].State; s.InflightRequests != 2 || s.PrefillTokensInFlight != 0 {
		t.Errorf("placed twice: %d in flight, %d prefill tokens; want 2 and 0", s.InflightRequests, s.PrefillTokensInFlight)
	}
	c.Request.Disaggregation = Disaggregation{Hop: HopPrefill, DecodeEndpoint: "d"} // served whole there
	if c.UncachedTokens(0) != 100 {
		t.Errorf("the decode endpoint of a prefill cycle brings %d prompt tokens, want 100", c.UncachedTokens(0))
	}
}
