import { test } from "node:test";
import assert from "node:assert/strict";
import { filterOverWire, projectCycle, type Filter } from "../src/index";
import { cycle } from "./helpers";

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
