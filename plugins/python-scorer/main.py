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


class _Frame:
    """What a cycle's scores are normalised by: the meeting group's cost tiers, each with the
    lowest and highest predicted TTFT of its members, and the missing group's lowest and highest
    deficit. score places an endpoint in it; a round's after-scores hold it as the cycle has it
    (Scorer.score_after), so a placement moves the placed endpoint's score alone."""
    __slots__ = ("tiers", "costs", "band", "miss")

    def __init__(self, stands, costs):
        """The frame of a cycle whose endpoints stand as stands says (CostAwareScorer._stands),
        costs being their costs."""
        tiers, miss = {}, None
        for (kind, v), cost in zip(stands, costs):
            if kind == MEETS:
                t = tiers.get(cost)
                tiers[cost] = (v, v) if t is None else (min(t[0], v), max(t[1], v))
            elif kind == MISSES:
                miss = (v, v) if miss is None else (min(miss[0], v), max(miss[1], v))
        self.tiers, self.miss = tiers, miss
        self.costs = sorted(tiers)
        self.band = (1 - MEETS_FLOOR) / max(len(tiers), 1)

    def meeting(self, ttft, cost):
        """The score of an endpoint of that cost that meets the SLO at that predicted TTFT: its
        tier's band (cheapest first, each (1 − MEETS_FLOOR) / tiers wide) down by TIER_SPAN of it
        per tier spread (highest − lowest TTFT) above the tier's fastest. A tier whose members
        predict one TTFT spreads over that TTFT (1 ms at least): a TTFT twice the tier's is a
        span down. A cost without a tier here takes the band after the cheaper tiers, ttft as its
        fastest."""
        top = 1 - bisect.bisect_left(self.costs, cost) * self.band
        lo, hi = self.tiers.get(cost, (ttft, ttft))
        spread = hi - lo if hi - lo > EPS else max(lo, 1.0)
        return top - TIER_SPAN * self.band * (ttft - lo) / spread

    def missing(self, deficit):
        """The score of an endpoint that misses the SLO by deficit: MISS_CEIL at the group's
        smallest deficit, down to MISS_FLOOR at its largest, linear; without spread a deficit of 1
        (one whole objective) spans the range. Without a group, deficit is its smallest."""
        lo, hi = self.miss or (deficit, deficit)
        spread = hi - lo if hi - lo > EPS else 1.0
        return MISS_CEIL - (MISS_CEIL - MISS_FLOOR) * (deficit - lo) / spread

    def score(self, stand, cost):
        """The score of an endpoint standing as stand, of that cost."""
        kind, v = stand
        if kind == MEETS:
            return self.meeting(v, cost)
        if kind == MISSES:
            return self.missing(v)
        return 0.0


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
            valid, ttft, tpot = e.prediction[:3]  # by position: the first three fields stay first
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

    def _frame(self, cycle):
        """cycle's endpoints' stands, their costs and the frame they make; None when no endpoint
        has a usable prediction (the composite fallback scores the cycle)."""
        stands = self._stands(cycle.request, cycle.endpoints)
        if all(kind == UNPREDICTED for kind, _ in stands):
            return None
        cost_of = self.cost_of
        costs = [cost_of(e.labels) if kind == MEETS else math.inf
                 for e, (kind, _) in zip(cycle.endpoints, stands)]
        return stands, costs, _Frame(stands, costs)

    def score(self, cycle):
        framed = self._frame(cycle)
        if framed is None:  # no endpoint has a prediction
            return fp.composite_scores(cycle, self._weights)
        stands, costs, frame = framed
        return [frame.score(st, cost) for st, cost in zip(stands, costs)]

    def score_after(self, cycle, scores):
        """Endpoint i's score had one more request like the cycle's been placed on i
        (fp.place_on(copy, i, 1)), on the scale of the cycle's scores: i as placed, scored in
        the cycle's frame (its tiers, their TTFT bounds, the missing group's deficit bounds, or
        the composite's longest queue) held as it is, in one pass. A placement moves i's
        prediction to its after-prediction and lengthens its queue."""
        framed = self._frame(cycle)
        if framed is None:
            return fp.composite_scores_after(cycle, self._weights)
        _, _, frame = framed
        eps, r = cycle.endpoints, cycle.request
        stands, cost_of = self._stands, self.cost_of
        after = [0.0] * len(eps)
        placed = fp.with_own_endpoints(cycle)
        for i, e in enumerate(eps):
            fp.place_on(placed, i, 1)
            p = placed.endpoints[i]
            placed.endpoints[i] = e
            stand = stands(r, (p,))[0]
            after[i] = frame.score(stand, cost_of(p.labels) if stand[0] == MEETS else math.inf)
        return after


def main():
    version = (HERE / "VERSION").read_text().strip()
    fp.serve(CostAwareScorer(), version=version)


if __name__ == "__main__":
    main()
