package proxy

import (
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// A gateway's disaggregated request: the router names the prefill endpoint in a header
// (disaggregation.prefillHeader, llm-d's x-prefiller-host-port) and the gateway sends the request
// to the decode endpoint, whose sidecar runs the prefill hop there first. The router sees only the
// decode endpoint's answer: its first token ends the prefill hop too, and its TTFT is the client's
// (both hops). That TTFT teaches the producer the prefill endpoint's share, what is left of it
// after the decode hop's predicted TTFT; the decode hop's own TPOT teaches as usual.

// PrefillHeader is the header naming the prefill endpoint (host:port) to the decode endpoint's
// sidecar and its value; the value is "" when the request goes whole, and the name "" on a fleet
// without disaggregation. A front sets the header, or removes it when the value is "" so that a
// client cannot choose the prefill endpoint itself.
func (r *Routed) PrefillHeader() (name, value string) {
	d := r.s.pd.Load()
	if d == nil {
		return "", ""
	}
	if sp := r.x.split; sp != nil {
		return d.PrefillHeader, r.hostPort(sp.endpoint) // delegate named it
	}
	return d.PrefillHeader, ""
}

// delegate hands x's prefill hop to the decode endpoint's sidecar: the decode attempts are
// dispatched as decode hops without the router seeing the prefill answer.
func (x *exchange) delegate() {
	if sp := x.split; sp != nil {
		pick := sp.trace.Candidates[sp.trace.Order[0]]
		sp.delegated, sp.endpoint, sp.predicted = true, pick.ID, pick.Prediction
	}
}

// prefillDone ends a delegated prefill hop when the decode answer's first token came at at (or
// the exchange ended, at the zero time): its flight ends, and the client's TTFT, less the decode
// hop's predicted TTFT, teaches the producer the prefill endpoint's latency.
func (r *Routed) prefillDone(at time.Time, ttft time.Duration) {
	sp := r.x.split
	if sp == nil || !sp.delegated || sp.first == nil || sp.done {
		return
	}
	sp.done = true
	r.out.prefill = sp.endpoint
	r.s.endFlight(sp.first)
	if at.IsZero() || r.fellBack {
		return
	}
	if share := ms(ttft) - sp.cycle.Request.Disaggregation.DecodeTTFTMs; share > 0 && sp.cycle.Request.Disaggregation.DecodeTTFTMs > 0 {
		r.s.observe(r.x, sp.first, sdk.Sample{ActualTTFTMs: share}, at)
	}
}
