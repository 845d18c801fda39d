"""Rounds: what a placement does to a cycle, and how the kit answers a round's cycles (mirrors
plugins/sdk/round.go and roundrun.go, with the same arithmetic).

A scorer's cycle in a round gets its after-scores, when the scorer says them, from after_scores; a
picker's batch is placed in order by pick_round. Both are called by the kit's handlers; a stage
calls place_on itself when it works out its own after-scores (Scorer.score_after).
"""

from __future__ import annotations

import operator
from typing import Callable, Optional, Sequence

from .cycle import Cycle
from .status import StatusError

__all__ = ["place_on", "with_own_endpoints", "after_scores", "pick_round"]


def place_on(cycle: Cycle, e: int, n: int) -> None:
    """Changes endpoint e of cycle (in place: the endpoint tuple at index e is replaced) as the
    router's in-flight ledger would after n more requests like cycle's request had been dispatched
    there: n more requests in flight and dispatched since the scrape, n times its uncached prompt
    tokens in prefill (Cycle.uncached_tokens), and its prediction moved n times by what one
    placement does (ttft_after_ms − ttft_ms where ttft_after_ms > 0; tpot_after_ms − tpot_ms where
    both are > 0). The prefix match, the engine gauges (waiting, running, KV usage), the
    prediction's validity and its spreads (how well the producer has been predicting there, which
    a placement does not change) stay as they are (sdk.PlaceOn). n <= 0 changes nothing. Copy the
    cycle first (with_own_endpoints) to keep the original."""
    if n <= 0:
        return
    ep = cycle.endpoints[e]
    s = ep.state
    state = s._replace(inflight_requests=s.inflight_requests + n,
                       dispatched_since_scrape=s.dispatched_since_scrape + n,
                       prefill_tokens_in_flight=s.prefill_tokens_in_flight + n * cycle.uncached_tokens(e))
    p = ep.prediction
    ttft, tpot, ttft_after, tpot_after = p.ttft_ms, p.tpot_ms, p.ttft_after_ms, p.tpot_after_ms
    if ttft_after > 0:
        d = ttft_after - ttft
        ttft += n * d
        ttft_after += n * d
    if tpot_after > 0 and tpot > 0:
        d = tpot_after - tpot
        tpot += n * d
        tpot_after += n * d
    pred = p._replace(ttft_ms=ttft, tpot_ms=tpot, ttft_after_ms=ttft_after, tpot_after_ms=tpot_after)
    cycle.endpoints[e] = ep._replace(state=state, prediction=pred)


def with_own_endpoints(cycle: Cycle) -> Cycle:
    """A copy of cycle with its own endpoint list (the endpoints themselves are read-only tuples,
    shared), which place_on may change without touching cycle."""
    return Cycle(cycle.request, list(cycle.endpoints), cycle.now, cycle.seed, cycle.excluded,
                 cycle.round)


def after_scores(scorer, cycle: Cycle, scores: Sequence[float]) -> Optional[list]:
    """scorer's after-scores for cycle: for a cycle in a round, when scorer says them
    (score_after(cycle, scores), scores being its own scores for cycle), each endpoint's score had
    one more request like cycle's been placed there first, on the scale of scores (Scorer); None
    for any other cycle and for a scorer without score_after (sdk.AfterScores). The kit does not
    work them out by scoring the cycle again with an endpoint placed on: a scorer that normalises
    over the candidates would renormalise, and a placement would move every endpoint's score,
    which one after-score per endpoint cannot say. Without after-scores the host re-decides the
    round's collisions itself. Raises StatusError when the list has another length than the
    endpoints."""
    if not cycle.in_round():
        return None
    own = getattr(scorer, "score_after", None)
    if own is None:
        return None
    after = list(own(cycle, scores))
    n = len(cycle.endpoints)
    if len(after) != n:
        raise StatusError(f"scorer returned {len(after)} after-scores for {n} endpoints")
    return after


def _first_choice(order, n: int) -> Optional[int]:
    """The order's first index when every index is an int in [0, n) (an order the host takes),
    else None: an order the host rejects places nothing."""
    if not order:
        return None
    try:
        idx = [operator.index(k) for k in order]
    except TypeError:
        return None
    if any(k < 0 or k >= n for k in idx):
        return None
    return idx[0]


def pick_round(cycles: Sequence[Optional[Cycle]], scores: Sequence[Optional[Sequence[float]]],
               after: Sequence[Optional[Sequence[float]]],
               pick: Callable[[int, Optional[Cycle], Optional[Sequence[float]]], Optional[Sequence[int]]]) -> None:
    """Answers the cycles of a picker's batch in order through pick, which calls the picker for
    cycle i with the cycle and scores given and returns the order it gave, or None when the cycle
    failed (a None cycle is one that did not decode: pick answers it with its error; scores or
    after shorter than cycles give None) (sdk.PickRound).

    Consecutive cycles of a round (Cycle.in_round; a round starts at position 0, or where the
    positions or sizes stop following on) are placed as the round's contract says: cycle k is
    given a copy of itself on which every endpoint that n earlier cycles of its round took as
    their first choice is moved by place_on(copy, e, n), with its score lowered by
    n × (score − after) (after absent or short: the scores do not move). The score is not
    clamped: after-scores are on the scale of the cycle's scores, so an endpoint pushed past
    today's worst scores below them, and below 0 (a picker needing weights >= 0 sees to that
    itself). Endpoints are told apart by id, which the host sends to every cycle in a round."""
    placed: Optional[dict] = None  # the round's first choices so far, by endpoint id
    prev_pos, prev_size = 0, 0

    def at(v, i):
        return v[i] if i < len(v) else None

    for i, c in enumerate(cycles):
        if c is None or not c.in_round():
            placed, prev_pos, prev_size = None, 0, 0
            pick(i, c, at(scores, i))
            continue
        r = c.round
        if r.position == 0 or r.position != prev_pos + 1 or r.size != prev_size or placed is None:
            placed = {}
        prev_pos, prev_size = r.position, r.size
        view, s = _placed_view(c, at(scores, i), at(after, i), placed)
        first = _first_choice(pick(i, view, s), len(c.endpoints))
        if first is not None:
            eid = c.endpoints[first].id
            placed[eid] = placed.get(eid, 0) + 1


def _placed_view(c: Cycle, scores, after, placed: dict):
    """c and its scores as they are after the placements counted in placed: c itself when nothing
    of the round was placed on its endpoints, else a copy."""
    if not placed:
        return c, scores
    view, moved = None, None
    for e, ep in enumerate(c.endpoints):
        n = placed.get(ep.id, 0)
        if n == 0:
            continue
        if view is None:
            view = with_own_endpoints(c)
            moved = None if scores is None else list(scores)
        place_on(view, e, n)
        if moved is not None and after is not None and e < len(moved) and e < len(after):
            moved[e] -= n * (moved[e] - after[e])
    if view is None:
        return c, scores
    return view, moved
