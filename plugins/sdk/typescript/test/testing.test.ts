import { test } from "node:test";
import assert from "node:assert/strict";
import { EXCLUDED_EJECTED, EXCLUDED_UNHEALTHY, filterOverWire, projectCycle, type Filter } from "../src/index";
import { cycle, endpoint } from "./helpers";

test("projectCycle keeps what is declared and zeroes the rest", () => {
  const c = cycle(3);
  assert.deepEqual(projectCycle(c, []), c);
  const p = projectCycle(c, ["endpoints.labels", "endpoints.states.waiting"]);
  assert.equal(p.seed, c.seed);
  assert.deepEqual(p.now, c.now);
  assert.equal(p.request.id, "");
  assert.deepEqual(p.request.prefixBlockHashes, []);
  assert.equal(p.endpoints.length, 3);
  assert.deepEqual(p.endpoints[1]!.labels, { pool: "interactive" });
  assert.equal(p.endpoints[2]!.state.waiting, 2);
  assert.equal(p.endpoints[2]!.state.running, 0);
  assert.equal(p.endpoints[2]!.id, "");
  assert.equal(p.endpoints[2]!.prediction.valid, false);
  const r = projectCycle(c, ["request"]);
  assert.equal(r.request.id, "req-1");
  assert.deepEqual(r.request.prefixBlockHashes, [], "the hashes are a path of their own");
  assert.deepEqual(projectCycle(c, ["request.prefix_block_hashes"]).request.prefixBlockHashes, c.request.prefixBlockHashes);
  assert.throws(() => projectCycle(c, ["endpoints.state"]), /unknown read path "endpoints.state"/);
});

test("filterOverWire answers like the host sees it", async () => {
  const f: Filter = { type: "f", description: "", reads: ["endpoints.ids"], filter: (c) => ({ kept: c.endpoints.flatMap((e, i) => (e.id.endsWith(".1:8000") ? [i] : [])) }) };
  assert.deepEqual(await filterOverWire(f, [cycle(3)]), [{ ok: true, value: { kept: [1], reason: "" } }]);
});

test("the excluded endpoints reach only a stage that reads them", () => {
  const excluded = [{ id: "x:8000", labels: { zone: "z1" }, reason: EXCLUDED_UNHEALTHY }];
  const c = cycle(2, { excluded });
  assert.deepEqual(projectCycle(c, []).excluded, excluded, "no declaration means everything");
  assert.deepEqual(projectCycle(c, ["endpoints.excluded"]).excluded, excluded);
  assert.equal(projectCycle(c, ["endpoints.excluded"]).endpoints[0]!.id, "");
  assert.equal("excluded" in projectCycle(c, ["endpoints.ids", "endpoints.labels"]), false);
});

test("a filter judging zones sees each cycle's excluded endpoints over the wire", async () => {
  // Keeps the candidates whose zone has no member out of the rotation.
  const f: Filter = {
    type: "healthy-zone-filter",
    description: "",
    reads: ["endpoints.labels", "endpoints.excluded"],
    filter: (c) => {
      const failing = new Set((c.excluded ?? []).map((x) => x.labels["zone"]));
      return {
        kept: c.endpoints.flatMap((e, i) => (failing.has(e.labels["zone"]) ? [] : [i])),
        reason: `${c.excluded?.length ?? 0} excluded`,
      };
    },
  };
  const eps = ["z0", "z1", "z2"].map((zone, i) => endpoint(i, { zone }));
  const base = cycle(0, { endpoints: eps });
  assert.deepEqual(await filterOverWire(f, [{ ...base, excluded: [{ id: "x", labels: { zone: "z1" }, reason: EXCLUDED_EJECTED }] }, base]), [
    { ok: true, value: { kept: [0, 2], reason: "1 excluded" } },
    { ok: true, value: { kept: [0, 1, 2], reason: "0 excluded" } },
  ]);
});
