// Conversions between the wire messages and the SDK's types (Go: convert.go). The cycle travels
// in columnar form (Endpoints in types.proto); everything else maps field by field.
//
// The wire messages are decoded and encoded by the generated code (proto/gen/ts, ts-proto with
// forceLong=bigint): every int64/uint64 field arrives as a bigint, so a cycle's seed (a random
// uint64) and the request's prefix block hashes keep all 64 bits. This file converts between those
// messages and the SDK's friendly types: the seed and the hashes stay bigint; the 64-bit counters
// (token counts, queue lengths, in-flight counts, sample and row counts, model versions) become
// plain numbers at this boundary, exact up to Number.MAX_SAFE_INTEGER (2^53 − 1), and go back to
// bigint when encoded.

import { FilterRequest } from "./gen/foresight/v1/filter";
import { PickRequest } from "./gen/foresight/v1/picker";
import {
  ObserveRequest,
  type PredictorStats as PbPredictorStats,
  type Sample as PbSample,
  type TargetStats as PbTargetStats,
} from "./gen/foresight/v1/producer";
import type {
  Cycle as PbCycle,
  EndpointState as PbEndpointState,
  ExcludedEndpoint as PbExcludedEndpoint,
  Endpoints as PbEndpoints,
  Labels as PbLabels,
  Predictions as PbPredictions,
  Request as PbRequest,
} from "./gen/foresight/v1/types";
import { Code, StatusError } from "./status";
import { Hop } from "./types";
import type {
  Cycle,
  Disaggregation,
  Endpoint,
  EndpointState,
  Prediction,
  PredictorStats,
  Request,
  Sample,
  TargetStats,
} from "./types";

/** WireCycle is a cycle as the generated decoder returns it, before the column checks. */
export type WireCycle = PbCycle;

/** ZERO_TIME_MS is Go's zero time.Time (0001-01-01T00:00:00Z), which an absent timestamp stands for. */
export const ZERO_TIME_MS = Date.parse("0001-01-01T00:00:00Z");

/** dateOr returns d, or Go's zero time when the timestamp was absent. */
const dateOr = (d: Date | undefined): Date => d ?? new Date(ZERO_TIME_MS);

/**
 * toNumber converts a 64-bit counter to a number: exact up to 2^53 − 1, the nearest double
 * beyond (no counter the host sends comes near).
 */
const toNumber = (v: bigint): number => Number(v);

/**
 * toInt64 converts a counter to the wire's bigint; it throws naming the field when the number is
 * not an integer (BigInt would throw a RangeError that names nothing).
 */
export function toInt64(name: string, v: number): bigint {
  if (!Number.isSafeInteger(v)) {
    throw new Error(`${name} must be an integer within ±(2^53 − 1), got ${String(v)}`);
  }
  return BigInt(v);
}

/** emptyRequest is the zero request (what an absent request reads as). */
export function emptyRequest(): Request {
  return {
    id: "",
    model: "",
    inputTokens: 0,
    maxOutputTokens: 0,
    streaming: false,
    slo: { ttftMs: 0, tpotMs: 0 },
    priority: 0,
    sessionId: "",
    prefixBlockHashes: [],
    labels: {},
    disaggregation: { hop: Hop.Whole, decodeEndpoint: "", decodeTtftMs: 0, decodeTpotMs: 0 },
  };
}

/** requestFromProto returns the SDK form of a wire request (absent: the zero request). */
export function requestFromProto(q: PbRequest | undefined): Request {
  if (q === undefined) return emptyRequest();
  return {
    id: q.id,
    model: q.model,
    inputTokens: toNumber(q.inputTokens),
    maxOutputTokens: toNumber(q.maxOutputTokens),
    streaming: q.streaming,
    slo: { ttftMs: q.slo?.ttftMs ?? 0, tpotMs: q.slo?.tpotMs ?? 0 },
    priority: q.priority,
    sessionId: q.sessionId,
    prefixBlockHashes: q.prefixBlockHashes,
    labels: q.labels,
    disaggregation: {
      hop: (q.disaggregation?.hop ?? 0) as number as Hop,
      decodeEndpoint: q.disaggregation?.decodeEndpoint ?? "",
      decodeTtftMs: q.disaggregation?.decodeTtftMs ?? 0,
      decodeTpotMs: q.disaggregation?.decodeTpotMs ?? 0,
    },
  };
}

/** requestToProto returns the wire form of a request; the hashes must be uint64s. */
export function requestToProto(q: Request): PbRequest {
  return {
    id: q.id,
    model: q.model,
    inputTokens: toInt64("request.inputTokens", q.inputTokens),
    maxOutputTokens: toInt64("request.maxOutputTokens", q.maxOutputTokens),
    streaming: q.streaming,
    slo: { ttftMs: q.slo.ttftMs, tpotMs: q.slo.tpotMs },
    priority: q.priority,
    sessionId: q.sessionId,
    prefixBlockHashes: [...q.prefixBlockHashes],
    labels: { ...q.labels },
    // Absent for a request served whole, as the host sends it.
    disaggregation: disaggregationToProto(q.disaggregation),
  };
}

/** disaggregationToProto is the wire form of d: absent for a request served whole, as the host sends it. */
function disaggregationToProto(d: Disaggregation | undefined): PbRequest["disaggregation"] {
  if (d === undefined || (d.hop === Hop.Whole && d.decodeEndpoint === "" && d.decodeTtftMs === 0 && d.decodeTpotMs === 0)) {
    return undefined;
  }
  return { hop: d.hop as number, decodeEndpoint: d.decodeEndpoint, decodeTtftMs: d.decodeTtftMs, decodeTpotMs: d.decodeTpotMs };
}

/**
 * CycleBatch is a decoded batch request: its cycles and, for a PickRequest, their score sets and
 * after-score sets (empty outside rounds).
 */
export interface CycleBatch {
  cycles: WireCycle[];
  scores: number[][];
  scoresAfter: number[][];
}

/**
 * batchOf returns the batch of a decoded FilterRequest, ScoreRequest, AdmitRequest or
 * ProduceRequest (repeated Cycle cycles = 1), or of a PickRequest (with its score sets).
 */
export function batchOf(req: { cycles: WireCycle[]; scores?: { values: number[] }[]; scoresAfter?: { values: number[] }[] }): CycleBatch {
  return { cycles: req.cycles, scores: req.scores?.map((s) => s.values) ?? [], scoresAfter: req.scoresAfter?.map((s) => s.values) ?? [] };
}

/**
 * decodeCycleBatch decodes a FilterRequest, ScoreRequest, AdmitRequest or ProduceRequest (field 1:
 * repeated Cycle; the four are the same message on the wire) or, with `withScores`, a PickRequest
 * (field 2: repeated Scores), with the generated decoders.
 */
export function decodeCycleBatch(buf: Uint8Array, withScores = false): CycleBatch {
  return batchOf(withScores ? PickRequest.decode(buf) : FilterRequest.decode(buf));
}

/** stateFromProto returns the SDK form of one endpoint's state (absent: all zero). */
function stateFromProto(p: PbEndpointState | undefined): EndpointState {
  return {
    kvCacheUsage: p?.kvCacheUsage ?? 0,
    waiting: toNumber(p?.waiting ?? 0n),
    running: toNumber(p?.running ?? 0n),
    inflightRequests: toNumber(p?.inflightRequests ?? 0n),
    prefillTokensInFlight: toNumber(p?.prefillTokensInFlight ?? 0n),
    decodeTokensInFlight: toNumber(p?.decodeTokensInFlight ?? 0n),
    prefixMatch: p?.prefixMatch ?? 0,
    minRunningTpotSloMs: p?.minRunningTpotSloMs ?? 0,
    metricsAgeMs: p?.metricsAgeMs ?? 0,
    lastOutputAgeMs: p?.lastOutputAgeMs ?? 0,
    dispatchedSinceScrape: toNumber(p?.dispatchedSinceScrape ?? 0n),
    firstTokenRate: p?.firstTokenRate ?? 0,
    runningTpotMs: p?.runningTpotMs ?? 0,
  };
}

/** sampleFromProto returns the SDK form of a finished-request sample. */
export function sampleFromProto(s: PbSample): Sample {
  return {
    request: requestFromProto(s.request),
    endpointId: s.endpointId,
    state: stateFromProto(s.state),
    predicted: { valid: s.predicted?.valid ?? false, ttftMs: s.predicted?.ttftMs ?? 0, tpotMs: s.predicted?.tpotMs ?? 0 },
    actualTtftMs: s.actualTtftMs,
    actualTpotMs: s.actualTpotMs,
    outputTokens: toNumber(s.outputTokens),
    dispatchedAt: dateOr(s.dispatchedAt),
  };
}

/** decodeObserveRequest decodes an ObserveRequest (field 1: repeated Sample) into SDK samples. */
export function decodeObserveRequest(buf: Uint8Array): Sample[] {
  return ObserveRequest.decode(buf).samples.map(sampleFromProto);
}

// --- columns -----------------------------------------------------------------------------------

/**
 * Columns reads columns that are either empty (all zero) or exactly n long, remembering the first
 * column of another length (Go: columnCheck).
 */
class Columns {
  err: StatusError | undefined;
  constructor(readonly n: number) {}

  col<T>(name: string, col: readonly T[] | undefined, zero: T): (i: number) => T {
    if (col === undefined || col.length === 0) return () => zero;
    if (col.length !== this.n && this.err === undefined) {
      this.err = new StatusError(
        Code.InvalidArgument,
        `invalid cycle: column ${JSON.stringify(name)} has ${col.length} entries for ${this.n} endpoints`,
      );
    }
    return (i) => col[i] as T;
  }
}

/**
 * cycleFromWire returns the SDK form of a decoded cycle (counters as numbers, seed and hashes as
 * bigint; an absent time is Go's zero time), or throws a StatusError (InvalidArgument)
 * when a column's length does not match the endpoint count (Go: CycleFromProto).
 */
export function cycleFromWire(w: WireCycle): Cycle {
  const eps = w.endpoints;
  let n = eps?.count ?? 0;
  if (n === 0) n = eps?.ids.length ?? 0;
  const s = eps?.states;
  const pr = eps?.predictions;
  const cols = new Columns(n);
  const ids = cols.col("ids", eps?.ids, "");
  const kv = cols.col("kv_cache_usage", s?.kvCacheUsage, 0);
  const waiting = cols.col("waiting", s?.waiting, 0n);
  const running = cols.col("running", s?.running, 0n);
  const inflight = cols.col("inflight_requests", s?.inflightRequests, 0n);
  const prefill = cols.col("prefill_tokens_in_flight", s?.prefillTokensInFlight, 0n);
  const decode = cols.col("decode_tokens_in_flight", s?.decodeTokensInFlight, 0n);
  const prefix = cols.col("prefix_match", s?.prefixMatch, 0);
  const minTpot = cols.col("min_running_tpot_slo_ms", s?.minRunningTpotSloMs, 0);
  const age = cols.col("metrics_age_ms", s?.metricsAgeMs, 0);
  const outputAge = cols.col("last_output_age_ms", s?.lastOutputAgeMs, 0);
  const sinceScrape = cols.col("dispatched_since_scrape", s?.dispatchedSinceScrape, 0n);
  const startRate = cols.col("first_token_rate", s?.firstTokenRate, 0);
  const runningTpot = cols.col("running_tpot_ms", s?.runningTpotMs, 0);
  const valid = cols.col("predictions.valid", pr?.valid, false);
  const ttft = cols.col("predictions.ttft_ms", pr?.ttftMs, 0);
  const tpot = cols.col("predictions.tpot_ms", pr?.tpotMs, 0);
  // The after and spread columns come only from a producer that says them: absent otherwise, and
  // then the predictions have no such fields.
  const ttftAfter = cols.col("predictions.ttft_after_ms", pr?.ttftAfterMs, 0);
  const tpotAfter = cols.col("predictions.tpot_after_ms", pr?.tpotAfterMs, 0);
  const ttftSpread = cols.col("predictions.ttft_spread", pr?.ttftSpread, 0);
  const tpotSpread = cols.col("predictions.tpot_spread", pr?.tpotSpread, 0);
  const afters = (pr?.ttftAfterMs.length ?? 0) > 0 || (pr?.tpotAfterMs.length ?? 0) > 0;
  const spreads = (pr?.ttftSpread.length ?? 0) > 0 || (pr?.tpotSpread.length ?? 0) > 0;
  const labels = cols.col<PbLabels | undefined>("labels", eps?.labels, undefined);
  if (cols.err !== undefined) throw cols.err;
  const endpoints = new Array<Endpoint>(n);
  for (let i = 0; i < n; i++) {
    const prediction: Prediction = { valid: valid(i), ttftMs: ttft(i), tpotMs: tpot(i) };
    if (afters) {
      prediction.ttftAfterMs = ttftAfter(i);
      prediction.tpotAfterMs = tpotAfter(i);
    }
    if (spreads) {
      prediction.ttftSpread = ttftSpread(i);
      prediction.tpotSpread = tpotSpread(i);
    }
    endpoints[i] = {
      id: ids(i),
      labels: labels(i)?.values ?? {},
      state: {
        kvCacheUsage: kv(i),
        waiting: toNumber(waiting(i)),
        running: toNumber(running(i)),
        inflightRequests: toNumber(inflight(i)),
        prefillTokensInFlight: toNumber(prefill(i)),
        decodeTokensInFlight: toNumber(decode(i)),
        prefixMatch: prefix(i),
        minRunningTpotSloMs: minTpot(i),
        metricsAgeMs: age(i),
        lastOutputAgeMs: outputAge(i),
        dispatchedSinceScrape: toNumber(sinceScrape(i)),
        firstTokenRate: startRate(i),
        runningTpotMs: runningTpot(i),
      },
      prediction,
    };
  }
  const c: Cycle = { request: requestFromProto(w.request), endpoints, now: dateOr(w.now), seed: w.seed };
  if (w.round !== undefined) c.round = { position: w.round.position, size: w.round.size };
  // Not a column: the excluded endpoints have their own length, usually zero.
  const excluded = eps?.excluded ?? [];
  if (excluded.length > 0) c.excluded = excluded.map((x) => ({ id: x.id, labels: x.labels, reason: x.reason }));
  return c;
}

// --- encoding ----------------------------------------------------------------------------------

/**
 * predictionsToProto returns the columnar wire form of one prediction per endpoint. Each optional
 * column (the after and spread columns) is sent only when one of its entries is not zero, so
 * predictions that do not fill it stay as lean as before the columns existed (Go:
 * wire.OptionalColumn).
 */
export function predictionsToProto(ps: readonly Prediction[]): PbPredictions {
  const optionalCol = (f: (p: Prediction) => number | undefined): number[] => {
    const col = ps.map((p) => f(p) ?? 0);
    return col.some((v) => v !== 0) ? col : [];
  };
  return {
    valid: ps.map((p) => p.valid),
    ttftMs: ps.map((p) => p.ttftMs),
    tpotMs: ps.map((p) => p.tpotMs),
    ttftAfterMs: optionalCol((p) => p.ttftAfterMs),
    tpotAfterMs: optionalCol((p) => p.tpotAfterMs),
    ttftSpread: optionalCol((p) => p.ttftSpread),
    tpotSpread: optionalCol((p) => p.tpotSpread),
  };
}

/** endpointsToProto returns the columnar wire form of endpoints (Go: CycleToProto). */
export function endpointsToProto(eps: readonly Endpoint[]): PbEndpoints {
  const col = <T>(f: (e: Endpoint) => T): T[] => eps.map(f);
  const int64Col = (field: keyof EndpointState): bigint[] =>
    eps.map((e, i) => toInt64(`endpoints[${i}].state.${field}`, e.state[field]));
  const out: PbEndpoints = {
    count: eps.length,
    ids: col((e) => e.id),
    labels: [],
    states: {
      kvCacheUsage: col((e) => e.state.kvCacheUsage),
      waiting: int64Col("waiting"),
      running: int64Col("running"),
      inflightRequests: int64Col("inflightRequests"),
      prefillTokensInFlight: int64Col("prefillTokensInFlight"),
      decodeTokensInFlight: int64Col("decodeTokensInFlight"),
      prefixMatch: col((e) => e.state.prefixMatch),
      minRunningTpotSloMs: col((e) => e.state.minRunningTpotSloMs),
      metricsAgeMs: col((e) => e.state.metricsAgeMs),
      lastOutputAgeMs: col((e) => e.state.lastOutputAgeMs),
      dispatchedSinceScrape: int64Col("dispatchedSinceScrape"),
      firstTokenRate: col((e) => e.state.firstTokenRate),
      runningTpotMs: col((e) => e.state.runningTpotMs),
    },
    predictions: undefined,
    excluded: [], // the cycle's, not the endpoints': cycleToProto fills them in
  };
  if (eps.some((e) => Object.keys(e.labels).length > 0)) out.labels = col((e) => ({ values: { ...e.labels } }));
  if (eps.some((e) => e.prediction.valid)) out.predictions = predictionsToProto(eps.map((e) => e.prediction));
  return out;
}

/** cycleToProto returns the wire form of a cycle (Go: CycleToProto), seed and hashes as full uint64s. */
export function cycleToProto(c: Cycle): WireCycle {
  const endpoints = endpointsToProto(c.endpoints);
  endpoints.excluded = (c.excluded ?? []).map(
    (x): PbExcludedEndpoint => ({ id: x.id, labels: { ...x.labels }, reason: x.reason }),
  );
  // Absent for a cycle decided alone, as the Go host sends it.
  const round = c.round === undefined || (c.round.position === 0 && c.round.size === 0)
    ? undefined
    : { position: Math.max(c.round.position, 0), size: Math.max(c.round.size, 0) };
  return { request: requestToProto(c.request), endpoints, now: c.now, seed: c.seed, round };
}

/**
 * encodeCycleBatch encodes cycles as a FilterRequest, ScoreRequest, AdmitRequest or ProduceRequest
 * (or, with scores, a PickRequest, with the after-score sets of a round if given): what a host
 * sends. For tests and tools.
 */
export function encodeCycleBatch(
  cycles: readonly Cycle[],
  scores?: readonly (readonly number[])[],
  scoresAfter: readonly (readonly number[])[] = [],
): Uint8Array {
  const wire = cycles.map(cycleToProto);
  if (scores === undefined) return FilterRequest.encode({ cycles: wire, instance: "", chain: [] }).finish();
  const sets = (v: readonly (readonly number[])[]) => v.map((s) => ({ values: [...s] }));
  return PickRequest.encode({ cycles: wire, scores: sets(scores), instance: "", scoresAfter: sets(scoresAfter) }).finish();
}

function targetToProto(name: string, t: TargetStats): PbTargetStats {
  const out: PbTargetStats = { samples: toInt64(`stats.${name}.samples`, t.samples), mape: t.mape, mae: t.mae };
  if (t.quantileCoverage !== undefined) out.quantileCoverage = t.quantileCoverage;
  return out;
}

/**
 * statsToProto converts a producer's stats (undefined stays undefined); it throws naming the
 * field when a count is not an integer.
 */
export function statsToProto(s: PredictorStats | undefined): PbPredictorStats | undefined {
  if (s === undefined) return undefined;
  return {
    modelVersion: toInt64("stats.modelVersion", s.modelVersion),
    trainingRows: toInt64("stats.trainingRows", s.trainingRows),
    ttft: targetToProto("ttft", s.ttft),
    tpot: targetToProto("tpot", s.tpot),
    drift: s.drift,
  };
}
