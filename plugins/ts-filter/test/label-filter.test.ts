import { test } from "node:test";
import assert from "node:assert/strict";
import { filterOverWire, projectCycle, type Cycle, type Endpoint } from "@foresight/plugin-sdk";
import { LabelSelectorFilter, TYPE } from "../src/label-filter";

function ep(i: number, labels: Record<string, string>): Endpoint {
  return {
    id: `vllm-${i}:8000`,
    labels,
    state: {
      kvCacheUsage: 0.5, waiting: i, running: 1, inflightRequests: 1, prefillTokensInFlight: 0, decodeTokensInFlight: 0,
      prefixMatch: 0, minRunningTpotSloMs: 0, metricsAgeMs: 0, lastOutputAgeMs: -1, dispatchedSinceScrape: 0,
      firstTokenRate: 0, runningTpotMs: 0,
    },
    prediction: { valid: true, ttftMs: 100, tpotMs: 10 },
  };
}

const fleet = (): Endpoint[] => [
  ep(0, { pool: "interactive", gpu: "h100", tenant: "acme" }),
  ep(1, { pool: "batch", gpu: "a100" }),
  ep(2, { pool: "interactive", gpu: "a100", tenant: "globex" }),
  ep(3, {}),
];

function cycleOf(endpoints: Endpoint[], requestLabels: Record<string, string> = {}): Cycle {
  return {
    request: {
      id: "r", model: "m", inputTokens: 100, maxOutputTokens: 0, streaming: false, slo: { ttftMs: 0, tpotMs: 0 },
      priority: 0, sessionId: "", prefixBlockHashes: [2n ** 64n - 1n], labels: requestLabels,
    },
    endpoints,
    now: new Date("2026-11-22T00:00:00Z"),
    seed: 2n ** 63n + 1n,
  };
}

function configured(params: object): LabelSelectorFilter {
  const f = new LabelSelectorFilter();
  f.configure(JSON.stringify(params));
  return f;
}

test("what the host checks: type, stage method, reads", () => {
  const f = new LabelSelectorFilter();
  assert.equal(f.type, TYPE);
  assert.equal(TYPE, "label-selector-filter");
  assert.equal(typeof f.filter, "function");
  assert.deepEqual(f.reads, ["request", "endpoints.labels"]);
});

test("without a selector every endpoint is kept", () => {
  assert.deepEqual(new LabelSelectorFilter().filter(cycleOf(fleet())), { kept: [0, 1, 2, 3], reason: "no selector: all 4 endpoints kept" });
});

test("match keeps the endpoints carrying every label", () => {
  assert.deepEqual(configured({ match: { pool: "interactive" } }).filter(cycleOf(fleet())), {
    kept: [0, 2],
    reason: "pool=interactive: 2 of 4 endpoints",
  });
  assert.deepEqual(configured({ match: { pool: "interactive", gpu: "a100" } }).filter(cycleOf(fleet())), {
    kept: [2],
    reason: "pool=interactive,gpu=a100: 1 of 4 endpoints",
  });
  assert.deepEqual(configured({ match: { gpu: ["h100", "a100"] } }).filter(cycleOf(fleet())), {
    kept: [0, 1, 2],
    reason: "gpu in (h100|a100): 3 of 4 endpoints",
  });
});

test("matchRequestLabels follows the request's labels, and only when the request has them", () => {
  const f = configured({ match: { pool: "interactive" }, matchRequestLabels: ["tenant"] });
  assert.deepEqual(f.filter(cycleOf(fleet(), { tenant: "globex" })), { kept: [2], reason: "pool=interactive,tenant=globex: 1 of 4 endpoints" });
  assert.deepEqual(f.filter(cycleOf(fleet(), { class: "chat" })).kept, [0, 2]);
  assert.deepEqual(f.filter(cycleOf(fleet(), { tenant: "initech" })), {
    kept: [0, 1, 2, 3],
    reason: "no endpoint matches pool=interactive,tenant=initech: all 4 kept (fallback keep-all)",
  });
  assert.deepEqual(configured({ matchRequestLabels: ["tenant"] }).filter(cycleOf(fleet())).kept, [0, 1, 2, 3]);
});

test("when nothing matches: keep-all (default) or keep-none", () => {
  assert.deepEqual(configured({ match: { pool: "gold" } }).filter(cycleOf(fleet())), {
    kept: [0, 1, 2, 3],
    reason: "no endpoint matches pool=gold: all 4 kept (fallback keep-all)",
  });
  assert.deepEqual(configured({ match: { pool: "gold" }, fallback: "keep-none" }).filter(cycleOf(fleet())), {
    kept: [],
    reason: "no endpoint matches pool=gold",
  });
  assert.deepEqual(configured({ match: { pool: "gold" } }).filter(cycleOf([])), { kept: [], reason: "no endpoint matches pool=gold: all 0 kept (fallback keep-all)" });
});

test("a label that only exists on Object.prototype never matches", () => {
  assert.deepEqual(configured({ match: { constructor: "x" }, fallback: "keep-none" }).filter(cycleOf(fleet())).kept, []);
  assert.deepEqual(configured({ matchRequestLabels: ["toString"] }).filter(cycleOf(fleet())).reason, "no selector: all 4 endpoints kept");
});

test("parameters are validated like the Go plugins'; rejected ones leave the old in force", () => {
  const f = configured({ match: { pool: "interactive" } });
  const rejects = (params: string, message: string) => assert.throws(() => f.configure(params), { message });
  rejects('{"selector": {"pool": "a"}}', 'decoding parameters: json: unknown field "selector"');
  rejects('{"match": "pool=a"}', 'decoding parameters: parameter "match": got JSON string, want object');
  rejects('{"match": {"pool": 1}}', 'parameter "match": label "pool" must map to a string or a non-empty array of strings, got 1');
  rejects('{"match": {"pool": []}}', 'parameter "match": label "pool" must map to a string or a non-empty array of strings, got []');
  rejects('{"match": {"": "a"}}', 'parameter "match": a label name must not be empty');
  rejects('{"matchRequestLabels": ["tenant", "tenant"]}', 'parameter "matchRequestLabels" lists "tenant" twice');
  rejects('{"matchRequestLabels": [""]}', 'parameter "matchRequestLabels" must list non-empty label names, got ""');
  rejects('{"fallback": "keep-some"}', 'parameter "fallback" must be one of ["keep-all" "keep-none"], got "keep-some"');
  rejects("[]", "decoding parameters: want a JSON object, got JSON array");
  assert.deepEqual(f.params.get().match, { pool: "interactive" });
  f.configure("");
  assert.deepEqual(f.params.get(), { match: {}, matchRequestLabels: [], fallback: "keep-all" });
});

test("over the wire, with only the declared fields, the answers are the same", async () => {
  const f = configured({ match: { pool: "interactive" }, matchRequestLabels: ["tenant"] });
  const cycles = [cycleOf(fleet(), { tenant: "acme" }), cycleOf(fleet()), cycleOf(fleet(), { tenant: "nobody" })];
  const wire = await filterOverWire(f, cycles);
  assert.deepEqual(
    wire,
    cycles.map((c) => ({ ok: true, value: f.filter(c) })),
  );
  assert.deepEqual(wire.map((w) => (w.ok ? w.value.kept : [])), [[0], [0, 2], [0, 1, 2, 3]]);
});

test("the reads declaration covers what the filter reads (random cycles)", () => {
  let s = 42;
  const rnd = (n: number) => ((s = (s * 1103515245 + 12345) % 2 ** 31), s % n);
  const values = ["a", "b", "c"];
  const f = configured({ match: { pool: ["a", "b"] }, matchRequestLabels: ["tenant"] });
  for (let k = 0; k < 500; k++) {
    const eps = Array.from({ length: 1 + rnd(8) }, (_, i) => {
      const labels: Record<string, string> = {};
      if (rnd(4) > 0) labels.pool = values[rnd(3)]!;
      if (rnd(2) > 0) labels.tenant = values[rnd(3)]!;
      return ep(i, labels);
    });
    const c = cycleOf(eps, rnd(2) ? { tenant: values[rnd(3)]! } : {});
    assert.deepEqual(f.filter(projectCycle(c, f.reads)), f.filter(c));
  }
});
