#!/usr/bin/python3
"""cost-aware-scorer: a Foresight scorer written in Python (see README.md beside this file).

Among the endpoints predicted to meet the request's SLO it prefers the cheapest accelerator, and
among equally cheap ones the lowest predicted TTFT; endpoints predicted to miss the SLO score below
every endpoint that meets it; without predictions it falls back to the load composite the Go
latency-scorer uses. The host runs this file directly (the shebang picks Debian's Python, which
has the gRPC, protobuf and cryptography packages the kit needs).
"""

import bisect
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
# The Python plugin kit and the generated code of proto/foresight/v1, from this checkout.
for p in (REPO / "plugins" / "sdk" / "python", REPO / "proto" / "gen" / "python"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import foresight_plugin as fp  # noqa: E402

#: Scores of the endpoints that meet the SLO lie in (MEETS_FLOOR, 1]; of those that miss it in
#: [MISS_FLOOR, MISS_CEIL]; endpoints without a prediction (when others have one) score 0.
MEETS_FLOOR = 0.51
MISS_CEIL = 0.49
MISS_FLOOR = 0.01
#: The share of a cost tier's band that the TTFT ranking inside the tier spans; the rest keeps
#: the tier's slowest endpoint above the next tier's fastest.
TIER_SPAN = 0.9
#: The smallest spread, in ms (or relative deficit), that counts as a difference.
EPS = 1e-9
#: Where an endpoint stands (CostAwareScorer._stands): predicted to meet the SLO, to miss it, or
#: without a usable prediction.
MEETS, MISSES, UNPREDICTED = 1, 2, 0
_UNPREDICTED = (UNPREDICTED, 0.0)


class _Bounds:
    """The two lowest and two highest values of a group and who holds the lowest and the
    highest: enough for the group's bounds without any one member."""
    __slots__ = ("lo", "lo2", "hi", "hi2", "lo_at", "hi_at")

    def __init__(self):
        self.lo = self.lo2 = math.inf
        self.hi = self.hi2 = -math.inf
        self.lo_at = self.hi_at = -1

    def add(self, i, v):
        """Adds member i with value v."""
        if v < self.lo:
            self.lo2, self.lo, self.lo_at = self.lo, v, i
        elif v < self.lo2:
            self.lo2 = v
        if v > self.hi:
            self.hi2, self.hi, self.hi_at = self.hi, v, i
        elif v > self.hi2:
            self.hi2 = v

    def without(self, i):
        """The lowest and highest value of the group without member i: (inf, -inf) when it has
        no other member."""
        return (self.lo2 if i == self.lo_at else self.lo), (self.hi2 if i == self.hi_at else self.hi)


class CostAwareScorer(fp.Scorer):
    type = "cost-aware-scorer"
    description = ("among endpoints predicted to meet the request's SLO, prefers the cheapest "
                   "accelerator, then the lowest predicted TTFT; load composite without predictions")
    parameters = {
        "costLabel": "cost",
        "acceleratorLabel": "accelerator",
        "acceleratorCosts": {},
        "defaultCost": None,
        "sloBufferFactor": 1.0,
        "kvCacheWeight": 1.0,
        "queueWeight": 1.0,
        "prefixWeight": 1.0,
    }
    reads = [
        "request",
        "endpoints.labels",
        "endpoints.predictions",
        "endpoints.states.min_running_tpot_slo_ms",
        "endpoints.states.kv_cache_usage",
        "endpoints.states.waiting",
        "endpoints.states.dispatched_since_scrape",
        "endpoints.states.prefix_match",
    ]

    def __init__(self):
        self._bad_labels = set()

    def configure(self, params):
        costs = {}
        for name, cost in params["acceleratorCosts"].items():
            if isinstance(cost, bool) or not isinstance(cost, (int, float)) or \
                    not math.isfinite(cost) or cost < 0:
                raise ValueError(f'parameter "acceleratorCosts": the cost of "{name}" must be a '
                                 f"number >= 0, got {cost!r}")
            costs[name] = float(cost)
        default = params["defaultCost"]
        if default is not None:
            if isinstance(default, bool) or not isinstance(default, (int, float)):
                raise ValueError(f'parameter "defaultCost" must be a number or null, got {default!r}')
            fp.check_range("defaultCost", default, 0, 1e12)
        fp.check_range_open_low("sloBufferFactor", params["sloBufferFactor"], 0, 10)
        weights = fp.CompositeWeights(params["kvCacheWeight"], params["queueWeight"],
                                      params["prefixWeight"])
        weights.validate()
        # Validated: swap everything in at once (a rejected Configure leaves all as it was).
        self._cost_label, self._acc_label = params["costLabel"], params["acceleratorLabel"]
        self._acc_costs = costs
        self._default_cost = math.inf if default is None else float(default)
        self._buffer = params["sloBufferFactor"]
        self._weights = weights

    def cost_of(self, labels):
        """The endpoint's cost per hour from its labels; +inf (last) when unknown."""
        if labels:
            if self._cost_label:
                raw = labels.get(self._cost_label)
                if raw is not None:
                    try:
                        cost = float(raw)
                    except ValueError:
                        cost = -1.0
                    if 0 <= cost < math.inf:
                        return cost
                    self._bad_label(self._cost_label, raw)
            if self._acc_label:
                cost = self._acc_costs.get(labels.get(self._acc_label))
                if cost is not None:
                    return cost
        return self._default_cost

    def _bad_label(self, label, value):
        if (label, value) not in self._bad_labels and len(self._bad_labels) < 100:
            self._bad_labels.add((label, value))
            fp.logger.warn("endpoint cost label is not a number >= 0; using the accelerator or "
                           "default cost", label=label, value=value)

    def _stands(self, r, eps):
        """Where each endpoint of eps stands for request r: (MEETS, its predicted TTFT),
        (MISSES, its deficit) or (UNPREDICTED, 0), in order."""
        slo_ttft, slo_tpot, streaming = r.slo.ttft_ms, r.slo.tpot_ms, r.streaming
        has_slo = slo_ttft > 0 or slo_tpot > 0  # r.slo.any()
        buffer = self._buffer
        out = []
        add = out.append
        inf = math.inf
        for e in eps:
            valid, ttft, tpot, _, _ = e.prediction
            if not (valid and 0 <= ttft < inf and 0 <= tpot < inf):  # Prediction.usable()
                add(_UNPREDICTED)
                continue
            if not has_slo:  # every predicted endpoint qualifies
                add((MEETS, ttft))
                continue
            # How far the prediction misses each objective, relative to the objective (0: met).
            # As heuristics.HeadroomOf: TPOT counts for streaming requests only, against the tighter of
            # the request's and the endpoint's tightest running objective, times sloBufferFactor.
            deficit = 0.0
            if slo_ttft > 0 and ttft > slo_ttft:
                deficit += (ttft - slo_ttft) / slo_ttft
            if streaming:
                running = e.state.min_running_tpot_slo_ms  # 0: none (fp.effective_tpot_slo)
                if running <= 0:
                    tpot_slo = slo_tpot * buffer
                elif slo_tpot <= 0:
                    tpot_slo = running * buffer
                else:
                    tpot_slo = (running if running < slo_tpot else slo_tpot) * buffer
                if tpot_slo > 0 and tpot > tpot_slo:
                    deficit += (tpot - tpot_slo) / tpot_slo
            add((MISSES, deficit) if deficit > 0 else (MEETS, ttft))
        return out

    def score(self, cycle):
        eps = cycle.endpoints
        meets, misses = [], []  # indices; (index, deficit) pairs
        for i, (kind, v) in enumerate(self._stands(cycle.request, eps)):
            if kind == MEETS:
                meets.append(i)
            elif kind == MISSES:
                misses.append((i, v))
        if not meets and not misses:  # no endpoint has a prediction
            return fp.composite_scores(cycle, self._weights)
        scores = [0.0] * len(eps)
        if meets:
            self._rank_meeting(eps, meets, scores)
        if misses:
            self._rank_missing(misses, scores)
        return scores

    def score_after(self, cycle, scores):
        """Endpoint i's score with one more request like the cycle's placed on i
        (fp.place_on(copy, i, 1)) and every other endpoint as it is: what scoring that copy gives
        i, in one pass over the endpoints instead of a scoring per endpoint. A placement moves i's
        prediction to its after-prediction and lengthens its queue; the others' figures stay, so
        each tier's and group's bounds without i, added to i as placed, give i's score."""
        eps, r = cycle.endpoints, cycle.request
        stands, cost_of = self._stands, self.cost_of
        now = stands(r, eps)
        tiers, missing, predicted = {}, _Bounds(), 0
        for i, (kind, v) in enumerate(now):
            if kind == MEETS:
                cost = cost_of(eps[i].labels)
                tier = tiers.get(cost)
                if tier is None:
                    tiers[cost] = tier = _Bounds()
                tier.add(i, v)
            elif kind == MISSES:
                missing.add(i, v)
            predicted += kind != UNPREDICTED
        tier_costs = sorted(tiers)
        queues = _Bounds()  # the composite's queues, should i's placement leave nothing predicted
        for i, e in enumerate(eps):
            queues.add(i, fp.fresh_waiting(e.state))
        after = [0.0] * len(eps)
        placed = fp.with_own_endpoints(cycle)
        for i, e in enumerate(eps):
            fp.place_on(placed, i, 1)
            p = placed.endpoints[i]
            placed.endpoints[i] = e
            kind, v = stands(r, (p,))[0]
            if kind == MEETS:
                after[i] = self._meeting_after(i, v, cost_of(p.labels), tiers, tier_costs)
            elif kind == MISSES:
                lo, hi = missing.without(i)
                lo, hi = min(lo, v), max(hi, v)
                n = (v - lo) / (hi - lo) if hi - lo > EPS else 0.0
                after[i] = MISS_CEIL - (MISS_CEIL - MISS_FLOOR) * n
            elif predicted - (now[i][0] != UNPREDICTED) == 0:  # nothing predicted: the composite
                after[i] = self._composite_after(p, queues.without(i)[1], self._weights)
        return after

    @staticmethod
    def _meeting_after(i, ttft, cost, tiers, tier_costs):
        """Endpoint i's score in the meeting group with its predicted TTFT as placed and every
        other member as it is (_rank_meeting on that group). tiers are the group's cost tiers
        before the placement, tier_costs their costs in ascending order. A placement leaves the
        labels, so i's cost tier is the one it had; it is new only if i did not meet before and
        no other endpoint of its cost meets."""
        count = len(tier_costs) + (cost not in tiers)
        band = (1 - MEETS_FLOOR) / count
        top = 1 - bisect.bisect_left(tier_costs, cost) * band  # below every cheaper tier
        lo = hi = ttft
        same = tiers.get(cost)
        if same is not None:
            lo, hi = same.without(i)
            lo, hi = min(lo, ttft), max(hi, ttft)
        step = TIER_SPAN * band / (hi - lo) if hi - lo > EPS else 0.0
        return top - step * (ttft - lo)

    @staticmethod
    def _composite_after(p, max_others, weights):
        """The composite score (fp.composite_scores) of endpoint p when the longest fresh queue
        among the others is max_others: p's score beside one endpoint with that queue."""
        eps = [p]
        if max_others > -math.inf:
            eps.append(fp.Endpoint(state=fp.EndpointState(waiting=max_others)))
        return fp.composite_scores(fp.Cycle(endpoints=eps), weights)[0]

    def _rank_meeting(self, eps, group, scores):
        """Cost tiers, cheapest first, each with a band of (MEETS_FLOOR, 1]; inside a tier the
        lowest predicted TTFT scores highest."""
        tiers = {}
        cost_of = self.cost_of
        for i in group:
            e = eps[i]
            cost = cost_of(e.labels)
            tier = tiers.get(cost)
            if tier is None:
                tiers[cost] = tier = []
            tier.append((i, e.prediction.ttft_ms))
        band = (1 - MEETS_FLOOR) / len(tiers)
        for t, cost in enumerate(sorted(tiers)):
            members = tiers[cost]
            top = 1 - t * band
            lo = min(m[1] for m in members)
            hi = max(m[1] for m in members)
            step = TIER_SPAN * band / (hi - lo) if hi - lo > EPS else 0.0
            for i, ttft in members:
                scores[i] = top - step * (ttft - lo)

    @staticmethod
    def _rank_missing(misses, scores):
        """The smallest deficit scores MISS_CEIL, the largest MISS_FLOOR, linear in between."""
        lo = min(d for _, d in misses)
        hi = max(d for _, d in misses)
        for i, d in misses:
            n = (d - lo) / (hi - lo) if hi - lo > EPS else 0.0
            scores[i] = MISS_CEIL - (MISS_CEIL - MISS_FLOOR) * n


def main():
    version = (HERE / "VERSION").read_text().strip()
    fp.serve(CostAwareScorer(), version=version)


if __name__ == "__main__":
    main()
