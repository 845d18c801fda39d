"""Heuristics shared with the Go stages (mirrors plugins/sdk/heuristics.go and headroom.go), so
a Python stage falls back, and reads an SLO, exactly as the Go ones do."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .cycle import Cycle, Endpoint, EndpointState, Request
from .params import check_range
from .rounds import place_on, with_own_endpoints

__all__ = ["CompositeWeights", "composite_scores", "composite_scores_after", "fresh_waiting",
           "Headroom", "headroom_of", "effective_tpot_slo"]


@dataclass(slots=True)
class CompositeWeights:
    """The weights of the three load signals of composite_scores (llm-d's fallback: 1, 1, 1)."""
    kv_cache: float = 1.0
    queue: float = 1.0
    prefix: float = 1.0

    def validate(self, names=("kvCacheWeight", "queueWeight", "prefixWeight")) -> None:
        """Raises ValueError unless every weight is in [0, 100] and one is positive."""
        for name, v in zip(names, (self.kv_cache, self.queue, self.prefix)):
            check_range(name, v, 0, 100)
        if self.kv_cache + self.queue + self.prefix == 0:
            raise ValueError(f"at least one of {', '.join(names)} must be positive")


def _clamp01(v: float) -> float:
    if v != v or v < 0:
        return 0.0
    return 1.0 if v > 1 else v


def fresh_waiting(s: EndpointState) -> int:
    """The scraped waiting-queue gauge plus the requests dispatched since that scrape and not yet
    finished (heuristics.FreshWaiting): load the gauge does not show yet. Unlike the gauge, which
    stands still between two scrapes, it moves with every dispatch."""
    return s.waiting + s.dispatched_since_scrape


def composite_scores(cycle: Cycle, w: CompositeWeights = CompositeWeights()) -> list[float]:
    """llm-d's load fallback, per endpoint:
    (wkv·(1 − kv) + wq·(maxQ − q)/maxQ + wp·prefix) / (wkv + wq + wp), q the waiting queue plus
    the dispatches since its scrape (fresh_waiting), so a burst between two scrapes spreads; the
    queue term is 1 when every queue is empty."""
    eps = cycle.endpoints
    total = w.kv_cache + w.queue + w.prefix
    if total <= 0:
        return [0.0] * len(eps)
    max_q = max((fresh_waiting(e.state) for e in eps), default=0)
    max_q = max(max_q, 0)
    out = []
    for e in eps:
        s = e.state
        q = (max_q - fresh_waiting(s)) / max_q if max_q > 0 else 1.0
        out.append((w.kv_cache * _clamp01(1 - s.kv_cache_usage) + w.queue * q
                    + w.prefix * _clamp01(s.prefix_match)) / total)
    return out


def composite_scores_after(cycle: Cycle, w: CompositeWeights = CompositeWeights()) -> list[float]:
    """composite_scores' after-scores for a cycle in a round (Scorer.score_after): endpoint i's
    score had one more request like the cycle's been placed there (place_on(copy, i, 1)), on the
    scale of composite_scores(cycle). The cycle's longest queue maxQ is held; i's queue term
    drops by its queue's growth over maxQ, or over one request when every queue is empty (their
    term 1 then drops to 0). KV usage and prefix match stay, as a placement leaves them. A queue
    term may so fall below 0: a placement on the longest queue scores below every endpoint."""
    eps = cycle.endpoints
    total = w.kv_cache + w.queue + w.prefix
    if total <= 0:
        return [0.0] * len(eps)
    max_q = max(max((fresh_waiting(e.state) for e in eps), default=0), 0)
    scale = max_q if max_q > 0 else 1
    now = composite_scores(cycle, w)
    placed = with_own_endpoints(cycle)
    out = []
    for i, e in enumerate(eps):
        place_on(placed, i, 1)
        grown = fresh_waiting(placed.endpoints[i].state) - fresh_waiting(e.state)
        placed.endpoints[i] = e
        out.append(now[i] - w.queue * grown / scale / total)
    return out


@dataclass(slots=True)
class Headroom:
    """How far an endpoint's prediction sits inside a request's SLOs, in ms; +inf where the
    request has no objective."""
    ttft_ms: float = math.inf
    tpot_ms: float = math.inf

    def meets(self) -> bool:
        return self.ttft_ms >= 0 and self.tpot_ms >= 0


def effective_tpot_slo(request: float, running: float) -> float:
    """The tighter of two TPOT objectives, where 0 means none."""
    if request <= 0:
        return running
    if running <= 0:
        return request
    return min(request, running)


def headroom_of(r: Request, e: Endpoint, buffer_factor: float = 1.0) -> Headroom | None:
    """The endpoint's headroom for the request, None without a valid prediction (headroom.go).
    TTFT: TTFT SLO − predicted TTFT. TPOT, for streaming requests only: min(TPOT SLO, tightest TPOT
    SLO running on the endpoint) × buffer_factor − predicted TPOT, so that a new request is not
    placed where it would break a running request's objective. A TPOT the producer does not know
    yet (0) gives +inf TPOT headroom, as if there were no TPOT objective: SLO − 0 would pass for the
    most headroom there is."""
    p = e.prediction
    if not p.valid:
        return None
    h = Headroom()
    if r.slo.ttft_ms > 0:
        h.ttft_ms = r.slo.ttft_ms - p.ttft_ms
    if r.streaming and p.tpot_ms > 0:
        slo = effective_tpot_slo(r.slo.tpot_ms, e.state.min_running_tpot_slo_ms)
        if slo > 0:
            h.tpot_ms = slo * buffer_factor - p.tpot_ms
    return h
    if r.streaming and r.slo.tpot_ms > 0:
        h.tpot_ms = r.slo.tpot_ms * buffer_factor - p.tpot_ms
    running = e.state.min_running_tpot_slo_ms
    if running > 0:
        after = p.tpot_after_ms if p.tpot_after_ms > 0 else p.tpot_ms
        h.tpot_ms = min(h.tpot_ms, running * buffer_factor - after)
    return h
