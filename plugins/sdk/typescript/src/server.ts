// The Foresight services a plugin serves (Go: server.go, stream.go): PluginService and the
// stage's service. Shims only: they translate wire requests into stage calls and answers back
// (batch.ts holds what every stage does with a batch; flow.ts, flow control's two stages).

import * as grpc from "@grpc/grpc-js";
import {
  AdmitterServiceService,
  type AdmitRequest,
  type AdmitResponse,
  type AdmitResult,
} from "./gen/foresight/v1/admitter";
import {
  FilterServiceService,
  type FilterRequest,
  type FilterResponse,
  type FilterResult,
} from "./gen/foresight/v1/filter";
import {
  SaturationDetectorServiceService,
  type DetectRequest,
  type DetectResponse,
} from "./gen/foresight/v1/detector";
import { OrderServiceService, type OrderRequest, type OrderResponse } from "./gen/foresight/v1/order";
import { PickerServiceService, type PickRequest, type PickResponse, type PickResult } from "./gen/foresight/v1/picker";
import {
  PluginServiceService,
  type ConfigureRequest,
  type ConfigureResponse,
  type GetInfoRequest,
  type GetInfoResponse,
} from "./gen/foresight/v1/plugin";
import {
  ProducerServiceService,
  type ObserveRequest,
  type ObserveResponse,
  type ProduceRequest,
  type ProduceResponse,
  type ProduceResult,
} from "./gen/foresight/v1/producer";
import { ScorerServiceService, type ScoreRequest, type ScoreResponse, type ScoreResult } from "./gen/foresight/v1/scorer";
import { checkReason, serveEach, then, type BatchHandler, type Result } from "./batch";
import { batchOf, cycleFromWire, predictionsToProto, sampleFromProto, statsToProto } from "./convert";
import { detectHandler, orderHandler } from "./flow";
import { log } from "./log";
import { afterScores, pickRound } from "./rounds";
import { decodeParams } from "./params";
import { Code, StatusError, invalidArgument, statusOf } from "./status";
import {
  Stage,
  type Answer,
  type Admitter,
  type AdmitVerdict,
  type AnyStage,
  type Cycle,
  type Detector,
  type Filter,
  type FilterVerdict,
  type ObserveResult,
  type Orderer,
  type Picker,
  type Plugin,
  type Prediction,
  type Producer,
  type Scorer,
} from "./types";

export { serveEach, type BatchHandler, type Result } from "./batch";

// --- the answers' checks (the host applies the same ones; failing here names the problem) ------

function checkIndices(what: string, idx: unknown, n: number): asserts idx is number[] {
  if (!Array.isArray(idx)) throw new Error(`${what} must be an array of endpoint indices, got ${typeof idx}`);
  for (const k of idx) {
    if (!Number.isInteger(k)) throw new Error(`${what}: endpoint index ${String(k)} is not an integer`);
    if (k < 0 || k >= n) throw new Error(`endpoint index ${k} out of range: the cycle has ${n} endpoints`);
  }
}

export function checkFilterVerdict(c: Cycle, v: FilterVerdict): void {
  if (typeof v !== "object" || v === null) throw new Error(`filter must return { kept, reason }, got ${String(v)}`);
  checkIndices("kept", v.kept, c.endpoints.length);
  checkReason(v.reason);
}

export function checkScores(c: Cycle, s: number[]): void {
  if (!Array.isArray(s)) throw new Error(`scorer must return an array of numbers, got ${typeof s}`);
  if (s.length !== c.endpoints.length) throw new Error(`scorer returned ${s.length} scores for ${c.endpoints.length} endpoints`);
  for (const x of s) if (typeof x !== "number") throw new Error(`scorer returned a ${typeof x} among its scores`);
}

export function checkAdmitVerdict(_c: Cycle, v: AdmitVerdict): void {
  if (typeof v !== "object" || v === null || typeof v.admitted !== "boolean") {
    throw new Error(`admitter must return { admitted: boolean, reason }, got ${JSON.stringify(v)}`);
  }
  checkReason(v.reason);
}

export function checkOrder(c: Cycle, order: number[]): void {
  checkIndices("order", order, c.endpoints.length);
}

export function checkPredictions(c: Cycle, p: Prediction[]): void {
  if (!Array.isArray(p) || p.length !== c.endpoints.length) {
    throw new Error(`producer returned ${Array.isArray(p) ? p.length : typeof p} predictions for ${c.endpoints.length} endpoints`);
  }
}

// --- responses ---------------------------------------------------------------------------------

export function filterResponse(rs: Result<FilterVerdict>[]): FilterResponse {
  return {
    results: rs.map((r): FilterResult =>
      r.ok ? { status: undefined, kept: r.value.kept, reason: r.value.reason ?? "" } : { status: r.status, kept: [], reason: "" },
    ),
    chains: [],
  };
}

/** Scored is a scorer's answer for one cycle: its scores and, in a round, its after-scores. */
export interface Scored {
  scores: number[];
  after?: number[];
}

export function scoreResponse(rs: Result<Scored>[]): ScoreResponse {
  return {
    results: rs.map((r): ScoreResult =>
      r.ok ? { status: undefined, scores: r.value.scores, scoresAfter: r.value.after ?? [] } : { status: r.status, scores: [], scoresAfter: [] },
    ),
  };
}

export function admitResponse(rs: Result<AdmitVerdict>[]): AdmitResponse {
  return {
    results: rs.map((r): AdmitResult =>
      r.ok
        ? { status: undefined, admitted: r.value.admitted, reason: r.value.reason ?? "" }
        : { status: r.status, admitted: false, reason: "" },
    ),
  };
}

export function pickResponse(rs: Result<number[]>[]): PickResponse {
  return { results: rs.map((r): PickResult => (r.ok ? { status: undefined, order: r.value } : { status: r.status, order: [] })) };
}

export function produceResponse(rs: Result<Prediction[]>[]): ProduceResponse {
  return {
    results: rs.map((r): ProduceResult =>
      r.ok ? { status: undefined, predictions: predictionsToProto(r.value) } : { status: r.status, predictions: undefined },
    ),
  };
}

// --- the stage handlers, as plain functions of a decoded batch (testable without gRPC) ---------

export function filterHandler(impl: Filter): BatchHandler<FilterResponse> {
  return (b) => then(serveEach(b.cycles, (_i, c) => impl.filter(c), checkFilterVerdict), filterResponse);
}

/** scored answers one cycle: the scorer's scores, checked, then in a round its after-scores (afterScores). */
function scored(impl: Scorer, c: Cycle): Answer<Scored> {
  const withAfter = (scores: number[]): Answer<Scored> => {
    checkScores(c, scores);
    const after = afterScores(impl, c, scores);
    return after instanceof Promise ? after.then((a) => ({ scores, after: a })) : { scores, after };
  };
  const scores = impl.score(c);
  return scores instanceof Promise ? scores.then(withAfter) : withAfter(scores);
}

export function scoreHandler(impl: Scorer): BatchHandler<ScoreResponse> {
  return (b) => then(serveEach(b.cycles, (_i, c) => scored(impl, c), () => {}), scoreResponse);
}

export function admitHandler(impl: Admitter): BatchHandler<AdmitResponse> {
  return (b) => then(serveEach(b.cycles, (_i, c) => impl.admit(c), checkAdmitVerdict), admitResponse);
}

/**
 * pickHandler answers a batch's cycles in order, placing a round's as the round's contract says
 * (pickRound): every picker this kit serves places rounds.
 */
export function pickHandler(impl: Picker): BatchHandler<PickResponse> {
  return (b) => {
    const out: Result<number[]>[] = new Array(b.cycles.length);
    const cycles = b.cycles.map((w, i): Cycle | undefined => {
      try {
        return cycleFromWire(w);
      } catch (err) {
        out[i] = { ok: false, status: statusOf(err) };
        return undefined;
      }
    });
    const answer = (i: number, c: Cycle, v: number[]): number[] | undefined => {
      try {
        checkOrder(c, v);
      } catch (err) {
        out[i] = { ok: false, status: statusOf(err) };
        return undefined;
      }
      out[i] = { ok: true, value: v };
      return v;
    };
    const failed = (i: number, err: unknown): undefined => {
      out[i] = { ok: false, status: statusOf(err) };
      return undefined;
    };
    const done = pickRound(cycles, b.scores, b.scoresAfter, (i, c, scores) => {
      if (c === undefined) return undefined; // did not decode: out[i] holds its error
      let order: Answer<number[]>;
      try {
        if (scores === undefined) throw new StatusError(Code.InvalidArgument, "pick request has fewer score sets than cycles");
        order = impl.pick(c, scores);
      } catch (err) {
        return failed(i, err);
      }
      return order instanceof Promise ? order.then((v) => answer(i, c, v), (err: unknown) => failed(i, err)) : answer(i, c, order);
    });
    return done instanceof Promise ? done.then(() => pickResponse(out)) : pickResponse(out);
  };
}

export function produceHandler(impl: Producer): BatchHandler<ProduceResponse> {
  return (b) => then(serveEach(b.cycles, (_i, c) => impl.produce(c), checkPredictions), produceResponse);
}

/** observe answers an ObserveRequest's samples (Go: producerServer.Observe). */
export async function observe(impl: Producer, samples: Parameters<Producer["observe"]>[0]): Promise<ObserveResponse> {
  let r: ObserveResult;
  let stats: ObserveResponse["stats"];
  try {
    r = await impl.observe(samples);
    stats = statsToProto(r?.stats); // throws naming a count that is not an integer
  } catch (err) {
    return { status: statusOf(err), accepted: 0, stats: undefined };
  }
  return { status: undefined, accepted: Math.max(Math.trunc(r?.accepted ?? 0), 0), stats };
}

// --- gRPC wiring ---------------------------------------------------------------------------------

/** BatchRequest is any stage request as the generated decoder returns it (PickRequest adds scores). */
type BatchRequest = Parameters<typeof batchOf>[0];

/**
 * serveStream answers each request of a stage stream, in order, until the host closes it (Go:
 * serveStream). Synchronous answers are written at once; once a stage answers with a promise, the
 * following requests queue behind it so that responses keep the requests' order.
 */
export function serveStream<Req extends BatchRequest, Resp>(call: grpc.ServerDuplexStream<Req, Resp>, handle: BatchHandler<Resp>): void {
  let tail: Promise<void> | undefined;
  const settle = (p: Promise<void>): void => {
    tail = p;
    void p.then(() => {
      if (tail === p) tail = undefined;
    });
  };
  const answer = (req: Req): Promise<void> | undefined => {
    let resp: Resp | Promise<Resp>;
    try {
      resp = handle(batchOf(req));
    } catch (err) {
      log.error("stage call failed", { error: err });
      call.destroy(err instanceof Error ? err : new Error(String(err)));
      return undefined;
    }
    if (resp instanceof Promise) {
      return resp.then(
        (r) => {
          call.write(r);
        },
        (err: unknown) => {
          log.error("stage call failed", { error: err });
          call.destroy(err instanceof Error ? err : new Error(String(err)));
        },
      );
    }
    call.write(resp);
    return undefined;
  };
  call.on("data", (req: Req) => {
    if (tail === undefined) {
      const p = answer(req);
      if (p !== undefined) settle(p);
    } else {
      settle(tail.then(() => answer(req)));
    }
  });
  call.on("end", () => {
    if (tail === undefined) call.end();
    else void tail.then(() => call.end());
  });
  call.on("error", (err: Error) => {
    log.debug("stage stream ended with an error", { error: err.message });
  });
}

/** stageOf returns the stage impl serves: `stage` when given, else the one whose method it has. */
export function stageOf(impl: AnyStage, stage?: Stage): Stage {
  const has = (m: string) => typeof (impl as unknown as Record<string, unknown>)[m] === "function";
  const found: Stage[] = [];
  if (has("produce") && has("observe")) found.push(Stage.Producer);
  if (has("filter")) found.push(Stage.Filter);
  if (has("score")) found.push(Stage.Scorer);
  if (has("admit")) found.push(Stage.Admitter);
  if (has("pick")) found.push(Stage.Picker);
  if (has("detect")) found.push(Stage.Detector);
  if (has("order")) found.push(Stage.Order);
  if (stage !== undefined) {
    if (!found.includes(stage)) throw new Error(`plugin ${JSON.stringify(impl.type)} does not implement stage ${Stage[stage]}`);
    return stage;
  }
  if (found.length !== 1) {
    throw new Error(
      found.length === 0
        ? `plugin ${JSON.stringify(impl.type)} implements no stage (filter, score, admit, pick, detect, order, or produce and observe)`
        : `plugin ${JSON.stringify(impl.type)} implements several stages (${found.map((s) => Stage[s]).join(", ")}): pass the stage to serve`,
    );
  }
  return found[0]!;
}

/** configure applies parameters to impl (Go: pluginServer.Configure's semantics). */
export function configure(impl: Plugin, params: Uint8Array, instance = ""): ConfigureResponse {
  if (instance !== "") {
    // A host addresses named instances only in a plugin reporting multiInstance, which this kit does not.
    const message = `instance ${JSON.stringify(instance)}: this plugin serves a single instance`;
    return { status: { code: Code.InvalidArgument, message }, admitsUnsheddable: false };
  }
  const text = Buffer.from(params).toString("utf8");
  try {
    if (impl.configure !== undefined) impl.configure(text);
    else decodeParams(text, {}); // no parameters: only {} (or nothing) is accepted
  } catch (err) {
    return { status: { code: Code.InvalidArgument, message: invalidArgument(err).message }, admitsUnsheddable: false };
  }
  const unread = (impl as Partial<Admitter>).admitsUnsheddable;
  return { status: undefined, admitsUnsheddable: unread !== undefined && unread.call(impl) === true };
}

/** info answers GetInfo. */
export function info(impl: Plugin, stage: Stage, version: string): GetInfoResponse {
  return {
    type: impl.type,
    stage: stage as number,
    version,
    description: impl.description,
    reads: [...(impl.reads ?? [])],
    multiInstance: false,
    rounds: stage === Stage.Picker, // every picker this kit serves places rounds (pickRound)
  };
}

/** addForesightServices registers PluginService and impl's stage service on server. */
export function addForesightServices(server: grpc.Server, impl: AnyStage, stage: Stage, version: string): void {
  server.addService(PluginServiceService, {
    getInfo: (_call: grpc.ServerUnaryCall<GetInfoRequest, GetInfoResponse>, cb: grpc.sendUnaryData<GetInfoResponse>) =>
      cb(null, info(impl, stage, version)),
    // A rejection travels in the response (the host reports it); it is not logged here too.
    configure: (call: grpc.ServerUnaryCall<ConfigureRequest, ConfigureResponse>, cb: grpc.sendUnaryData<ConfigureResponse>) =>
      cb(null, configure(impl, call.request.parameters, call.request.instance)),
  });
  // The stage services are the generated definitions: their decoders keep 64-bit fields as bigint.
  switch (stage) {
    case Stage.Filter: {
      const h = filterHandler(impl as Filter);
      server.addService(FilterServiceService, {
        filter: (call: grpc.ServerDuplexStream<FilterRequest, FilterResponse>) => serveStream(call, h),
      });
      break;
    }
    case Stage.Scorer: {
      const h = scoreHandler(impl as Scorer);
      server.addService(ScorerServiceService, {
        score: (call: grpc.ServerDuplexStream<ScoreRequest, ScoreResponse>) => serveStream(call, h),
      });
      break;
    }
    case Stage.Admitter: {
      const h = admitHandler(impl as Admitter);
      server.addService(AdmitterServiceService, {
        admit: (call: grpc.ServerDuplexStream<AdmitRequest, AdmitResponse>) => serveStream(call, h),
      });
      break;
    }
    case Stage.Picker: {
      const h = pickHandler(impl as Picker);
      server.addService(PickerServiceService, {
        pick: (call: grpc.ServerDuplexStream<PickRequest, PickResponse>) => serveStream(call, h),
      });
      break;
    }
    case Stage.Producer: {
      const p = impl as Producer;
      const h = produceHandler(p);
      server.addService(ProducerServiceService, {
        produce: (call: grpc.ServerDuplexStream<ProduceRequest, ProduceResponse>) => serveStream(call, h),
        observe: (call: grpc.ServerUnaryCall<ObserveRequest, ObserveResponse>, cb: grpc.sendUnaryData<ObserveResponse>) => {
          void observe(p, call.request.samples.map(sampleFromProto)).then((r) => cb(null, r));
        },
      });
      break;
    }
    case Stage.Detector: {
      const h = detectHandler(impl as Detector);
      server.addService(SaturationDetectorServiceService, {
        detect: (call: grpc.ServerDuplexStream<DetectRequest, DetectResponse>) => serveStream(call, h),
      });
      break;
    }
    case Stage.Order: {
      const h = orderHandler(impl as Orderer);
      server.addService(OrderServiceService, {
        order: (call: grpc.ServerDuplexStream<OrderRequest, OrderResponse>) => serveStream(call, h),
      });
      break;
    }
    default:
      throw new Error(`no service for stage ${stage}`);
  }
}
