package predictor

import (
	"github.com/foresight-router/foresight/plugins/internal/quality"
	"github.com/foresight-router/foresight/plugins/producer/internal/prior"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// targetName names the targets, indexed like every per-target array (prior.TTFT, prior.TPOT).
var targetName = [2]string{"TTFT", "TPOT"}

// source is where a target's predictions come from.
type source uint8

const (
	fromNone    source = iota // no prediction: invalid for TTFT, 0 (unknown) for TPOT
	fromTrees                 // the trees in service, times the prior for residual trees
	fromPrior                 // the analytical prior alone
	fromProfile               // the cold-start profiles (parameter coldStart)
)

// sources says, per target, where s's predictions come from. The trees serve a target unless the
// drift guard holds that target back (residual trees also need their prior). The prior serves a
// target alone before the first trees, once it has learned that target, and, while it is trusted
// on that target, when the guard holds the target's trees back. So a drifting TPOT model falls
// back to the prior, or to "unknown", without taking the TTFT trees with it; the stages' load
// heuristics take over only when TTFT has no source. The cold-start profiles, when given, serve
// a target that has no other source.
func (s *serving) sources() (src [2]source) {
	if s == nil {
		return src
	}
	for k := range src {
		switch {
		case s.set != nil && !s.drift[k] && (!s.set.Meta.Residual || s.prior.Ready()):
			src[k] = fromTrees
		case s.prior.Learned(k) && (s.set == nil || s.drift[k] && s.priorTrusted[k]):
			src[k] = fromPrior
		case s.cold != nil:
			src[k] = fromProfile
		}
	}
	return src
}

// checkDrift turns a target's guard on when its rolling MAPE is above its threshold; the caller
// holds mu. Only a retrained model turns it off (see finish).
func (p *Producer) checkDrift() {
	cur := p.current()
	if p.params.DriftMAPE <= 0 || cur.set == nil {
		return
	}
	holdout := [2]float64{cur.set.Meta.HoldoutTTFTMAPE, cur.set.Meta.HoldoutTPOTMAPE}
	for k, w := range p.q {
		if t := p.driftThreshold(holdout[k]); !cur.drift[k] && w.Len() >= p.params.DriftMinSamples && w.MAPE() > t {
			p.tripAt[k] = t
			p.setDrift(k, true)
		}
	}
}

// clearDrift turns off the guard of every target whose newly trained model's held-out MAPE is
// within the threshold that tripped it (or unknown: no held-out data to judge by), and starts
// that target's quality window afresh: the errors that tripped it are the old model's. The
// caller holds mu.
func (p *Producer) clearDrift(heldOut [2]float64) {
	cur := p.current()
	for k := range heldOut {
		if cur.drift[k] && !(heldOut[k] > p.tripAt[k]) {
			p.setDrift(k, false)
			p.resetQuality(k)
		}
	}
}

// driftThreshold is the rolling MAPE above which a model with this held-out MAPE (0: unknown)
// is taken to have drifted.
func (p *Producer) driftThreshold(holdout float64) float64 {
	return max(p.params.DriftMAPE, p.params.DriftFactor*holdout)
}

// setDrift changes target k's guard; the caller holds mu.
func (p *Producer) setDrift(k int, on bool) {
	if p.current().drift[k] == on {
		return
	}
	p.publish(func(s *serving) { s.drift[k] = on })
	ev := sdk.Log().Warn()
	if !on {
		ev = sdk.Log().Info()
	}
	ev.Str("target", targetName[k]).Bool("drift", on).Float64("mape", p.q[k].MAPE()).
		Float64("threshold", p.tripAt[k]).Msg("drift guard")
}

// refreshPrior publishes what the prior learned from the last samples and, per target, whether
// it is trusted to serve alone while that target's guard is on: while its own rolling MAPE there
// is within DriftFactor × DriftMAPE (or it has been scored on fewer than DriftMinSamples
// samples). Looser than the trees' bar: when the trees are held back the prior's alternative is
// a load heuristic that knows nothing of prompt lengths. The caller holds mu.
func (p *Producer) refreshPrior() {
	if p.prior == nil {
		return
	}
	snap := p.prior.Refresh()
	bar := p.params.DriftFactor * p.params.DriftMAPE
	ok := func(w *quality.Window) bool { return w.Len() < p.params.DriftMinSamples || !(w.MAPE() > bar) }
	trusted := [2]bool{ok(p.priorQ[prior.TTFT]), ok(p.priorQ[prior.TPOT])}
	p.publish(func(s *serving) { s.prior, s.priorTrusted = snap, trusted })
}
