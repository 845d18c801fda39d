// What every stage service does with a batch (Go: serveEach and guard in server.go): decode each
// cycle, call the stage, hold the answer to the host's rules, and keep each cycle's failure to
// that cycle. The stage services (server.ts, flow.ts) are built on it.

import { cycleFromWire, type CycleBatch, type WireCycle } from "./convert";
import type { Status } from "./gen/foresight/v1/types";
import { statusOf } from "./status";
import type { Answer, Cycle } from "./types";

/** Result is one cycle's answer within a batch: a value, or the stage's error for that cycle. */
export type Result<T> = { ok: true; value: T } | { ok: false; status: Status };

const fail = (err: unknown): { ok: false; status: Status } => ({ ok: false, status: statusOf(err) });

function isPromise<T>(v: Answer<T>): v is Promise<T> {
  return typeof (v as Promise<T> | undefined)?.then === "function";
}

/**
 * serveEach answers every decodable cycle with call, one after the other, and every malformed one
 * with its decoding error; `check` holds each answer to the rules the host applies (a failing
 * answer becomes that cycle's error). A thrown StatusError keeps its code; anything else thrown
 * answers Code.Error with its message (Go: serveEach and guard). The answers come back at once
 * unless the stage answered with a promise.
 */
export function serveEach<T>(
  cycles: readonly WireCycle[],
  call: (i: number, c: Cycle) => Answer<T>,
  check: (c: Cycle, v: T) => void,
): Result<T>[] | Promise<Result<T>[]> {
  const out: Result<T>[] = [];
  for (let i = 0; i < cycles.length; i++) {
    let c: Cycle;
    let v: Answer<T>;
    try {
      c = cycleFromWire(cycles[i]!);
      v = call(i, c);
    } catch (err) {
      out.push(fail(err));
      continue;
    }
    if (isPromise(v)) return finishAsync(cycles, call, check, out, i, c, v);
    out.push(checked(c, v, check));
  }
  return out;
}

async function finishAsync<T>(
  cycles: readonly WireCycle[],
  call: (i: number, c: Cycle) => Answer<T>,
  check: (c: Cycle, v: T) => void,
  out: Result<T>[],
  i: number,
  c: Cycle,
  first: Promise<T>,
): Promise<Result<T>[]> {
  try {
    out.push(checked(c, await first, check));
  } catch (err) {
    out.push(fail(err));
  }
  for (let k = i + 1; k < cycles.length; k++) {
    try {
      const ck = cycleFromWire(cycles[k]!);
      out.push(checked(ck, await call(k, ck), check));
    } catch (err) {
      out.push(fail(err));
    }
  }
  return out;
}

function checked<T>(c: Cycle, v: T, check: (c: Cycle, v: T) => void): Result<T> {
  try {
    check(c, v);
    return { ok: true, value: v };
  } catch (err) {
    return fail(err);
  }
}

/** then applies f to an answer, now or when it arrives. */
export function then<A, B>(a: A | Promise<A>, f: (a: A) => B): B | Promise<B> {
  return a instanceof Promise ? a.then(f) : f(a);
}

/** BatchHandler answers one decoded batch request: at once, or with a promise. */
export type BatchHandler<Resp> = (batch: CycleBatch) => Resp | Promise<Resp>;

/** checkReason throws when a verdict's reason is neither absent nor a string. */
export function checkReason(reason: unknown): void {
  if (reason !== undefined && typeof reason !== "string") throw new Error(`reason must be a string, got ${typeof reason}`);
}
