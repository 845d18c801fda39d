// Rounds (Go: round.go and roundrun.go, with the same arithmetic): what a placement does to a
// cycle, and how the kit answers a round's cycles — a scorer's own after-scores (afterScores) and a
// picker's batch placed in order (pickRound). The stage services (server.ts) call both; a stage
// calls placeOn itself when it works out its own after-scores (Scorer.scoreAfter).

import { type Answer, type Cycle, Hop, hopOn, type Scorer } from "./types";

/**
 * inRound reports whether the cycle is in a round (a Round of size 1 or more): the host wants its
 * after-predictions and after-scores, and a picker's round is placed in order. A round of one is a
 * request the host decides after an earlier round whose placements it accounts for; a cycle without
 * a round, or with size 0, is decided alone.
 */
export function inRound(c: Cycle): boolean {
  return (c.round?.size ?? 0) >= 1;
}

/** roundHalfAway rounds x to the nearest integer, halves away from zero, as Go's math.Round. */
export function roundHalfAway(x: number): number {
  const a = Math.abs(x);
  let r = Math.floor(a);
  if (a - r >= 0.5) r += 1; // exact: a double minus its floor loses nothing
  return x < 0 ? -r : r;
}

/**
 * uncachedTokens returns the part of the request's prompt that endpoint e is not believed to
 * cache: the prefill work the request brings there (Go: Cycle.UncachedTokens). A NaN prefix
 * match counts as nothing cached; a decode hop brings none, its prompt arriving as KV.
 */
export function uncachedTokens(c: Cycle, e: number): number {
  if (hopOn(c.request, c.endpoints[e]!.id) === Hop.Decode) return 0; // its prompt arrives as KV
  const m = c.endpoints[e]!.state.prefixMatch;
  const match = Number.isNaN(m) ? 0 : Math.min(Math.max(m, 0), 1);
  return roundHalfAway(c.request.inputTokens * (1 - match));
}

/**
 * placeOn changes endpoint e of c as the router's in-flight ledger would after n more requests
 * like c's request had been dispatched there (Go: sdk.PlaceOn): n more requests in flight and
 * dispatched since the scrape, n times its uncached prompt tokens in prefill (uncachedTokens), and
 * its prediction moved n times by what one placement does (ttftAfterMs − ttftMs where ttftAfterMs
 * > 0; tpotAfterMs − tpotMs where both are > 0). The prefix match, the engine gauges (waiting,
 * running, KV usage), the prediction's validity and its spreads (how well the producer has been
 * predicting there, which a placement does not change) stay. n ≤ 0 changes nothing. It replaces the
 * endpoint object at e (the old one is left as it was), so a copy of c with its own endpoints
 * array (withOwnEndpoints) keeps c intact.
 */
export function placeOn(c: Cycle, e: number, n: number): void {
  if (n <= 0) return;
  const ep = c.endpoints[e]!;
  const s = ep.state;
  const prediction = { ...ep.prediction };
  const ttftAfter = prediction.ttftAfterMs ?? 0;
  if (ttftAfter > 0) {
    const d = ttftAfter - prediction.ttftMs;
    prediction.ttftMs += n * d;
    prediction.ttftAfterMs = ttftAfter + n * d;
  }
  const tpotAfter = prediction.tpotAfterMs ?? 0;
  if (tpotAfter > 0 && prediction.tpotMs > 0) {
    const d = tpotAfter - prediction.tpotMs;
    prediction.tpotMs += n * d;
    prediction.tpotAfterMs = tpotAfter + n * d;
  }
  c.endpoints[e] = {
    ...ep,
    state: {
      ...s,
      inflightRequests: s.inflightRequests + n,
      dispatchedSinceScrape: s.dispatchedSinceScrape + n,
      prefillTokensInFlight: s.prefillTokensInFlight + n * uncachedTokens(c, e),
    },
    prediction,
  };
}

/** withOwnEndpoints returns a copy of c with its own endpoints array (the endpoints are shared), which placeOn may change. */
export function withOwnEndpoints(c: Cycle): Cycle {
  return { ...c, endpoints: [...c.endpoints] };
}

function isPromise<T>(v: Answer<T>): v is Promise<T> {
  return typeof (v as Promise<T> | undefined)?.then === "function";
}

/** checkAfter throws unless after holds one number per endpoint of c (as checkScores, in the Go SDK's words). */
function checkAfter(c: Cycle, after: unknown): number[] {
  const n = c.endpoints.length;
  if (!Array.isArray(after)) throw new Error(`scoreAfter must return an array of numbers, got ${typeof after}`);
  if (after.length !== n) throw new Error(`scorer returned ${after.length} after-scores for ${n} endpoints`);
  for (const x of after) if (typeof x !== "number") throw new Error(`scorer returned a ${typeof x} among its after-scores`);
  return after as number[];
}

/**
 * afterScores returns scorer s's after-scores for c: for a cycle in a round, when s says them
 * (s.scoreAfter(c, scores), `scores` being s's own scores for c), each endpoint's score had one
 * more request like c's been placed there first, on the scale of `scores` (see Scorer.scoreAfter);
 * undefined for any other cycle and for a scorer without scoreAfter (Go: sdk.AfterScores). The kit
 * does not work them out by scoring c again with an endpoint placed on: a scorer that normalises
 * over the candidates would renormalise, and a placement would move every endpoint's score, which
 * one after-score per endpoint cannot say. Without after-scores the host re-decides the round's
 * collisions itself. Throws when the list has another length than the endpoints.
 */
export function afterScores(s: Scorer, c: Cycle, scores: number[]): Answer<number[] | undefined> {
  if (!inRound(c) || s.scoreAfter === undefined) return undefined;
  const own = s.scoreAfter(c, scores);
  return isPromise(own) ? own.then((v) => checkAfter(c, v)) : checkAfter(c, own);
}

/**
 * pickRound answers the cycles of a picker's batch in order through pick, which calls the picker
 * for cycle i with the cycle and scores given and returns (or resolves to) the order it gave, or
 * undefined when the cycle failed; an undefined cycle is one that did not decode, which pick
 * answers with its error (Go: sdk.PickRound). Consecutive cycles of a round (inRound; a round
 * starts at position 0, or where the positions or sizes stop following on) are placed as the
 * round's contract says: cycle k is given a copy of itself on which every endpoint that n earlier
 * cycles of its round took as their first choice is moved by placeOn(copy, e, n), with its score
 * lowered by n × (score − after) (after absent or short: the scores do not move). The score is not
 * clamped: after-scores are on the scale of the cycle's scores, so an endpoint pushed past today's
 * worst scores below them, and below 0 (a picker needing weights ≥ 0 sees to that itself).
 * Endpoints are told apart by id, which the host sends to every cycle in a round. Returns a
 * promise once pick has answered with one.
 */
export function pickRound(
  cycles: readonly (Cycle | undefined)[],
  scores: readonly (number[] | undefined)[],
  after: readonly (number[] | undefined)[],
  pick: (i: number, c: Cycle | undefined, scores: number[] | undefined) => Answer<number[] | undefined>,
): void | Promise<void> {
  let placed: Map<string, number> | undefined; // the round's first choices so far, by endpoint id
  let prevPos = 0;
  let prevSize = 0;
  // step picks cycle i; it returns what to record once the order is known.
  const step = (i: number): { c: Cycle | undefined; counted: Map<string, number> | undefined; order: Answer<number[] | undefined> } => {
    const c = cycles[i];
    if (c === undefined || !inRound(c)) {
      placed = undefined;
      prevPos = prevSize = 0;
      return { c, counted: undefined, order: pick(i, c, scores[i]) };
    }
    const r = c.round!;
    if (r.position === 0 || r.position !== prevPos + 1 || r.size !== prevSize || placed === undefined) placed = new Map();
    prevPos = r.position;
    prevSize = r.size;
    const [view, s] = placedView(c, scores[i], after[i], placed);
    return { c, counted: placed, order: pick(i, view, s) };
  };
  const record = (c: Cycle | undefined, counted: Map<string, number> | undefined, order: number[] | undefined): void => {
    if (c === undefined || counted === undefined) return;
    const first = firstChoice(order, c.endpoints.length);
    if (first === undefined) return;
    const id = c.endpoints[first]!.id;
    counted.set(id, (counted.get(id) ?? 0) + 1);
  };
  for (let i = 0; i < cycles.length; i++) {
    const { c, counted, order } = step(i);
    if (isPromise(order)) {
      return (async () => {
        record(c, counted, await order);
        for (let k = i + 1; k < cycles.length; k++) {
          const next = step(k);
          record(next.c, next.counted, await next.order);
        }
      })();
    }
    record(c, counted, order);
  }
}

/** firstChoice returns the order's first index when every index is an integer in [0, n) (an order the host takes), else undefined. */
function firstChoice(order: unknown, n: number): number | undefined {
  if (!Array.isArray(order) || order.length === 0) return undefined;
  for (const k of order) if (!Number.isInteger(k) || k < 0 || k >= n) return undefined;
  return order[0] as number;
}

/** placedView returns c and its scores as they are after the placements counted in placed: c itself when nothing of the round was placed on its endpoints, else a copy. */
function placedView(
  c: Cycle,
  scores: number[] | undefined,
  after: number[] | undefined,
  placed: Map<string, number>,
): [Cycle, number[] | undefined] {
  let view: Cycle | undefined;
  let moved: number[] | undefined;
  if (placed.size > 0) {
    for (let e = 0; e < c.endpoints.length; e++) {
      const n = placed.get(c.endpoints[e]!.id) ?? 0;
      if (n === 0) continue;
      if (view === undefined) {
        view = withOwnEndpoints(c);
        moved = scores && [...scores];
      }
      placeOn(view, e, n);
      if (moved !== undefined && after !== undefined && e < moved.length && e < after.length) {
        moved[e] = moved[e]! - n * (moved[e]! - after[e]!);
      }
    }
  }
  if (view === undefined) return [c, scores];
  return [view, moved];
}
