// Rounds: placeOn's arithmetic against the Go SDK's (plugins/sdk/round.go), the after-scores a
// scorer answers, and a picker placing a round's cycles in order (plugins/sdk/roundrun.go).

import { test } from "node:test";
import assert from "node:assert/strict";
import { cycleFromWire, cycleToProto, decodeCycleBatch, encodeCycleBatch } from "../src/convert";
import { info, pickHandler, scoreHandler } from "../src/server";
import {
  Code,
  Hop,
  Stage,
  StatusError,
  afterScores,
  placeOn,
  projectCycle,
  uncachedTokens,
  withOwnEndpoints,
  type Cycle,
  type Endpoint,
  type EndpointState,
  type Picker,
  type Prediction,
  type Scorer,
} from "../src/index";

const zeroState = (over: Partial<EndpointState> = {}): EndpointState => ({
  kvCacheUsage: 0, waiting: 0, running: 0, inflightRequests: 0, prefillTokensInFlight: 0,
  decodeTokensInFlight: 0, prefixMatch: 0, minRunningTpotSloMs: 0, metricsAgeMs: 0, lastOutputAgeMs: 0,
  dispatchedSinceScrape: 0, firstTokenRate: 0, runningTpotMs: 0, ...over,
});

const noPrediction: Prediction = { valid: false, ttftMs: 0, tpotMs: 0 };

function cycleOf(endpoints: Endpoint[], inputTokens = 0, round?: Cycle["round"], id = "r"): Cycle {
  return {
    request: {
      id, model: "", inputTokens, maxOutputTokens: 0, streaming: false, slo: { ttftMs: 0, tpotMs: 0 },
      priority: 0, sessionId: "", prefixBlockHashes: [], labels: {},
      disaggregation: { hop: Hop.Whole, decodeEndpoint: "", decodeTtftMs: 0, decodeTpotMs: 0 },
    },
    endpoints,
    now: new Date(0),
    seed: 0n,
    ...(round === undefined ? {} : { round }),
  };
}

/** one is a cycle of one endpoint "a" with the prefix match, state and prediction given. */
const one = (inputTokens: number, prefixMatch: number, state: Partial<EndpointState> = {}, prediction = noPrediction): Cycle =>
  cycleOf([{ id: "a", labels: {}, state: zeroState({ ...state, prefixMatch }), prediction }], inputTokens);

test("placeOn moves an endpoint as the Go SDK's PlaceOn does", () => {
  const p = (ttftMs: number, tpotMs: number, ttftAfterMs: number, tpotAfterMs: number): Prediction => ({
    valid: true, ttftMs, tpotMs, ttftAfterMs, tpotAfterMs,
  });
  // Each expected row is what sdk.PlaceOn leaves (checked against the Go SDK):
  // [uncached, inflight, dispatched, prefill, ttft, tpot, ttftAfter, tpotAfter].
  const tests: [string, Cycle, number, number[]][] = [
    // 1000 × (1 − 0.25) = 750 uncached; n = 2: inflight 3 + 2, dispatched 1 + 2, prefill
    // 100 + 2 × 750; TTFT moves 2 × (250 − 200) = 100, TPOT 2 × (22 − 20) = 4.
    ["two placements", one(1000, 0.25, { inflightRequests: 3, dispatchedSinceScrape: 1, prefillTokensInFlight: 100 },
      { ...p(200, 20, 250, 22), ttftSpread: 0.3, tpotSpread: 0.15 }), 2,
      [750, 5, 3, 1600, 300, 24, 350, 26]],
    // 5 × 0.5 = 2.5 rounds half away from zero to 3 (as Math.round would; Go's math.Round).
    ["a half rounds up", one(5, 0.5), 1, [3, 1, 1, 3, 0, 0, 0, 0]],
    // 1 × 0.5 = 0.5 rounds to 1; three placements bring 3 × 1 in prefill.
    ["a half of one token", one(1, 0.5), 3, [1, 3, 3, 3, 0, 0, 0, 0]],
    // 7 × (1 − 0.9) = 7 × 0.09999999999999998 = 0.6999999999999998, rounded 1.
    ["below a half of a float", one(7, 0.9), 1, [1, 1, 1, 1, 0, 0, 0, 0]],
    // A match above 1 counts as 1 (nothing uncached), below 0 as 0 (everything).
    ["match above 1", one(100, 1.5), 1, [0, 1, 1, 0, 0, 0, 0, 0]],
    ["match below 0", one(100, -0.5), 1, [100, 1, 1, 100, 0, 0, 0, 0]],
    // TTFT after below now moves it down: 100 + 3 × (90 − 100) = 70, after 90 − 30 = 60;
    // TPOT 0 (unknown) stays 0 and its after stays as it is.
    ["after below now, tpot unknown", one(10, 0, {}, p(100, 0, 90, 12)), 3, [10, 3, 3, 30, 70, 0, 60, 12]],
    // TTFT after 0 (not said): TTFT stays. n = 0 (or below) changes nothing at all.
    ["no placement", one(10, 0, {}, p(100, 10, 0, 12)), 0, [10, 0, 0, 0, 100, 10, 0, 12]],
    ["negative n", one(10, 0, {}, p(100, 10, 0, 12)), -1, [10, 0, 0, 0, 100, 10, 0, 12]],
    // In floats as Go computes them: d = 0.3 − 0.1 = 0.19999999999999998; 0.1 + 3d = 0.7,
    // 0.3 + 3d = 0.8999999999999999; TPOT 10 + 3 × 2 = 16, 12 + 6 = 18.
    ["float steps", one(10, 0, {}, p(0.1, 10, 0.3, 12)), 3, [10, 3, 3, 30, 0.7, 16, 0.8999999999999999, 18]],
  ];
  for (const [name, c, n, want] of tests) {
    const before = c.endpoints[0]!;
    const uncached = uncachedTokens(c, 0);
    placeOn(c, 0, n);
    const { state: s, prediction: pr } = c.endpoints[0]!;
    const got = [uncached, s.inflightRequests, s.dispatchedSinceScrape, s.prefillTokensInFlight, pr.ttftMs, pr.tpotMs, pr.ttftAfterMs ?? 0, pr.tpotAfterMs ?? 0];
    assert.deepEqual(got, want, name);
    // The gauges, the prefix match, the id, the validity and the spreads never move.
    assert.deepEqual([s.waiting, s.running, s.kvCacheUsage, s.prefixMatch, pr.valid, pr.ttftSpread, pr.tpotSpread, c.endpoints[0]!.id],
      [before.state.waiting, before.state.running, before.state.kvCacheUsage, before.state.prefixMatch, before.prediction.valid,
        before.prediction.ttftSpread, before.prediction.tpotSpread, before.id], name);
  }
});

test("a decode hop places no prefill: its prompt arrives as KV", () => {
  const c = one(100, 0);
  c.request.disaggregation = { hop: Hop.Decode, decodeEndpoint: "", decodeTtftMs: 0, decodeTpotMs: 0 };
  assert.equal(uncachedTokens(c, 0), 0);
  placeOn(c, 0, 2);
  assert.deepEqual([c.endpoints[0]!.state.inflightRequests, c.endpoints[0]!.state.prefillTokensInFlight], [2, 0]);
});

test("placeOn on a copy keeps the original", () => {
  const c = one(100, 0);
  const cp = withOwnEndpoints(c);
  placeOn(cp, 0, 2);
  assert.equal(c.endpoints[0]!.state.inflightRequests, 0);
  assert.equal(cp.endpoints[0]!.state.inflightRequests, 2);
});

/** two is a cycle on endpoints a and b at position pos of a round of size (0, 0: decided alone). */
const two = (pos: number, size: number, inflightA = 1, inflightB = 3, id = "r"): Cycle =>
  cycleOf(
    [
      { id: "a", labels: {}, state: zeroState({ inflightRequests: inflightA }), prediction: noPrediction },
      { id: "b", labels: {}, state: zeroState({ inflightRequests: inflightB }), prediction: noPrediction },
    ],
    0,
    size === 0 ? undefined : { position: pos, size },
    id,
  );

/** load scores 1 / (1 + requests in flight) and knows nothing of rounds. */
const load = (c: Cycle) => c.endpoints.map((e) => 1 / (1 + e.state.inflightRequests));

const batch = (...cs: Cycle[]) => decodeCycleBatch(encodeCycleBatch(cs));

test("a scorer in a round answers its own after-scores, and none without scoreAfter", async () => {
  const scorer = (over: Partial<Scorer> = {}): Scorer => ({ type: "load", description: "", score: load, ...over });
  const own = { scoreAfter: () => [0.1, 0.2] };
  const tests: [string, Scorer, Cycle, number[] | string][] = [
    // 1 and 3 in flight: scores 1/2 and 1/4. Without scoreAfter the kit says no after-scores, in
    // a round too: re-scoring would renormalise a scorer's scale.
    ["no scoreAfter, in a round", scorer(), two(1, 2), []],
    ["no scoreAfter, async score", scorer({ score: async (c) => load(c) }), two(1, 2), []],
    // No round (size 0) is a cycle decided alone: scoreAfter is not asked.
    ["alone: no after-scores", scorer(own), two(0, 0), []],
    // A round of one (position 0, size 1) is a round: the host needs its after-scores to account
    // for an earlier round's placements.
    ["a round of one: the scorer's own", scorer(own), two(0, 1), [0.1, 0.2]],
    ["the scorer's own", scorer({ scoreAfter: () => [0.1, 0.2] }), two(0, 2), [0.1, 0.2]],
    ["the scorer's own, async", scorer({ scoreAfter: async () => [0.1, 0.2] }), two(0, 2), [0.1, 0.2]],
    ["too few of its own", scorer({ scoreAfter: () => [0.1] }), two(0, 2), "scorer returned 1 after-scores for 2 endpoints"],
    ["its own failing", scorer({ scoreAfter: () => { throw new StatusError(Code.Unavailable, "no after-scores today"); } }), two(0, 2), "no after-scores today"],
  ];
  for (const [name, s, c, want] of tests) {
    const resp = await scoreHandler(s)(batch(c));
    const r = resp.results[0]!;
    if (typeof want === "string") {
      assert.equal(r.status?.message, want, name);
      continue;
    }
    assert.equal(r.status, undefined, name);
    assert.deepEqual(r.scores, [1 / 2, 1 / 4], name);
    assert.equal(r.scoresAfter.length, want.length, name);
    r.scoresAfter.forEach((v, i) => assert.ok(Math.abs(v - want[i]!) < 1e-12, `${name}: ${v} vs ${want[i]}`));
  }
});

test("a scorer without scoreAfter is scored once per cycle in a round and answers no scoresAfter", async () => {
  let calls = 0;
  const s: Scorer = { type: "load", description: "", score: (c) => (calls++, load(c)) };
  const resp = await scoreHandler(s)(batch(two(0, 3), two(1, 3), two(2, 3)));
  assert.deepEqual(resp.results.map((r) => r.scoresAfter.length), [0, 0, 0]);
  assert.equal(calls, 3, "one score call per cycle");
  assert.equal(afterScores(s, two(0, 2), [1 / 2, 1 / 4]), undefined);
});

/** maxScore orders the endpoints by score, highest first, the lower index first among equals. */
const maxScore: Picker = {
  type: "max-score",
  description: "",
  pick: (c, scores) => c.endpoints.map((_, i) => i).sort((a, b) => scores[b]! - scores[a]! || a - b),
};

/** leastLoad orders the endpoints by requests in flight, fewest first, ignoring the scores. */
const leastLoad: Picker = {
  type: "least-load",
  description: "",
  pick: (c) => c.endpoints.map((_, i) => i).sort((a, b) => c.endpoints[a]!.state.inflightRequests - c.endpoints[b]!.state.inflightRequests || a - b),
};

async function firstChoices(p: Picker, cycles: Cycle[], scores: number[][], after: number[][] = []): Promise<string> {
  const resp = await pickHandler(p)(decodeCycleBatch(encodeCycleBatch(cycles, scores, after), true));
  return resp.results.map((r, i) => (r.status !== undefined ? "!" : cycles[i]!.endpoints[r.order[0]!]!.id)).join("");
}

test("a round of 8 on 4 equal endpoints spreads 2-2-2-2, as one-at-a-time picks would", async () => {
  // A queue-like scorer: the Go queue-scorer's (maxQ − q) / (maxQ − minQ) on the fresh queue
  // (waiting + dispatched since the scrape), 1 when all queues are equal. Its after-scores hold
  // the frame: endpoint i's queue one longer, normalised by the cycle's min and max, one request
  // being the scale when they are equal. Summed as the host sums them (weight 1).
  const frame = (c: Cycle) => {
    const qs = c.endpoints.map((e) => e.state.waiting + e.state.dispatchedSinceScrape);
    const lo = Math.min(...qs);
    const hi = Math.max(...qs);
    return { qs, hi, equal: hi === lo, scale: hi > lo ? hi - lo : 1 };
  };
  const queue: Scorer = {
    type: "queue",
    description: "",
    score: (c) => {
      const { qs, hi, equal, scale } = frame(c);
      return qs.map((q) => (equal ? 1 : (hi - q) / scale));
    },
    scoreAfter: (c, scores) => scores.map((s) => s - 1 / frame(c).scale),
  };
  const four = (pos: number, size: number) =>
    cycleOf(["a", "b", "c", "d"].map((id) => ({ id, labels: {}, state: zeroState(), prediction: noPrediction })), 100,
      size === 0 ? undefined : { position: pos, size }, `r${pos}`);
  const cycles = Array.from({ length: 8 }, (_, k) => four(k, 8));
  const scores = cycles.map((c) => queue.score(c) as number[]);
  const after = cycles.map((c, k) => afterScores(queue, c, scores[k]!) as number[]);
  const got = await firstChoices(maxScore, cycles, scores, after);
  // One at a time: each request scored on the state the earlier ones left, then placed there.
  const state = four(0, 0);
  let want = "";
  for (let k = 0; k < 8; k++) {
    const e = (maxScore.pick(state, queue.score(state) as number[]) as number[])[0]!;
    want += state.endpoints[e]!.id;
    placeOn(state, e, 1);
  }
  // Queues all 0: scores 1, after-scores 0 (scale one request). a; a at 1 − 1 × (1 − 0) = 0, the
  // others 1: b; c; d; all at 0: a; a at 1 − 2 × 1 = −1 (unclamped) below the others' 0: b; c; d.
  // One at a time: queues 0 → a, then [1, 0, 0, 0] → b, … the same.
  assert.equal(got, "abcdabcd");
  assert.equal(got, want);
});

test("a picker places each round of a batch in order", async () => {
  const rounds = (...sizes: number[]) =>
    sizes.flatMap((size) => (size === 1 ? [two(0, 0, 0, 2)] : Array.from({ length: size }, (_, p) => two(p, size, 0, 2))));
  const rep = <T>(n: number, v: T): T[] => Array.from({ length: n }, () => v);
  const tests: [string, Picker, Cycle[], number[][], number[][], string][] = [
    // Scores 1 and 1, 0.5 after one more: a (first among equals); then a is 1 − 1 × 0.5 = 0.5
    // against b's 1: b; then 0.5 and 0.5: a; then a 1 − 2 × 0.5 = 0 against b 0.5: b.
    ["max-score on after-scores", maxScore, rounds(4), rep(4, [1, 1]), rep(4, [0.5, 0.5]), "abab"],
    // Scores 1 and 0, after-scores −0.5 and −1: a; then a is 1 − 1 × (1 + 0.5) = −0.5, not
    // clamped at 0, below b's 0: b (clamped, a would tie b at 0 and win as the first).
    ["a score below 0 ranks below 0", maxScore, rounds(2), rep(2, [1, 0]), rep(2, [-0.5, -1]), "ab"],
    // Without after-scores the scores do not move: a every time.
    ["max-score without after-scores", maxScore, rounds(4), rep(4, [1, 1]), [], "aaaa"],
    // 0 and 2 in flight: a (0); a (1 < 2); a (2 = 2, the lower index); b (3 > 2).
    ["least-load on the placed state", leastLoad, rounds(4), rep(4, [0, 0]), [], "aaab"],
    // Alone, each sees 0 and 2: a every time.
    ["alone", leastLoad, rounds(1, 1, 1, 1), rep(4, [0, 0]), [], "aaaa"],
    // Two rounds of two in one batch: the second starts again from the scraped state.
    ["two rounds", leastLoad, rounds(2, 2), rep(4, [0, 0]), [], "aaaa"],
    // Rounds of one, each at position 0: nothing of its round placed before it, so each is picked
    // on itself with its scores unmoved (1 and 1, the after-scores unused): a.
    ["rounds of one", maxScore, rep(3, two(0, 1, 0, 2)), rep(3, [1, 1]), rep(3, [0.5, 0.5]), "aaa"],
    // A round of two (a; a, 1 < 2), then a round of one starting again from the scraped state:
    // 0 and 2 in flight, a.
    ["a round of one after a round", leastLoad, [two(0, 2, 0, 2), two(1, 2, 0, 2), two(0, 1, 0, 2)], rep(3, [0, 0]), [], "aaa"],
    // A cycle without its score set fails alone.
    ["a missing score set", leastLoad, rounds(4), rep(3, [0, 0]), [], "aaa!"],
    // An async picker places the same.
    ["async", { ...leastLoad, pick: async (c, s) => leastLoad.pick(c, s) }, rounds(4), rep(4, [0, 0]), [], "aaab"],
  ];
  for (const [name, p, cycles, scores, after, want] of tests) {
    assert.equal(await firstChoices(p, cycles, scores, after), want, name);
  }
});

test("a failed pick places nothing", async () => {
  const failsSecond: Picker = {
    ...leastLoad,
    pick: (c, s) => {
      if (c.request.id === "fail") throw new Error("no");
      return leastLoad.pick(c, s);
    },
  };
  // a (0 < 1); the second fails; the third sees a with 1, b with 1: a, as if only one was placed.
  const cycles = [two(0, 3, 0, 1), two(1, 3, 0, 1, "fail"), two(2, 3, 0, 1)];
  assert.equal(await firstChoices(failsSecond, cycles, [[0, 0], [0, 0], [0, 0]]), "a!a");
});

test("GetInfo: every picker the kit serves places rounds, no other stage says so", () => {
  assert.equal(info(maxScore, Stage.Picker, "1.0.0").rounds, true);
  const scorer: Scorer = { type: "s", description: "", score: load };
  assert.equal(info(scorer, Stage.Scorer, "1.0.0").rounds, false);
});

test("a cycle's round and after-predictions cross the wire; a cycle alone carries neither", () => {
  const c = two(1, 3);
  c.endpoints[1]!.prediction = { valid: true, ttftMs: 90, tpotMs: 9, ttftAfterMs: 95, tpotAfterMs: 9.5 };
  const w = cycleToProto(c);
  assert.deepEqual(w.round, { position: 1, size: 3 });
  assert.deepEqual(w.endpoints!.predictions!.ttftAfterMs, [0, 95]);
  const back = cycleFromWire(w);
  assert.deepEqual(back.round, c.round);
  assert.deepEqual(back.endpoints[1]!.prediction, c.endpoints[1]!.prediction);
  assert.deepEqual(back.endpoints[0]!.prediction, { valid: false, ttftMs: 0, tpotMs: 0, ttftAfterMs: 0, tpotAfterMs: 0 });
  const alone = cycleToProto(two(0, 0));
  assert.equal(alone.round, undefined);
  assert.equal(cycleFromWire(alone).round, undefined);
  // Projected for a stage that reads only the count, a cycle in a round keeps its round and ids.
  const projected = projectCycle(c, ["endpoints.count"]);
  assert.deepEqual([projected.round, projected.endpoints.map((e) => e.id)], [c.round, ["a", "b"]]);
  assert.deepEqual(projectCycle(two(0, 0), ["endpoints.count"]).endpoints.map((e) => e.id), ["", ""]);
});

test("an after column of another length is INVALID_ARGUMENT", () => {
  const c = two(1, 3);
  c.endpoints[0]!.prediction = { valid: true, ttftMs: 90, tpotMs: 9, ttftAfterMs: 95 };
  const w = cycleToProto(c);
  w.endpoints!.predictions!.ttftAfterMs.push(5);
  assert.throws(() => cycleFromWire(w), /column "predictions.ttft_after_ms" has 3 entries for 2 endpoints/);
});
