// Flow control's two stages, the saturation detector and the ordering policy (Go: detectorServer
// and orderServer in server.go, roomToProto and orderKeyToProto in convert.go): their answers'
// checks, their wire responses and their batch handlers. server.ts registers their services.

import { checkReason, serveEach, then, type BatchHandler, type Result } from "./batch";
import type { DetectResponse, DetectResult } from "./gen/foresight/v1/detector";
import type { OrderResponse, OrderResult } from "./gen/foresight/v1/order";
import type { Cycle, Detector, OrderKey, Orderer, SaturationVerdict } from "./types";

/** MAX_COUNT is the largest room or slot count the wire carries (a uint32); the host reads no more than 2^31 − 1. */
const MAX_COUNT = 0xffff_ffff;

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * checkSaturationVerdict throws, naming the problem, when v is not a verdict for c: one integer
 * room count per endpoint (another length is that cycle's error, as in the Go SDK), a wait that is
 * a number when given, a reason that is a string when given, and no slot counts or one integer ≥ 0
 * per endpoint.
 */
export function checkSaturationVerdict(c: Cycle, v: SaturationVerdict): void {
  if (typeof v !== "object" || v === null) throw new Error(`detector must return { room, waitMs, reason }, got ${String(v)}`);
  if (!Array.isArray(v.room)) throw new Error(`detector must return room as an array of counts, got ${typeof v.room}`);
  if (v.room.length !== c.endpoints.length) {
    throw new Error(`detector returned ${v.room.length} room counts for ${c.endpoints.length} endpoints`);
  }
  v.room.forEach((r, i) => {
    // 1.5 is refused rather than truncated: a count that is not one is a slip worth seeing.
    if (!Number.isInteger(r)) throw new Error(`detector returned room[${i}] = ${String(r)}: want an integer`);
  });
  if (v.waitMs !== undefined && (typeof v.waitMs !== "number" || Number.isNaN(v.waitMs))) {
    throw new Error(`detector returned waitMs = ${String(v.waitMs)}: want a number of milliseconds`);
  }
  checkReason(v.reason);
  if (v.slots === undefined) return;
  if (!Array.isArray(v.slots)) throw new Error(`detector must return slots as an array of counts, got ${typeof v.slots}`);
  if (v.slots.length !== 0 && v.slots.length !== c.endpoints.length) {
    throw new Error(`detector returned ${v.slots.length} slot counts for ${c.endpoints.length} endpoints`);
  }
  v.slots.forEach((s, i) => {
    if (!Number.isInteger(s) || s < 0) throw new Error(`detector returned slots[${i}] = ${String(s)}: want an integer >= 0`);
  });
}

/**
 * checkOrderKey throws, naming the field, when k cannot travel: a rank that is not an int64 (a
 * bigint in range, or a safe-integer number), a hopelessAfter that is not a valid Date, a flow
 * that is not a string.
 */
export function checkOrderKey(_c: Cycle, k: OrderKey): void {
  if (typeof k !== "object" || k === null) throw new Error(`orderer must return { rank, hopelessAfter, flow }, got ${String(k)}`);
  const r = k.rank;
  const ok = typeof r === "bigint" ? r >= INT64_MIN && r <= INT64_MAX : Number.isSafeInteger(r);
  if (!ok) {
    throw new Error(`orderer returned rank ${String(r)}: want an int64 (a bigint in [-2^63, 2^63) or a safe-integer number)`);
  }
  const h = k.hopelessAfter;
  if (h !== undefined && !(h instanceof Date && !Number.isNaN(h.getTime()))) {
    throw new Error(`orderer returned hopelessAfter ${String(h)}: want a valid Date, or undefined for never`);
  }
  if (k.flow !== undefined && typeof k.flow !== "string") throw new Error(`orderer returned flow ${String(k.flow)}: want a string`);
}

/**
 * roomToProto returns the counts as they travel: a negative one (a stage's slip) as 0, full, as
 * the Go SDK sends it; one beyond the wire's uint32 as its largest value.
 */
function roomToProto(room: readonly number[]): number[] {
  return room.map((r) => Math.min(Math.max(r, 0), MAX_COUNT));
}

/** slotsToProto returns the slot counts as they travel: none when absent; one beyond the wire's uint32 as its largest value. */
function slotsToProto(slots: readonly number[] | undefined): number[] {
  return (slots ?? []).map((s) => Math.min(s, MAX_COUNT));
}

/** waitOf returns the verdict's wait, or when it has none 0 if some endpoint has room and −1 (unknown) if none has. */
function waitOf(v: SaturationVerdict): number {
  return v.waitMs ?? (v.room.some((r) => r > 0) ? 0 : -1);
}

export function detectResponse(rs: Result<SaturationVerdict>[]): DetectResponse {
  return {
    results: rs.map((r): DetectResult =>
      r.ok
        ? { status: undefined, room: roomToProto(r.value.room), waitMs: waitOf(r.value), reason: r.value.reason ?? "", slots: slotsToProto(r.value.slots) }
        : { status: r.status, room: [], waitMs: 0, reason: "", slots: [] },
    ),
  };
}

export function orderResponse(rs: Result<OrderKey>[]): OrderResponse {
  return {
    results: rs.map((r): OrderResult =>
      r.ok
        ? { status: undefined, rank: BigInt(r.value.rank), hopelessAfter: r.value.hopelessAfter, flow: r.value.flow ?? "" }
        : { status: r.status, rank: 0n, hopelessAfter: undefined, flow: "" },
    ),
  };
}

export function detectHandler(impl: Detector): BatchHandler<DetectResponse> {
  return (b) => then(serveEach(b.cycles, (_i, c) => impl.detect(c), checkSaturationVerdict), detectResponse);
}

export function orderHandler(impl: Orderer): BatchHandler<OrderResponse> {
  return (b) => then(serveEach(b.cycles, (_i, c) => impl.order(c), checkOrderKey), orderResponse);
}
