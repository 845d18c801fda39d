// The types a stage works with: the TypeScript mirror of plugins/sdk/types.go and stage.go.
// Field names are the camelCase of the Go SDK's JSON names.

/** Stage is one extension point of the scheduling pipeline (the wire's foresight.v1.Stage). */
export enum Stage {
  Unspecified = 0,
  Producer = 1,
  Filter = 2,
  Scorer = 3,
  Admitter = 4,
  Picker = 5,
  // Flow control's stages: they run only while the router's flowControl section is on, around the
  // pipeline rather than in it.
  Detector = 6,
  Order = 7,
}

const stageNames = ["unspecified", "producer", "filter", "scorer", "admitter", "picker", "detector", "order"] as const;

/** stageName returns the stage's lower-case name, e.g. "filter": the name the host dispenses it by. */
export function stageName(s: Stage): string {
  return stageNames[s] ?? `stage(${s})`;
}

/** SLO holds a request's latency objectives in milliseconds; zero means no objective. */
export interface SLO {
  ttftMs: number;
  tpotMs: number;
}

/** Hop is which part of a disaggregated request a cycle decides (the wire's foresight.v1.Hop). */
export enum Hop {
  /** The whole request on one endpoint. */
  Whole = 0,
  /** The prefill hop: the prompt and one output token, its KV then pulled by the decode endpoint. */
  Prefill = 1,
  /** The decode hop: the prompt's KV pulled from a prefill endpoint, then every output token. */
  Decode = 2,
}

/**
 * Disaggregation is a request's place in prefill/decode disaggregated serving (Go:
 * sdk.Disaggregation); every field zero for a request served whole.
 */
export interface Disaggregation {
  hop: Hop;
  /** In a prefill cycle, the decode endpoint already chosen: that candidate would serve the request whole. */
  decodeEndpoint: string;
  /** In a prefill cycle, the producer's predictions for the decode hop on decodeEndpoint. */
  decodeTtftMs: number;
  decodeTpotMs: number;
}

/**
 * hopOn returns the part of r endpoint id would serve if picked (Go: sdk.Request.HopOn): Whole for
 * the decode endpoint of a prefill cycle, the cycle's hop otherwise.
 */
export function hopOn(r: Request, id: string): Hop {
  const d = r.disaggregation;
  if (d === undefined) return Hop.Whole;
  return d.hop === Hop.Prefill && id === d.decodeEndpoint ? Hop.Whole : d.hop;
}

/** Request is what the router knows about the request being scheduled. */
export interface Request {
  id: string;
  model: string;
  /** The estimated prompt length in tokens. */
  inputTokens: number;
  /** The request's max_tokens; 0 when the client set none. */
  maxOutputTokens: number;
  streaming: boolean;
  slo: SLO;
  /** Below zero marks the request sheddable; zero and above must be served. */
  priority: number;
  sessionId: string;
  /** Chained 64-bit hashes of the prompt's prefix blocks, first block first. */
  prefixBlockHashes: bigint[];
  /** Free-form request labels (tenant, class, ...); {} when none. */
  labels: Record<string, string>;
  /**
   * The request's place in disaggregated serving. The kit always sets it (hop Whole for a request
   * served whole); a request built by hand may leave it out, which reads as whole.
   */
  disaggregation?: Disaggregation;
}

/**
 * EndpointState is what the router knows of one endpoint at decision time: engine gauges from
 * the last scrape (metricsAgeMs old) and the router's own fresh in-flight accounting.
 */
export interface EndpointState {
  /** The engine's KV-cache utilisation in [0, 1]. */
  kvCacheUsage: number;
  /** The engine's waiting-queue gauge from the last scrape. */
  waiting: number;
  /** The engine's running-batch gauge from the last scrape. */
  running: number;
  /** Requests the router dispatched there that have not finished. */
  inflightRequests: number;
  /** Uncached prompt tokens dispatched and not yet at first token. */
  prefillTokensInFlight: number;
  /** Output tokens still to generate for requests past their first token. */
  decodeTokensInFlight: number;
  /** Fraction of this request's prefix blocks the endpoint is believed to cache, in [0, 1]. */
  prefixMatch: number;
  /** The tightest TPOT objective among requests running there; 0 when none has one. */
  minRunningTpotSloMs: number;
  /** How old the scraped gauges are. */
  metricsAgeMs: number;
  /** Milliseconds since the router last saw output from the endpoint; −1 with nothing in flight. */
  lastOutputAgeMs: number;
  /**
   * Requests the router dispatched there after the last successful scrape and that have not
   * finished: load the scraped gauges do not show yet (before a first scrape, every request in
   * flight there).
   */
  dispatchedSinceScrape: number;
  /**
   * How many of the router's requests reach their first token there per second, over the last 16
   * that did (15 over the time from the first to the last of them; 0 until 16 have): the rate the
   * endpoint starts requests at while busy, which turns a count waiting into a time.
   */
  firstTokenRate: number;
  /**
   * The TPOT the router's streams decoding there have seen so far, in ms: the mean over those with
   * at least two tokens of (time of the last token − time of the first) / (tokens − 1); 0 when
   * none has.
   */
  runningTpotMs: number;
}

/**
 * Prediction is a producer's estimate of the latency the request would see on one endpoint.
 * Treat valid === false as "no prediction" and ignore the numbers.
 */
export interface Prediction {
  valid: boolean;
  ttftMs: number;
  tpotMs: number;
  /**
   * The TTFT the request would see on the endpoint had one more request like it been placed there
   * first (see placeOn); absent or 0 when the producer does not say: a placement then changes
   * nothing. A producer gives it in a round (inRound) and may give it outside rounds too (the
   * project's producer does for any cycle whose request carries a latency objective), so do not
   * assume it is absent outside rounds.
   */
  ttftAfterMs?: number;
  /** The TPOT after one more request like it; given, absent or 0 as ttftAfterMs. */
  tpotAfterMs?: number;
  /**
   * How far the actual TTFT is likely to be from ttftMs: the standard deviation of
   * ln(actual / predicted) over the producer's recent TTFT predictions on the endpoint, the width
   * of the log-normal distribution whose median is ttftMs. Absent or 0 when the producer does not
   * know (too few samples there, or a producer that does not say).
   */
  ttftSpread?: number;
  /** The spread of the TPOT predictions, as ttftSpread (median tpotMs); absent or 0 when unknown. */
  tpotSpread?: number;
}

/** Endpoint is one candidate model server with its state and, once a producer ran, its prediction. */
export interface Endpoint {
  /** Unique within the fleet (usually host:port). */
  id: string;
  /** {} when the endpoint has none (or the stage did not declare "endpoints.labels"). */
  labels: Record<string, string>;
  state: EndpointState;
  prediction: Prediction;
}

/**
 * Cycle is the input of one scheduling decision. A stage is a function of (cycle, parameters,
 * learned state): it reads the time from `now` and draws random numbers only from `seed`.
 * Fields the stage did not declare in `reads` arrive as zeros.
 */
export interface Cycle {
  request: Request;
  endpoints: Endpoint[];
  /** The decision time (virtual under the simulator); millisecond precision. */
  now: Date;
  /** The seed for every random choice the stage makes in this cycle (a uint64). */
  seed: bigint;
  /**
   * The fleet's endpoints the host left out of the cycle because they are out of its rotation;
   * present (and non-empty) only when there are some and the stage reads "endpoints.excluded" (or
   * everything), as the Go SDK's Cycle.Excluded is nil otherwise. They are not candidates: the
   * indices a stage answers with are into `endpoints` only.
   */
  excluded?: ExcludedEndpoint[];
  /**
   * Set when the host decides this request in a round (see Round: with others, or as a round of
   * one); absent when it is decided alone. Always sent, whatever the stage reads; in a round the endpoint ids are sent
   * too, since the kit tells the round's endpoints apart by them.
   */
  round?: Round;
}

/**
 * Round places a cycle among the requests the host decides together (Go: sdk.Round). The host
 * decides a round as if its requests were decided one at a time in arrival order, each after the
 * earlier ones were placed on their first choice, but with one call per stage for the whole round:
 * the producer says what each request would see on each endpoint after one more request like it
 * (Prediction.ttftAfterMs), each scorer that can say it what each endpoint's score would become,
 * on the scale of its current scores (Scorer.scoreAfter), and the kit places a picker's round in
 * order against those figures (placeOn). A round's size is at least 1: a round of one (position 0,
 * size 1) is a request the host decides after an earlier round whose placements it must account
 * for. Size 0 (sent as no round) is a request decided alone.
 */
export interface Round {
  /** The cycle's place in the round, from 0, in arrival order. */
  position: number;
  /** How many cycles the round holds: at least 1 in a round, 0 for a cycle decided alone. */
  size: number;
}

/**
 * EXCLUDED_UNHEALTHY: the endpoint stopped answering the router's scrapes or probes
 * (ExcludedEndpoint.reason).
 */
export const EXCLUDED_UNHEALTHY = "unhealthy";

/**
 * EXCLUDED_EJECTED: the endpoint answers, but its requests kept failing, so the router set it
 * aside for a while (ExcludedEndpoint.reason).
 */
export const EXCLUDED_EJECTED = "ejected";

/**
 * ExcludedEndpoint is an endpoint of the fleet that a cycle does not offer as a candidate because
 * it is out of the router's rotation. Filters that judge a whole failure domain (a zone, a node)
 * need it: the candidates alone cannot show that a domain has a failing member.
 */
export interface ExcludedEndpoint {
  id: string;
  /** {} when the endpoint has none. */
  labels: Record<string, string>;
  /**
   * EXCLUDED_UNHEALTHY or EXCLUDED_EJECTED; a host may add reasons, so a stage must not assume
   * it knows them all.
   */
  reason: string;
}

/** FilterVerdict is a filter's answer for one cycle. */
export interface FilterVerdict {
  /** Indices into cycle.endpoints that are kept, ascending. */
  kept: number[];
  /** Why these were kept, in a few words. */
  reason?: string;
}

/** AdmitVerdict is an admitter's answer for one cycle. */
export interface AdmitVerdict {
  admitted: boolean;
  reason?: string;
}

/** SaturationVerdict is a saturation detector's answer for one cycle. */
export interface SaturationVerdict {
  /**
   * One count per endpoint of the cycle, in its order: how many more of the router's requests
   * the endpoint takes now before it is full; 0: full. Integers; a negative count travels as 0.
   */
  room: number[];
  /**
   * The estimated wait in ms before the request's prefill could start were it dispatched now;
   * negative: unknown. Absent: 0 when some endpoint has room, −1 (unknown) when none has — a
   * detector that estimates no wait claims none.
   */
  waitMs?: number;
  /** When every count is 0, why, in a few words (e.g. "engines-full"). */
  reason?: string;
  /**
   * How many requests the detector believes each endpoint runs at once (its slots, as a slot
   * engine's or vLLM's max_num_seqs), in the cycle's order: absent or empty when it believes
   * nothing, else one integer ≥ 0 per endpoint, 0 for one it does not know. The host reports them
   * and does not act on them; the room counts are the verdict.
   */
  slots?: number[];
}

/**
 * OrderKey is a queued request's place in its flow: bands (priorities) first, flows in turn
 * within a band, then, within a flow, the requests that are not hopeless by rank, then the
 * hopeless ones by rank; equal ranks leave in arrival order.
 */
export interface OrderKey {
  /**
   * Lower leaves first, e.g. the arrival (FCFS) or the TTFT deadline (EDF) in Unix nanoseconds:
   * an int64, as a bigint or a safe-integer number (nanoseconds since 1970 exceed 2^53: use bigint).
   */
  rank: bigint | number;
  /**
   * The request is hopeless once the host's estimate of the wait, added to the time, passes it
   * (e.g. the TTFT deadline). Absent: never hopeless.
   */
  hopelessAfter?: Date;
  /** The fairness flow; absent or empty: the one the host's flowControl.flowKey names. */
  flow?: string;
}

/** Sample is one finished request as a producer learns from it. */
export interface Sample {
  request: Request;
  endpointId: string;
  /** The chosen endpoint's state at dispatch. */
  state: EndpointState;
  /** The prediction made at dispatch. */
  predicted: Prediction;
  actualTtftMs: number;
  /** (last token − first token) / (output tokens − 1); 0 with fewer than two tokens. */
  actualTpotMs: number;
  outputTokens: number;
  dispatchedAt: Date;
}

/** TargetStats is the rolling error of one prediction target. */
export interface TargetStats {
  samples: number;
  /** Mean absolute percentage error as a fraction. */
  mape: number;
  /** Mean absolute error in ms. */
  mae: number;
  /** For a quantile model, the fraction of samples at or below the prediction. */
  quantileCoverage?: number;
}

/** PredictorStats describes a learning producer's model and its recent prediction error. */
export interface PredictorStats {
  modelVersion: number;
  trainingRows: number;
  ttft: TargetStats;
  tpot: TargetStats;
  drift: boolean;
}

/** ObserveResult is a producer's answer to observe. */
export interface ObserveResult {
  accepted: number;
  stats?: PredictorStats;
}

/** A stage method may answer at once or with a promise; answers on one stream keep their order. */
export type Answer<T> = T | Promise<T>;

/** Plugin is what every stage implementation is: a typed, configurable component. */
export interface Plugin {
  /** The kebab-case plugin type, e.g. "label-selector-filter"; the config declares the same. */
  readonly type: string;
  /** One line saying what the plugin does. */
  readonly description: string;
  /**
   * The cycle fields the stage reads (see READ_PATHS); the host leaves every other field out of
   * the cycles it sends. Absent or empty: everything.
   */
  readonly reads?: readonly string[];
  /**
   * configure merges `params` (a JSON object as text, possibly empty) over the plugin's defaults
   * and validates the result; it throws an Error naming the first invalid parameter, and the
   * parameters in force stay. Called before the first stage call and again on reconfiguration.
   * Without configure, the plugin accepts no parameters (anything but {} is rejected).
   */
  configure?(params: string): void;
}

/** Filter narrows the candidate endpoints. */
export interface Filter extends Plugin {
  /** filter returns the indices into cycle.endpoints it keeps, ascending, and why. */
  filter(cycle: Cycle): Answer<FilterVerdict>;
}

/** Scorer rates the candidate endpoints. */
export interface Scorer extends Plugin {
  /** score returns one score in [0, 1] per endpoint, in cycle.endpoints order; higher is better. */
  score(cycle: Cycle): Answer<number[]>;
  /**
   * scoreAfter, optional, returns for a cycle in a round each endpoint's score had one more
   * request like the cycle's been placed there first (placeOn(copy, i, 1)), on the scale of
   * `scores`, the scorer's own scores for the cycle: every quantity the scorer computes over the
   * candidates (a min and a max, a tier's bounds, a sum) held at its value for the cycle, only
   * endpoint i's own inputs moved. So a placement changes that endpoint's score alone, and an
   * after-score may fall outside [0, 1] (e.g. a min–max queue score on queues [1, 1, 0, 0]:
   * scores [0, 0, 1, 1], after-scores [−1, −1, 0, 0]; all queues equal: the scale is one request,
   * scores 1, after-scores 0). The kit asks it only for cycles in a round. A scorer without it
   * answers no after-scores, and the host re-decides the round's collisions itself.
   */
  scoreAfter?(cycle: Cycle, scores: number[]): Answer<number[]>;
}

/** Admitter decides whether a request is served at all. */
export interface Admitter extends Plugin {
  admit(cycle: Cycle): Answer<AdmitVerdict>;
  /**
   * True when, with the parameters in force, every request of priority 0 or above is admitted
   * without reading anything else of its cycle and leaves no state behind: the kit tells the host
   * after each Configure, and the host admits those requests without a call. Absent or false:
   * every request is sent.
   */
  admitsUnsheddable?(): boolean;
}

/**
 * Picker orders the candidate endpoints by preference. The kit places a round's cycles in order
 * (and tells the host so, GetInfo's rounds): cycle k of a round is picked on a copy on which each
 * endpoint that n earlier cycles of its round took as their first choice is moved by
 * placeOn(copy, e, n), its score lowered by n × (score − after-score), not clamped: in a round
 * pick may be given scores below 0 (a picker that needs weights ≥ 0 sees to that itself).
 * Otherwise pick needs to know nothing of rounds.
 */
export interface Picker extends Plugin {
  /**
   * pick returns indices into cycle.endpoints, best first; scores[i] is the weighted score of
   * endpoint i. Returning every index lets the proxy fail over down the list.
   */
  pick(cycle: Cycle, scores: number[]): Answer<number[]>;
}

/** Producer adds latency predictions to every endpoint and learns from finished requests. */
export interface Producer extends Plugin {
  /** produce returns one prediction per endpoint, in cycle.endpoints order. */
  produce(cycle: Cycle): Answer<Prediction[]>;
  /** observe takes finished-request samples and returns how many it accepted (and its quality). */
  observe(samples: Sample[]): Answer<ObserveResult>;
}

/**
 * Detector is flow control's saturation detector: which endpoints have room for a request now. A
 * request for which none has room waits in the router's queue and is decided again when one has.
 */
export interface Detector extends Plugin {
  /** detect returns one room count per endpoint of the cycle, in order, the wait and why, and the slots it believes in. */
  detect(cycle: Cycle): Answer<SaturationVerdict>;
}

/**
 * Orderer is flow control's ordering policy: the key by which a request waits in the router's
 * queue. It is asked once, when the request enters the queue; cycle.now is the request's arrival.
 */
export interface Orderer extends Plugin {
  /** order returns the cycle's request's key. */
  order(cycle: Cycle): Answer<OrderKey>;
}

/** AnyStage is any of the seven stage interfaces. */
export type AnyStage = Filter | Scorer | Admitter | Picker | Producer | Detector | Orderer;

/** allIndices returns 0, 1, …, n−1: the verdict of a filter that keeps every endpoint. */
export function allIndices(n: number): number[] {
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) out[i] = i;
  return out;
}

/** usable reports whether the prediction is valid and both numbers are finite and non-negative. */
export function usable(p: Prediction): boolean {
  return p.valid && p.ttftMs >= 0 && p.tpotMs >= 0 && Number.isFinite(p.ttftMs) && Number.isFinite(p.tpotMs);
}

/** READ_PATHS lists the valid read paths (Go: transport.ReadPaths). */
export const READ_PATHS: readonly string[] = [
  "request",
  "request.prefix_block_hashes",
  "endpoints.count",
  "endpoints.ids",
  "endpoints.labels",
  "endpoints.states",
  "endpoints.states.kv_cache_usage",
  "endpoints.states.waiting",
  "endpoints.states.running",
  "endpoints.states.inflight_requests",
  "endpoints.states.prefill_tokens_in_flight",
  "endpoints.states.decode_tokens_in_flight",
  "endpoints.states.prefix_match",
  "endpoints.states.min_running_tpot_slo_ms",
  "endpoints.states.metrics_age_ms",
  "endpoints.states.last_output_age_ms",
  "endpoints.states.dispatched_since_scrape",
  "endpoints.states.first_token_rate",
  "endpoints.states.running_tpot_ms",
  "endpoints.predictions",
  "endpoints.excluded",
];

/** checkReads throws when a declared read path is not one the host knows. */
export function checkReads(reads: readonly string[] | undefined): void {
  for (const r of reads ?? []) {
    if (!READ_PATHS.includes(r)) {
      throw new Error(`unknown read path ${JSON.stringify(r)} (valid: ${READ_PATHS.join(", ")})`);
    }
  }
}
