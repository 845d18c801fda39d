import { Hop, type Cycle, type Endpoint } from "../src/index";

/** endpoint returns an endpoint with distinct values in every field. */
export function endpoint(i: number, labels: Record<string, string> = {}, valid = false): Endpoint {
  return {
    id: `10.0.0.${i}:8000`,
    labels,
    state: {
      kvCacheUsage: i / 10,
      waiting: i,
      running: 2 * i,
      inflightRequests: 3 * i,
      prefillTokensInFlight: 100 * i,
      decodeTokensInFlight: 1000 * i,
      prefixMatch: i / 20,
      minRunningTpotSloMs: 30 + i,
      metricsAgeMs: 5 + i,
      lastOutputAgeMs: i === 0 ? -1 : 7 * i,
      dispatchedSinceScrape: 4 * i,
      firstTokenRate: 2.5 * i,
      runningTpotMs: i === 0 ? 0 : 12 + i,
    },
    prediction: { valid, ttftMs: valid ? 100 + i : 0, tpotMs: valid ? 10 + i : 0 },
  };
}

/** cycle returns a cycle of n endpoints with a full-width seed and hashes beyond 2^53. */
export function cycle(n: number, over: Partial<Cycle> = {}): Cycle {
  return {
    request: {
      id: "req-1",
      model: "m",
      inputTokens: 1234,
      maxOutputTokens: 256,
      streaming: true,
      slo: { ttftMs: 800, tpotMs: 40 },
      priority: -1,
      sessionId: "s-1",
      prefixBlockHashes: [0xffff_ffff_ffff_fff1n, 11n, 2n ** 63n + 5n],
      labels: { tenant: "acme" },
      disaggregation: { hop: Hop.Whole, decodeEndpoint: "", decodeTtftMs: 0, decodeTpotMs: 0 },
    },
    endpoints: Array.from({ length: n }, (_, i) => endpoint(i, i % 2 ? { pool: "interactive" } : {}, i !== 1)),
    now: new Date("2026-11-22T10:11:12.345Z"),
    seed: 0xfedc_ba98_7654_3210n,
    ...over,
  };
}
