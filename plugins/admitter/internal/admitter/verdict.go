package admitter

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
)

// admit is the whole decision for one cycle; every step is explained in README.md.
func admit(c *sdk.Cycle, p *Params) sdk.AdmitVerdict {
	r := &c.Request
	if r.Priority >= 0 {
		return yes(fmt.Sprintf("priority %d is not sheddable", r.Priority))
	}
	switch p.Mode {
	case ModeBudget:
		return admitByBudget(c, p)
	case ModeQueueDepth:
		return admitByQueue(c, p)
	}
	return admitByHeadroom(c, p)
}

// admitByQueue is the SLO-gated admission of seed 004 (its iteration 11): admit while the queue —
// the longest in the fleet, or with queueOf "min" the shortest — is below the bound of the
// request's priority class. It reads no prediction, so it works without a producer.
func admitByQueue(c *sdk.Cycle, p *Params) sdk.AdmitVerdict {
	r := &c.Request
	cl, ok := p.boundFor(r.Priority)
	if !ok {
		return yes(fmt.Sprintf("no queue bound for priority %d", r.Priority))
	}
	if len(c.Endpoints) == 0 {
		return yes("no endpoints: nothing to gate on")
	}
	queue := heuristics.Queue(p.QueueSource)
	at := 0
	for i := range c.Endpoints {
		q, b := queue(&c.Endpoints[i].State), queue(&c.Endpoints[at].State)
		if (p.QueueOf == QueueOfMax && q > b) || (p.QueueOf == QueueOfMin && q < b) {
			at = i
		}
	}
	q := queue(&c.Endpoints[at].State)
	verdict := fmt.Sprintf("%s %s queue %d on %s", p.QueueOf, p.QueueSource, q, c.Endpoints[at].ID)
	limit := fmt.Sprintf("the priority %d bound %g", cl.priority, cl.limit)
	if float64(q) < cl.limit {
		return yes(verdict + " is below " + limit)
	}
	return sdk.AdmitVerdict{Reason: "rejected: " + verdict + " reaches " + limit}
}

// admitByHeadroom is llm-d's rule: admit when the request has no SLO, no endpoint has a
// prediction (fail open), or some endpoint meets the SLO, is idle or is cold; reject otherwise.
func admitByHeadroom(c *sdk.Cycle, p *Params) sdk.AdmitVerdict {
	r := &c.Request
	if !r.SLO.Any() {
		return yes("no SLO")
	}
	if !anyUsable(c) {
		return yes("no predictions: fail open")
	}
	bestTTFT, bestTPOT := math.Inf(-1), math.Inf(-1)
	for i := range c.Endpoints {
		e := &c.Endpoints[i]
		if !usable(&e.Prediction) {
			continue
		}
		h, _ := heuristics.HeadroomOf(r, e, p.SLOBufferFactor)
		if h.Meets() {
			return yes(fmt.Sprintf("endpoint %s meets the SLO", e.ID))
		}
		bestTTFT, bestTPOT = max(bestTTFT, h.TTFTMs), max(bestTPOT, h.TPOTMs)
	}
	for i := range c.Endpoints {
		if e := &c.Endpoints[i]; e.State.Idle() {
			return yes(fmt.Sprintf("endpoint %s is idle", e.ID))
		}
	}
	for i := range c.Endpoints {
		if e := &c.Endpoints[i]; e.State.KVCacheUsage < p.ColdKVThreshold {
			return yes(fmt.Sprintf("endpoint %s is cold (KV cache %s%% < %s%%)",
				e.ID, num(100*e.State.KVCacheUsage), num(100*p.ColdKVThreshold)))
		}
	}
	var best []string
	if !math.IsInf(bestTTFT, 0) {
		best = append(best, "best TTFT headroom "+ms(bestTTFT))
	}
	if !math.IsInf(bestTPOT, 0) {
		best = append(best, "best TPOT headroom "+ms(bestTPOT))
	}
	return sdk.AdmitVerdict{Reason: fmt.Sprintf("rejected: no endpoint meets the SLO (%s), none idle or cold",
		strings.Join(best, ", "))}
}

// admitByBudget is the predictive admission of seed 004: admit when the best predicted TTFT
// across endpoints is within the request's TTFT budget × headroomMultiplier. The budget is the
// request's TTFT SLO when it has one, else its priority class's; no prediction fails open.
func admitByBudget(c *sdk.Cycle, p *Params) sdk.AdmitVerdict {
	r := &c.Request
	best, at := math.Inf(1), -1
	for i := range c.Endpoints {
		if pr := &c.Endpoints[i].Prediction; usable(pr) && pr.TTFTMs < best {
			best, at = pr.TTFTMs, i
		}
	}
	if at < 0 {
		return yes("no predictions: fail open")
	}
	var budget float64
	var source string
	if r.SLO.TTFTMs > 0 {
		budget, source = r.SLO.TTFTMs, "the request's TTFT SLO"
	} else if cl, ok := p.budgetFor(r.Priority); ok {
		budget, source = cl.limit, fmt.Sprintf("the priority %d budget", cl.priority)
	} else {
		return yes(fmt.Sprintf("no TTFT budget for priority %d", r.Priority))
	}
	verdict := fmt.Sprintf("best predicted TTFT %s on %s", ms(best), c.Endpoints[at].ID)
	limit := fmt.Sprintf("%s %s × %g", source, ms(budget), p.HeadroomMultiplier)
	if best <= budget*p.HeadroomMultiplier {
		return yes(verdict + " is within " + limit)
	}
	return sdk.AdmitVerdict{Reason: "rejected: " + verdict + " exceeds " + limit}
}

func yes(reason string) sdk.AdmitVerdict { return sdk.AdmitVerdict{Admitted: true, Reason: reason} }

// usable reports whether a prediction is valid and its numbers are finite.
func usable(pr *sdk.Prediction) bool {
	return pr.Valid && !math.IsNaN(pr.TTFTMs) && !math.IsInf(pr.TTFTMs, 0) &&
		!math.IsNaN(pr.TPOTMs) && !math.IsInf(pr.TPOTMs, 0)
}

// anyUsable reports whether some endpoint of c has a usable prediction.
func anyUsable(c *sdk.Cycle) bool {
	for i := range c.Endpoints {
		if usable(&c.Endpoints[i].Prediction) {
			return true
		}
	}
	return false
}

// num formats v rounded to one decimal, without a trailing ".0".
func num(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

// ms formats a duration in milliseconds, e.g. "-120ms".
func ms(v float64) string { return num(v) + "ms" }
