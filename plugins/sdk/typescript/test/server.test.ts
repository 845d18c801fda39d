import { test } from "node:test";
import assert from "node:assert/strict";
import { decodeCycleBatch, encodeCycleBatch } from "../src/convert";
import { Code, StatusError } from "../src/status";
import {
  admitHandler,
  configure,
  filterHandler,
  info,
  pickHandler,
  produceHandler,
  scoreHandler,
  stageOf,
} from "../src/server";
import { Params, Stage, checkRange, type Cycle, type Filter, type FilterVerdict } from "../src/index";
import { cycle } from "./helpers";

const batch = (...cs: Cycle[]) => decodeCycleBatch(encodeCycleBatch(cs));

function filterOf(f: (c: Cycle) => FilterVerdict | Promise<FilterVerdict>): Filter {
  return { type: "t", description: "d", filter: f };
}

test("a filter's verdicts come back per cycle, in order", () => {
  const h = filterHandler(filterOf((c) => ({ kept: [c.endpoints.length - 1], reason: `n=${c.endpoints.length}` })));
  const resp = h(batch(cycle(3), cycle(5)));
  assert.ok(!(resp instanceof Promise));
  assert.deepEqual(resp.results, [
    { status: undefined, kept: [2], reason: "n=3" },
    { status: undefined, kept: [4], reason: "n=5" },
  ]);
});

test("a thrown error is that cycle's error; a StatusError keeps its code", () => {
  const h = filterHandler(
    filterOf((c) => {
      if (c.request.model === "plain") throw new Error("boom");
      if (c.request.model === "status") throw new StatusError(Code.Unavailable, "not ready");
      if (c.request.model === "string") throw "oops";
      return { kept: [0] };
    }),
  );
  const mk = (model: string) => {
    const c = cycle(2);
    c.request.model = model;
    return c;
  };
  const resp = h(batch(mk("plain"), mk("status"), mk("string"), mk("ok")));
  assert.ok(!(resp instanceof Promise));
  assert.deepEqual(resp.results[0], { status: { code: Code.Error, message: "boom" }, kept: [], reason: "" });
  assert.deepEqual(resp.results[1]!.status, { code: Code.Unavailable, message: "not ready" });
  assert.deepEqual(resp.results[2]!.status, { code: Code.Error, message: 'stage threw "oops"' });
  assert.deepEqual(resp.results[3], { status: undefined, kept: [0], reason: "" });
});

test("answers the host would reject are errors here, with the host's words", () => {
  const out = (kept: unknown) =>
    (filterHandler(filterOf(() => ({ kept }) as FilterVerdict))(batch(cycle(3))) as { results: { status?: { message: string } }[] })
      .results[0]!.status?.message;
  assert.equal(out([0, 3]), "endpoint index 3 out of range: the cycle has 3 endpoints");
  assert.equal(out([-1]), "endpoint index -1 out of range: the cycle has 3 endpoints");
  assert.equal(out([1.5]), "kept: endpoint index 1.5 is not an integer");
  assert.match(out(undefined)!, /must be an array/);
  const scores = scoreHandler({ type: "s", description: "", score: () => [1] })(batch(cycle(2)));
  assert.ok(!(scores instanceof Promise));
  assert.equal(scores.results[0]!.status?.message, "scorer returned 1 scores for 2 endpoints");
  const preds = produceHandler({ type: "p", description: "", produce: () => [], observe: () => ({ accepted: 0 }) })(batch(cycle(1)));
  assert.ok(!(preds instanceof Promise));
  assert.equal(preds.results[0]!.status?.message, "producer returned 0 predictions for 1 endpoints");
});

test("a malformed cycle is INVALID_ARGUMENT and never reaches the stage", () => {
  let calls = 0;
  const h = filterHandler(filterOf(() => ({ kept: [], reason: String(++calls) })));
  // ids say 2 endpoints, count says 3
  const c = cycle(2);
  const buf = encodeCycleBatch([c]);
  const b = decodeCycleBatch(buf);
  b.cycles[0]!.endpoints!.count = 3;
  const resp = h(b);
  assert.ok(!(resp instanceof Promise));
  assert.equal(resp.results[0]!.status?.code, Code.InvalidArgument);
  assert.match(resp.results[0]!.status!.message, /^invalid cycle: column "ids" has 2 entries for 3 endpoints$/);
  assert.equal(calls, 0);
});

test("async stages answer in order", async () => {
  const h = filterHandler(
    filterOf(async (c) => {
      await new Promise((r) => setTimeout(r, c.endpoints.length === 1 ? 20 : 1));
      if (c.endpoints.length === 3) throw new Error("late failure");
      return { kept: [0], reason: String(c.endpoints.length) };
    }),
  );
  const resp = await h(batch(cycle(1), cycle(2), cycle(3)));
  assert.deepEqual(resp.results.map((r) => r.reason || r.status?.message), ["1", "2", "late failure"]);
});

test("picker: one score set per cycle, else INVALID_ARGUMENT", () => {
  const h = pickHandler({ type: "p", description: "", pick: (_c, s) => s.map((_, i) => i).sort((a, b) => s[b]! - s[a]!) });
  const ok = h(decodeCycleBatch(encodeCycleBatch([cycle(3)], [[0.1, 0.9, 0.5]]), true));
  assert.ok(!(ok instanceof Promise));
  assert.deepEqual(ok.results[0]!.order, [1, 2, 0]);
  const short = h(decodeCycleBatch(encodeCycleBatch([cycle(1), cycle(1)], [[1]]), true));
  assert.ok(!(short instanceof Promise));
  assert.deepEqual(short.results[1]!.status, { code: Code.InvalidArgument, message: "pick request has fewer score sets than cycles" });
});

test("admitter verdicts", () => {
  const h = admitHandler({ type: "a", description: "", admit: (c) => ({ admitted: c.request.priority >= 0, reason: "prio" }) });
  const resp = h(batch(cycle(1)));
  assert.ok(!(resp instanceof Promise));
  assert.deepEqual(resp.results[0], { status: undefined, admitted: false, reason: "prio" });
});

test("Configure: rejected parameters are INVALID_ARGUMENT and the old ones stay", () => {
  const f = {
    ...filterOf(() => ({ kept: [] })),
    params: new Params(() => ({ threshold: 0.5 }), (p: { threshold: number }) => checkRange("threshold", p.threshold, 0, 1)),
    configure(p: string) {
      this.params.configure(p);
    },
  };
  assert.deepEqual(configure(f, Buffer.from('{"threshold": 0.7}')), { status: undefined, admitsUnsheddable: false });
  assert.deepEqual(configure(f, Buffer.from('{"treshold": 0.7}')), {
    status: { code: Code.InvalidArgument, message: 'decoding parameters: json: unknown field "treshold"' },
    admitsUnsheddable: false,
  });
  assert.deepEqual(configure(f, Buffer.from('{"threshold": 2}')), {
    status: { code: Code.InvalidArgument, message: 'parameter "threshold" must be in [0, 1], got 2' },
    admitsUnsheddable: false,
  });
  assert.equal(f.params.get().threshold, 0.7);
  assert.deepEqual(configure(f, new Uint8Array()), { status: undefined, admitsUnsheddable: false });
  assert.equal(f.params.get().threshold, 0.5);
  // The kit serves one instance: a named one (multi-instance hosts only) is refused, nothing changes.
  assert.deepEqual(configure(f, Buffer.from('{"threshold": 0.9}'), "strict#1"), {
    status: { code: Code.InvalidArgument, message: 'instance "strict#1": this plugin serves a single instance' },
    admitsUnsheddable: false,
  });
  assert.equal(f.params.get().threshold, 0.5);
});

test("Configure: an admitter's admitsUnsheddable is answered for the parameters it set", () => {
  const a = {
    type: "gate",
    description: "",
    unread: false,
    configure(p: string) {
      this.unread = (JSON.parse(p || "{}") as { unread?: boolean }).unread === true;
    },
    admitsUnsheddable() {
      return this.unread;
    },
    admit: () => ({ admitted: true }),
  };
  assert.deepEqual(configure(a, Buffer.from('{"unread": true}')), { status: undefined, admitsUnsheddable: true });
  assert.deepEqual(configure(a, Buffer.from('{"unread": false}')), { status: undefined, admitsUnsheddable: false });
});

test("a plugin without configure takes no parameters", () => {
  const f = filterOf(() => ({ kept: [] }));
  assert.deepEqual(configure(f, Buffer.from("{}")), { status: undefined, admitsUnsheddable: false });
  assert.deepEqual(configure(f, Buffer.from("")), { status: undefined, admitsUnsheddable: false });
  assert.equal(configure(f, Buffer.from('{"x": 1}')).status?.code, Code.InvalidArgument);
});

test("the stage comes from the methods; GetInfo reports it", () => {
  const f = filterOf(() => ({ kept: [] }));
  assert.equal(stageOf(f), Stage.Filter);
  assert.equal(stageOf({ type: "p", description: "", produce: () => [], observe: () => ({ accepted: 0 }) }), Stage.Producer);
  assert.throws(() => stageOf({ type: "x", description: "" } as unknown as Filter), /implements no stage/);
  const both = { ...f, score: () => [] };
  assert.throws(() => stageOf(both), /several stages/);
  assert.equal(stageOf(both, Stage.Scorer), Stage.Scorer);
  assert.throws(() => stageOf(f, Stage.Picker), /does not implement stage Picker/);
  assert.deepEqual(info({ ...f, reads: ["endpoints.labels"] }, Stage.Filter, "1.0.0"), {
    type: "t", stage: 2, version: "1.0.0", description: "d", reads: ["endpoints.labels"], multiInstance: false, rounds: false,
  });
});
