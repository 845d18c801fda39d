// Helpers for testing stage plugins (Go: transport.ProjectCycle and sdk/sdktest).

import { cycleFromWire, decodeCycleBatch, emptyRequest, encodeCycleBatch } from "./convert";
import type { Status } from "./gen/foresight/v1/types";
import { inRound } from "./rounds";
import { filterHandler } from "./server";
import { checkReads, type Cycle, type EndpointState, type Filter, type FilterVerdict } from "./types";

const stateColumns: Record<string, keyof EndpointState> = {
  kv_cache_usage: "kvCacheUsage",
  waiting: "waiting",
  running: "running",
  inflight_requests: "inflightRequests",
  prefill_tokens_in_flight: "prefillTokensInFlight",
  decode_tokens_in_flight: "decodeTokensInFlight",
  prefix_match: "prefixMatch",
  min_running_tpot_slo_ms: "minRunningTpotSloMs",
  metrics_age_ms: "metricsAgeMs",
  last_output_age_ms: "lastOutputAgeMs",
  dispatched_since_scrape: "dispatchedSinceScrape",
  first_token_rate: "firstTokenRate",
  running_tpot_ms: "runningTpotMs",
};

const zeroState = (): EndpointState => ({
  kvCacheUsage: 0, waiting: 0, running: 0, inflightRequests: 0, prefillTokensInFlight: 0,
  decodeTokensInFlight: 0, prefixMatch: 0, minRunningTpotSloMs: 0, metricsAgeMs: 0, lastOutputAgeMs: 0,
  dispatchedSinceScrape: 0, firstTokenRate: 0, runningTpotMs: 0,
});

/**
 * projectCycle returns c as a stage declaring `reads` receives it from the host: every field it
 * did not declare reads as zero (now, seed, round and the endpoint count always arrive, and the
 * endpoint ids of a cycle in a round; the predictions' after values come with the predictions).
 * Check a stage's decisions on projectCycle(c, reads) against its decisions on c in its tests.
 */
export function projectCycle(c: Cycle, reads: readonly string[]): Cycle {
  checkReads(reads);
  const full = cycleFromWire(decodeCycleBatch(encodeCycleBatch([c])).cycles[0]!); // a deep copy, via the wire
  if (reads.length === 0) return full;
  const has = (p: string) => reads.includes(p);
  const request = has("request") ? { ...full.request } : emptyRequest();
  request.prefixBlockHashes = has("request.prefix_block_hashes") ? full.request.prefixBlockHashes : [];
  const cols = Object.entries(stateColumns).filter(([col]) => has("endpoints.states") || has(`endpoints.states.${col}`));
  const out: Cycle = {
    request,
    now: full.now,
    seed: full.seed,
    endpoints: full.endpoints.map((e) => {
      const state = zeroState();
      for (const [, field] of cols) state[field] = e.state[field];
      return {
        id: has("endpoints.ids") || inRound(full) ? e.id : "",
        labels: has("endpoints.labels") ? e.labels : {},
        state,
        prediction: has("endpoints.predictions") ? e.prediction : { valid: false, ttftMs: 0, tpotMs: 0 },
      };
    }),
  };
  if (has("endpoints.excluded") && full.excluded !== undefined) out.excluded = full.excluded;
  if (full.round !== undefined) out.round = full.round;
  return out;
}

/** A cycle's answer as the host receives it: a verdict or the stage's status. */
export type WireAnswer<T> = { ok: true; value: T } | { ok: false; status: Status };

/**
 * filterOverWire runs f on cycles the way the host does: encoded as the host encodes them
 * (projected to f.reads), decoded by the SDK, answered through the SDK's filter service, and
 * decoded back. Use it to test a filter's wire behaviour without a process.
 */
export async function filterOverWire(f: Filter, cycles: readonly Cycle[]): Promise<WireAnswer<FilterVerdict>[]> {
  const sent = cycles.map((c) => projectCycle(c, f.reads ?? []));
  const resp = await filterHandler(f)(decodeCycleBatch(encodeCycleBatch(sent)));
  return resp.results.map((r) =>
    r.status === undefined ? { ok: true, value: { kept: r.kept, reason: r.reason } } : { ok: false, status: r.status },
  );
}
