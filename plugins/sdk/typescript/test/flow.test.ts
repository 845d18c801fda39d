// Flow control's two stages, detector and order: their services' per-cycle semantics without gRPC
// (the Go SDK's detectorServer and orderServer).
import { test } from "node:test";
import assert from "node:assert/strict";
import { decodeCycleBatch, encodeCycleBatch } from "../src/convert";
import { detectHandler, orderHandler } from "../src/flow";
import { DetectResult } from "../src/gen/foresight/v1/detector";
import { info, stageOf } from "../src/server";
import { Code, Stage, type Cycle, type Detector, type OrderKey, type Orderer, type SaturationVerdict } from "../src/index";
import { cycle } from "./helpers";

const batch = (...cs: Cycle[]) => decodeCycleBatch(encodeCycleBatch(cs));

const withModel = (c: Cycle, model: string): Cycle => ({ ...c, request: { ...c.request, model } });

/** queueDetector: room = 4 − waiting (helpers' endpoint i waits i); the model picks the shape of a broken answer. */
const queueDetector: Detector = {
  type: "queue-detector",
  description: "room for 4 − waiting",
  detect(c): SaturationVerdict {
    const room = c.endpoints.map((e) => 4 - e.state.waiting);
    switch (c.request.model) {
      case "wait":
        return { room, waitMs: 250, reason: "engines-full" };
      case "short":
        return { room: room.slice(1) };
      case "float":
        return { room: room.map(() => 1.5) };
      case "huge":
        return { room: room.map(() => 2 ** 40) };
      case "nan-wait":
        return { room, waitMs: NaN };
      case "slots":
        return { room, slots: [8, 0, 2 ** 40] };
      case "slots-empty":
        return { room, slots: [] };
      case "slots-short":
        return { room, slots: [8] };
      case "slots-negative":
        return { room, slots: room.map(() => -1) };
      case "slots-float":
        return { room, slots: room.map(() => 1.5) };
      case "slots-string":
        return { room, slots: "8" as unknown as number[] };
      case "undefined":
        return undefined as unknown as SaturationVerdict;
    }
    return { room, reason: room.some((r) => r > 0) ? undefined : "engines-full" };
  },
};

test("a detector's verdicts come back per cycle, in order", () => {
  const resp = detectHandler(queueDetector)(batch(cycle(6), cycle(0), withModel(cycle(6), "wait")));
  assert.ok(!(resp instanceof Promise));
  assert.deepEqual(resp.results, [
    // 4 − [0..5] = 4, 3, 2, 1, 0, −1: the negative count travels as 0; some room and no estimate: wait 0.
    { status: undefined, room: [4, 3, 2, 1, 0, 0], waitMs: 0, reason: "", slots: [] },
    // No endpoints: no room anywhere and no estimate: the wait is unknown (−1).
    { status: undefined, room: [], waitMs: -1, reason: "engines-full", slots: [] },
    { status: undefined, room: [4, 3, 2, 1, 0, 0], waitMs: 250, reason: "engines-full", slots: [] },
  ]);
});

test("detector answers the host would reject are that cycle's error, with the Go SDK's words", () => {
  const tests: { model: string; n: number; room?: number[]; message?: string }[] = [
    { model: "short", n: 2, message: "detector returned 1 room counts for 2 endpoints" },
    { model: "float", n: 1, message: "detector returned room[0] = 1.5: want an integer" },
    { model: "nan-wait", n: 1, message: "detector returned waitMs = NaN: want a number of milliseconds" },
    { model: "undefined", n: 1, message: "detector must return { room, waitMs, reason }, got undefined" },
    { model: "slots-short", n: 2, message: "detector returned 1 slot counts for 2 endpoints" },
    { model: "slots-negative", n: 1, message: "detector returned slots[0] = -1: want an integer >= 0" },
    { model: "slots-float", n: 1, message: "detector returned slots[0] = 1.5: want an integer >= 0" },
    { model: "slots-string", n: 1, message: "detector must return slots as an array of counts, got string" },
    // 2^40 is beyond the wire's uint32: its largest value.
    { model: "huge", n: 1, room: [0xffff_ffff] },
  ];
  for (const tc of tests) {
    const resp = detectHandler(queueDetector)(batch(withModel(cycle(tc.n), tc.model), cycle(1)));
    assert.ok(!(resp instanceof Promise));
    const [r, next] = resp.results;
    if (tc.message === undefined) {
      assert.deepEqual(r!.room, tc.room, tc.model);
    } else {
      assert.deepEqual(r, { status: { code: Code.Error, message: tc.message }, room: [], waitMs: 0, reason: "", slots: [] }, tc.model);
    }
    assert.deepEqual(next!.room, [4], `${tc.model}: the next cycle is answered`);
  }
});

test("a detector's slot counts travel one per endpoint, capped at the wire's uint32", () => {
  const resp = detectHandler(queueDetector)(batch(withModel(cycle(3), "slots"), withModel(cycle(2), "slots-empty")));
  assert.ok(!(resp instanceof Promise));
  const want = [
    // 0: an endpoint the detector does not know; 2^40 is beyond the wire's uint32: its largest value.
    { status: undefined, room: [4, 3, 2], waitMs: 0, reason: "", slots: [8, 0, 0xffff_ffff] },
    // Empty: the detector believes nothing.
    { status: undefined, room: [4, 3], waitMs: 0, reason: "", slots: [] },
  ];
  assert.deepEqual(resp.results, want);
  // As the host reads them: through the wire.
  assert.deepEqual(resp.results.map((r) => DetectResult.decode(DetectResult.encode(r).finish())), want);
});

test("a malformed cycle is INVALID_ARGUMENT for a detector too", () => {
  const b = batch(cycle(2));
  b.cycles[0]!.endpoints!.count = 3;
  const resp = detectHandler(queueDetector)(b);
  assert.ok(!(resp instanceof Promise));
  assert.equal(resp.results[0]!.status?.code, Code.InvalidArgument);
});

/**
 * deadlineOrder: EDF, rank = the TTFT deadline in Unix ns (helpers' cycle: now + 800 ms), hopeless
 * after it, flow = the tenant label; the model picks the broken answers.
 */
const deadlineOrder: Orderer = {
  type: "deadline-order",
  description: "earliest TTFT deadline first",
  async order(c): Promise<OrderKey> {
    const deadline = new Date(c.now.getTime() + c.request.slo.ttftMs);
    switch (c.request.model) {
      case "number":
        return { rank: 42 };
      case "unsafe":
        return { rank: 2 ** 60 };
      case "overflow":
        return { rank: 2n ** 63n };
      case "bad-date":
        return { rank: 1n, hopelessAfter: new Date("not a date") };
      case "flow":
        return { rank: 1n, flow: 7 as unknown as string };
    }
    return { rank: BigInt(deadline.getTime()) * 1_000_000n, hopelessAfter: deadline, flow: c.request.labels.tenant };
  },
};

test("an orderer's keys come back per cycle, in order, with the answers that cannot travel refused", async () => {
  const models = ["", "number", "unsafe", "overflow", "bad-date", "flow"];
  const resp = await orderHandler(deadlineOrder)(batch(...models.map((m) => withModel(cycle(1), m))));
  const deadline = new Date("2026-11-22T10:11:13.145Z"); // now 10:11:12.345 + 800 ms
  const err = (message: string) => ({ status: { code: Code.Error, message }, rank: 0n, hopelessAfter: undefined, flow: "" });
  assert.deepEqual(resp.results, [
    { status: undefined, rank: 1_795_342_273_145_000_000n, hopelessAfter: deadline, flow: "acme" },
    // A number rank is fine while it is a safe integer; no hopelessAfter: never hopeless; no flow: the host's.
    { status: undefined, rank: 42n, hopelessAfter: undefined, flow: "" },
    err(`orderer returned rank ${2 ** 60}: want an int64 (a bigint in [-2^63, 2^63) or a safe-integer number)`),
    err(`orderer returned rank ${2n ** 63n}: want an int64 (a bigint in [-2^63, 2^63) or a safe-integer number)`),
    err("orderer returned hopelessAfter Invalid Date: want a valid Date, or undefined for never"),
    err("orderer returned flow 7: want a string"),
  ]);
});

test("the flow stages come from their methods; GetInfo reports them", () => {
  assert.equal(stageOf(queueDetector), Stage.Detector);
  assert.equal(stageOf(deadlineOrder), Stage.Order);
  assert.equal(info(queueDetector, Stage.Detector, "1.0.0").stage, 6);
  assert.equal(info(deadlineOrder, Stage.Order, "1.0.0").stage, 7);
});
