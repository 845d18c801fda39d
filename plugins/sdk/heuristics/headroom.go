package heuristics

import (
	"math"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// Headroom is how far an endpoint's prediction sits inside a request's SLOs, in milliseconds.
// A dimension without an objective has +Inf headroom.
type Headroom struct {
	TTFTMs float64
	TPOTMs float64
}

// Meets reports whether both dimensions are non-negative.
func (h Headroom) Meets() bool { return h.TTFTMs >= 0 && h.TPOTMs >= 0 }

// HeadroomOf returns the endpoint's headroom for the request, or ok == false when the endpoint has no
// valid prediction. TTFT headroom = request TTFT SLO − predicted TTFT. TPOT headroom, for streaming
// requests only, = min(request TPOT SLO, tightest TPOT SLO running on the endpoint) × bufferFactor −
// predicted TPOT, so a new request is not placed where it would break a running request's objective.
// A TPOT the producer does not know yet (0, sdk.Prediction) gives +Inf TPOT headroom, as if there
// were no TPOT objective: nothing can be judged against it, and SLO − 0 would pass for the most
// headroom there is and steer the ranking by an unknown.
func HeadroomOf(r *sdk.Request, e *sdk.Endpoint, bufferFactor float64) (h Headroom, ok bool) {
	if !e.Prediction.Valid {
		return Headroom{}, false
	}
	h = Headroom{TTFTMs: math.Inf(1), TPOTMs: math.Inf(1)}
	if r.SLO.TTFTMs > 0 {
		h.TTFTMs = r.SLO.TTFTMs - e.Prediction.TTFTMs
	}
	if r.Streaming && e.Prediction.TPOTMs > 0 {
		if slo := EffectiveTPOTSLO(r.SLO.TPOTMs, e.State.MinRunningTPOTSLOMs); slo > 0 {
			h.TPOTMs = slo*bufferFactor - e.Prediction.TPOTMs
		}
	}
	return h, true
}

// EffectiveTPOTSLO returns the tighter of two TPOT objectives where zero means "none".
func EffectiveTPOTSLO(request, running float64) float64 {
	switch {
	case request <= 0:
		return running
	case running <= 0:
		return request
	default:
		return math.Min(request, running)
	}
}
