import { test } from "node:test";
import assert from "node:assert/strict";
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import {
  cycleFromWire,
  decodeCycleBatch,
  decodeObserveRequest,
  encodeCycleBatch,
  predictionsToProto,
  statsToProto,
  ZERO_TIME_MS,
} from "../src/convert";
import { FilterRequest } from "../src/gen/foresight/v1/filter";
import { ObserveRequest, ObserveResponse, PredictorStats } from "../src/gen/foresight/v1/producer";
import { Endpoints } from "../src/gen/foresight/v1/types";
import { observe } from "../src/server";
import { Code, StatusError } from "../src/status";
import { EXCLUDED_EJECTED, EXCLUDED_UNHEALTHY, Hop, READ_PATHS, checkReads, hopOn, type ExcludedEndpoint } from "../src/types";
import { cycle } from "./helpers";

test("a cycle survives the wire, 64-bit seed and hashes included", () => {
  const c = cycle(5);
  const batch = decodeCycleBatch(encodeCycleBatch([c, cycle(0, { seed: 0n })]));
  assert.equal(batch.cycles.length, 2);
  assert.deepEqual(cycleFromWire(batch.cycles[0]!), c);
  const empty = cycleFromWire(batch.cycles[1]!);
  assert.equal(empty.endpoints.length, 0);
  assert.equal(empty.seed, 0n);
});

test("a uint64 seed and hashes above 2^53 round-trip through the generated decoder", () => {
  const seed = 0xfedc_ba98_7654_3210n;
  assert.ok(seed > BigInt(Number.MAX_SAFE_INTEGER));
  const buf = encodeCycleBatch([cycle(2)]);
  const wire = FilterRequest.decode(buf).cycles[0]!; // the generated decoder, as the stage service uses it
  assert.equal(wire.seed, seed);
  assert.deepEqual(wire.request!.prefixBlockHashes, [0xffff_ffff_ffff_fff1n, 11n, 2n ** 63n + 5n]);
  assert.equal(cycleFromWire(wire).seed, seed);
  assert.equal(cycleFromWire(decodeCycleBatch(buf).cycles[0]!).seed, seed);
  // the largest uint64 too, and the generated encoder writes the same bytes back
  const max = encodeCycleBatch([cycle(1, { seed: 2n ** 64n - 1n })]);
  assert.equal(FilterRequest.decode(max).cycles[0]!.seed, 2n ** 64n - 1n);
  assert.deepEqual(FilterRequest.encode(FilterRequest.decode(max)).finish(), max);
  assert.throws(() => encodeCycleBatch([cycle(1, { seed: 2n ** 64n })]), /too large/);
});

test("64-bit counters are numbers in the SDK's types", () => {
  const c = cycleFromWire(decodeCycleBatch(encodeCycleBatch([cycle(3)])).cycles[0]!);
  assert.equal(typeof c.request.inputTokens, "number");
  assert.equal(c.request.inputTokens, 1234);
  assert.equal(c.request.maxOutputTokens, 256);
  assert.deepEqual(c.endpoints[2]!.state, {
    kvCacheUsage: 0.2, waiting: 2, running: 4, inflightRequests: 6, prefillTokensInFlight: 200,
    decodeTokensInFlight: 2000, prefixMatch: 0.1, minRunningTpotSloMs: 32, metricsAgeMs: 7, lastOutputAgeMs: 14,
    dispatchedSinceScrape: 8, firstTokenRate: 5, runningTpotMs: 14,
  });
  const bad = cycle(2);
  bad.endpoints[1]!.state.waiting = 1.5;
  assert.throws(() => encodeCycleBatch([bad]), { message: "endpoints[1].state.waiting must be an integer within ±(2^53 − 1), got 1.5" });
  const big = cycle(0);
  big.request.inputTokens = 2 ** 60;
  assert.throws(() => encodeCycleBatch([big]), /request.inputTokens must be an integer/);
});

test("a producer's stats travel as int64 counts; a count that is not an integer fails observe", async () => {
  const stats = {
    modelVersion: 7, trainingRows: 12345, drift: true,
    ttft: { samples: 100, mape: 0.1, mae: 12, quantileCoverage: 0.9 },
    tpot: { samples: 99, mape: 0.2, mae: 3 },
  };
  const wire = PredictorStats.decode(PredictorStats.encode(statsToProto(stats)!).finish());
  assert.deepEqual(wire, {
    modelVersion: 7n, trainingRows: 12345n, drift: true,
    ttft: { samples: 100n, mape: 0.1, mae: 12, quantileCoverage: 0.9 },
    tpot: { samples: 99n, mape: 0.2, mae: 3, quantileCoverage: undefined },
  });
  const producer = (s: typeof stats) => ({ type: "p", description: "", produce: () => [], observe: () => ({ accepted: 3, stats: s }) });
  const ok = await observe(producer(stats), []);
  assert.equal(ok.accepted, 3);
  assert.equal(ok.stats?.trainingRows, 12345n);
  assert.ok(ObserveResponse.encode(ok).finish().length > 0);
  const bad = await observe(producer({ ...stats, trainingRows: Number.NaN }), []);
  assert.deepEqual(bad, {
    status: { code: Code.Error, message: "stats.trainingRows must be an integer within ±(2^53 − 1), got NaN" },
    accepted: 0,
    stats: undefined,
  });
});

test("labels and predictions are columns only when some endpoint has them", () => {
  const c = cycle(3);
  c.endpoints.forEach((e) => {
    e.labels = {};
    e.prediction = { valid: false, ttftMs: 0, tpotMs: 0 };
  });
  const w = decodeCycleBatch(encodeCycleBatch([c])).cycles[0]!;
  assert.equal(w.endpoints!.labels.length, 0);
  assert.equal(w.endpoints!.predictions, undefined);
  const back = cycleFromWire(w);
  assert.deepEqual(back.endpoints[2]!.labels, {});
  assert.deepEqual(back.endpoints[2]!.prediction, { valid: false, ttftMs: 0, tpotMs: 0 });
});

test("spread columns cross the wire where a producer gave them; a column of zeros is not sent", () => {
  const c = cycle(3);
  c.endpoints[0]!.prediction = { ...c.endpoints[0]!.prediction, ttftSpread: 0.3 };
  c.endpoints[2]!.prediction = { ...c.endpoints[2]!.prediction, ttftSpread: 0.5, tpotSpread: 0 };
  const w = decodeCycleBatch(encodeCycleBatch([c])).cycles[0]!;
  assert.deepEqual(w.endpoints!.predictions!.ttftSpread, [0.3, 0, 0.5]);
  assert.deepEqual(w.endpoints!.predictions!.tpotSpread, []);
  // Back on the plugin side every prediction carries both spreads (0 where the producer had none),
  // as it carries both after fields when either after column came.
  const back = cycleFromWire(w);
  assert.deepEqual(back.endpoints.map((e) => [e.prediction.ttftSpread, e.prediction.tpotSpread]), [[0.3, 0], [0, 0], [0.5, 0]]);
  assert.deepEqual(back.endpoints.map((e) => [e.prediction.ttftMs, e.prediction.tpotMs]), c.endpoints.map((e) => [e.prediction.ttftMs, e.prediction.tpotMs]));
  assert.equal("ttftAfterMs" in back.endpoints[0]!.prediction, false);
  // A cycle from an older producer, without spreads: no spread fields.
  assert.equal("ttftSpread" in cycleFromWire(decodeCycleBatch(encodeCycleBatch([cycle(3)])).cycles[0]!).endpoints[0]!.prediction, false);
});

test("a producer's answer sends a spread column only when one of its entries is not zero", () => {
  const none = predictionsToProto([{ valid: true, ttftMs: 1, tpotMs: 2 }, { valid: true, ttftMs: 3, tpotMs: 4, ttftSpread: 0 }]);
  assert.deepEqual([none.ttftSpread, none.tpotSpread, none.ttftAfterMs, none.tpotAfterMs], [[], [], [], []]);
  const some = predictionsToProto([{ valid: true, ttftMs: 1, tpotMs: 2 }, { valid: true, ttftMs: 3, tpotMs: 4, tpotSpread: 0.25 }]);
  assert.deepEqual([some.ttftSpread, some.tpotSpread], [[], [0, 0.25]]);
});

test("a spread column of another length is an invalid cycle naming the column", () => {
  for (const [name, field] of [["ttft_spread", "ttftSpread"], ["tpot_spread", "tpotSpread"]] as const) {
    const c = cycle(2);
    c.endpoints[0]!.prediction = { valid: true, ttftMs: 100, tpotMs: 10, ttftSpread: 0.3, tpotSpread: 0.2 };
    const w = decodeCycleBatch(encodeCycleBatch([c])).cycles[0]!;
    w.endpoints!.predictions![field].pop();
    assert.throws(
      () => cycleFromWire(w),
      (err: unknown) =>
        err instanceof StatusError &&
        err.code === Code.InvalidArgument &&
        err.message === `invalid cycle: column "predictions.${name}" has 1 entries for 2 endpoints`,
      name,
    );
  }
});

/** encodeWith encodes one cycle whose endpoints message is `eps` (and nothing else). */
function encodeWith(eps: Endpoints): Uint8Array {
  const w = new BinaryWriter();
  w.uint32(10).fork();
  Endpoints.encode(eps, w.uint32(18).fork()).join();
  w.join();
  return w.finish();
}

const bare = (over: Partial<Endpoints>): Endpoints => ({ ids: [], labels: [], states: undefined, predictions: undefined, count: 0, excluded: [], ...over });

test("absent columns read as zero, the count stands for missing ids, an absent time is Go's zero time", () => {
  const c = cycleFromWire(decodeCycleBatch(encodeWith(bare({ count: 3 }))).cycles[0]!);
  assert.equal(c.endpoints.length, 3);
  assert.equal(c.endpoints[2]!.id, "");
  assert.equal(c.endpoints[2]!.state.waiting, 0);
  assert.equal(c.now.getTime(), ZERO_TIME_MS);
  assert.equal(c.now.toISOString(), "0001-01-01T00:00:00.000Z");
  assert.equal(c.request.id, "");
  // count 0 (an older host): the ids are the count
  const old = cycleFromWire(decodeCycleBatch(encodeWith(bare({ ids: ["a", "b"] }))).cycles[0]!);
  assert.deepEqual(old.endpoints.map((e) => e.id), ["a", "b"]);
});

test("the excluded endpoints are not a column: their own length, their own labels, any reason", () => {
  const excluded: ExcludedEndpoint[] = [
    { id: "d:8000", labels: { "topology.kubernetes.io/zone": "z1" }, reason: EXCLUDED_UNHEALTHY },
    { id: "e:8000", labels: {}, reason: EXCLUDED_EJECTED },
    { id: "f:8000", labels: { node: "n1" }, reason: "drained" }, // a reason newer than the kit passes as it is
  ];
  const c = cycleFromWire(decodeCycleBatch(encodeWith(bare({ count: 2, ids: ["a", "b"], excluded }))).cycles[0]!);
  assert.deepEqual(c.excluded, excluded);
  assert.deepEqual(c.endpoints.map((e) => [e.id, e.labels]), [["a", {}], ["b", {}]]);
  // none on the wire: no excluded field, as the Go SDK's Cycle.Excluded stays nil
  assert.equal("excluded" in cycleFromWire(decodeCycleBatch(encodeWith(bare({ count: 2 }))).cycles[0]!), false);
  // and back: cycleToProto sends them beside the endpoints
  const full = cycle(3, { excluded: excluded.slice(0, 2) });
  const wire = FilterRequest.decode(encodeCycleBatch([full])).cycles[0]!;
  assert.deepEqual(wire.endpoints!.excluded, excluded.slice(0, 2));
  assert.deepEqual(cycleFromWire(wire), full);
});

test("the read paths are the Go SDK's, in its order", () => {
  // transport.ReadPaths in plugins/sdk/transport/reads.go
  const cols = [
    "kv_cache_usage", "waiting", "running", "inflight_requests", "prefill_tokens_in_flight", "decode_tokens_in_flight",
    "prefix_match", "min_running_tpot_slo_ms", "metrics_age_ms", "last_output_age_ms", "dispatched_since_scrape",
    "first_token_rate",
    "running_tpot_ms",
  ];
  assert.deepEqual(READ_PATHS, [
    "request", "request.prefix_block_hashes", "endpoints.count", "endpoints.ids", "endpoints.labels", "endpoints.states",
    ...cols.map((c) => `endpoints.states.${c}`), "endpoints.predictions", "endpoints.excluded",
  ]);
  assert.doesNotThrow(() => checkReads(["endpoints.labels", "endpoints.excluded"]));
  assert.throws(() => checkReads(["endpoints.exclude"]), /unknown read path "endpoints.exclude"/);
});

test("a column of the wrong length is an invalid cycle naming the column", () => {
  const states = {
    kvCacheUsage: [], waiting: [1n, 2n], running: [], inflightRequests: [], prefillTokensInFlight: [],
    decodeTokensInFlight: [], prefixMatch: [], minRunningTpotSloMs: [], metricsAgeMs: [], lastOutputAgeMs: [],
    dispatchedSinceScrape: [], firstTokenRate: [], runningTpotMs: [],
  };
  const w = decodeCycleBatch(encodeWith(bare({ count: 3, ids: ["a", "b", "c"], states }))).cycles[0]!;
  assert.throws(
    () => cycleFromWire(w),
    (err: unknown) =>
      err instanceof StatusError &&
      err.code === Code.InvalidArgument &&
      err.message === 'invalid cycle: column "waiting" has 2 entries for 3 endpoints',
  );
});

test("a pick request carries one score set per cycle", () => {
  const b = decodeCycleBatch(encodeCycleBatch([cycle(2), cycle(3)], [[0.5, 1], [0, 0.25, 1]]), true);
  assert.deepEqual(b.scores, [[0.5, 1], [0, 0.25, 1]]);
  assert.equal(b.cycles.length, 2);
});

test("observe samples decode, dispatch time and request included", () => {
  const buf = ObserveRequest.encode({
    samples: [
      {
        request: {
          id: "r", model: "m", inputTokens: 10n, maxOutputTokens: 5n, streaming: false, slo: { ttftMs: 1, tpotMs: 2 },
          priority: 3, sessionId: "", prefixBlockHashes: [7n, 2n ** 64n - 2n], labels: { a: "b" },
          disaggregation: { hop: 1, decodeEndpoint: "d", decodeTtftMs: 30, decodeTpotMs: 9 },
        },
        endpointId: "e1",
        state: {
          kvCacheUsage: 0.5, waiting: 2n, running: 3n, inflightRequests: 4n, prefillTokensInFlight: 5n,
          decodeTokensInFlight: 6n, prefixMatch: 0.25, minRunningTpotSloMs: 0, metricsAgeMs: 9, lastOutputAgeMs: -1,
          dispatchedSinceScrape: 3n, firstTokenRate: 12.5, runningTpotMs: 18.5,
        },
        predicted: { valid: true, ttftMs: 120, tpotMs: 12 },
        actualTtftMs: 130,
        actualTpotMs: 11,
        outputTokens: 42n,
        dispatchedAt: new Date(1_800_000_000_005),
      },
    ],
    instance: "",
  }).finish();
  const [s] = decodeObserveRequest(buf);
  assert.equal(s!.endpointId, "e1");
  assert.deepEqual(s!.request.prefixBlockHashes, [7n, 2n ** 64n - 2n]);
  assert.equal(s!.request.inputTokens, 10);
  assert.equal(s!.state.waiting, 2);
  assert.equal(s!.state.decodeTokensInFlight, 6);
  assert.deepEqual(s!.request.labels, { a: "b" });
  assert.deepEqual(s!.request.disaggregation, { hop: Hop.Prefill, decodeEndpoint: "d", decodeTtftMs: 30, decodeTpotMs: 9 });
  // The decode endpoint of a prefill cycle would serve the request whole.
  assert.equal(hopOn(s!.request, "d"), Hop.Whole);
  assert.equal(hopOn(s!.request, "e1"), Hop.Prefill);
  assert.equal(s!.state.lastOutputAgeMs, -1);
  assert.equal(s!.state.dispatchedSinceScrape, 3);
  assert.equal(s!.state.firstTokenRate, 12.5);
  assert.equal(s!.state.runningTpotMs, 18.5);
  assert.equal(s!.predicted.ttftMs, 120);
  assert.equal(s!.outputTokens, 42);
  assert.equal(s!.dispatchedAt.getTime(), 1_800_000_000_005);
  // an absent dispatch time reads as Go's zero time
  const [z] = decodeObserveRequest(ObserveRequest.encode({ samples: [{ ...ObserveRequest.decode(buf).samples[0]!, dispatchedAt: undefined }], instance: "" }).finish());
  assert.equal(z!.dispatchedAt.getTime(), ZERO_TIME_MS);
});

test("unknown fields are skipped", () => {
  const w = new BinaryWriter();
  w.uint32((99 << 3) | 2).string("from a newer host");
  w.uint32(10).fork();
  w.uint32((77 << 3) | 0).uint64(5n);
  w.uint32(32).uint64(9n);
  w.join();
  const b = decodeCycleBatch(w.finish());
  assert.equal(b.cycles.length, 1);
  assert.equal(b.cycles[0]!.seed, 9n);
});
