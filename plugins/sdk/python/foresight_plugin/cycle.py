"""The Python form of a cycle and of the stages' answers (mirrors plugins/sdk/types.go).

Endpoint, EndpointState and Prediction, of which the kit builds one each per endpoint per cycle,
are named tuples; the rest are slotted dataclasses. All are easy to build by hand in a plugin's
tests, e.g. ``Endpoint("e1", {"accelerator": "l4"}, EndpointState(waiting=3),
Prediction(True, 120.0, 9.0))``.
"""

from __future__ import annotations

import datetime as _dt
import hashlib as _hashlib
import math
import random as _random
from collections import namedtuple
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, Optional

# Stage numbers, as in the Stage enum of proto/foresight/v1/plugin.proto.
STAGE_PRODUCER = 1
STAGE_FILTER = 2
STAGE_SCORER = 3
STAGE_ADMITTER = 4
STAGE_PICKER = 5
# Flow control's stages: they run only while the router's flowControl section is on, around the
# pipeline rather than in it.
STAGE_DETECTOR = 6
STAGE_ORDER = 7
STAGE_NAMES = {STAGE_PRODUCER: "producer", STAGE_FILTER: "filter", STAGE_SCORER: "scorer",
               STAGE_ADMITTER: "admitter", STAGE_PICKER: "picker", STAGE_DETECTOR: "detector",
               STAGE_ORDER: "order"}

# Hop numbers, as in the Hop enum of proto/foresight/v1/types.proto: which part of a
# disaggregated request a cycle decides (sdk.Hop).
HOP_WHOLE = 0
HOP_PREFILL = 1
HOP_DECODE = 2

#: The label set of an endpoint that has none (read-only, shared).
NO_LABELS: Mapping[str, str] = MappingProxyType({})


@dataclass(slots=True)
class SLO:
    """A request's latency objectives in milliseconds; 0 means no objective."""
    ttft_ms: float = 0.0
    tpot_ms: float = 0.0

    def any(self) -> bool:
        """Whether the request has a TTFT or a TPOT objective."""
        return self.ttft_ms > 0 or self.tpot_ms > 0


@dataclass(slots=True)
class Disaggregation:
    """A request's place in prefill/decode disaggregated serving (sdk.Disaggregation); the zero
    value for a request served whole."""
    #: The hop the cycle decides: HOP_WHOLE, HOP_PREFILL or HOP_DECODE.
    hop: int = HOP_WHOLE
    #: In a prefill cycle, the decode endpoint already chosen: that candidate would serve the
    #: request whole, every other one prefills it for that endpoint.
    decode_endpoint: str = ""
    #: In a prefill cycle, the producer's predictions for the decode hop on decode_endpoint.
    decode_ttft_ms: float = 0.0
    decode_tpot_ms: float = 0.0


@dataclass(slots=True)
class Request:
    """What the router knows about the request being scheduled."""
    id: str = ""
    model: str = ""
    #: Estimated prompt length in tokens.
    input_tokens: int = 0
    #: The request's max_tokens; 0 when the client set none.
    max_output_tokens: int = 0
    streaming: bool = False
    slo: SLO = field(default_factory=SLO)
    #: Below zero marks the request sheddable; zero and above must be served.
    priority: int = 0
    session_id: str = ""
    #: Chained hashes of the prompt's prefix blocks, first block first.
    prefix_block_hashes: list = field(default_factory=list)
    labels: dict = field(default_factory=dict)
    disaggregation: Disaggregation = field(default_factory=Disaggregation)

    def hop_on(self, endpoint_id: str) -> int:
        """The part of the request endpoint_id would serve if picked (sdk.Request.HopOn):
        HOP_WHOLE for the decode endpoint of a prefill cycle, the cycle's hop otherwise."""
        d = self.disaggregation
        if d.hop == HOP_PREFILL and endpoint_id == d.decode_endpoint:
            return HOP_WHOLE
        return d.hop


# Endpoint, EndpointState and Prediction are named tuples: the kit builds one of each per endpoint
# per cycle, and tuples are built from the wire's columns without a Python call per endpoint.
# They are read-only; build new ones (or use ``_replace``) instead of changing them.

class EndpointState(namedtuple("EndpointState", (
        "kv_cache_usage", "waiting", "running", "inflight_requests", "prefill_tokens_in_flight",
        "decode_tokens_in_flight", "prefix_match", "min_running_tpot_slo_ms", "metrics_age_ms",
        "last_output_age_ms", "dispatched_since_scrape", "first_token_rate", "running_tpot_ms"),
        defaults=(0.0, 0, 0, 0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0, 0.0, 0.0))):
    """One endpoint's state at decision time: scraped engine gauges and the router's accounting.

    kv_cache_usage: engine KV-cache utilisation in [0, 1]. waiting, running: the engine's queue
    and batch gauges from the last scrape. inflight_requests: requests the router dispatched there
    that have not finished. prefill_tokens_in_flight: uncached prompt tokens dispatched and not yet
    at first token. decode_tokens_in_flight: output tokens still to generate for requests past
    their first token. prefix_match: fraction of this request's prefix blocks the endpoint is
    believed to cache, in [0, 1]. min_running_tpot_slo_ms: tightest TPOT objective among requests
    running there (0: none). metrics_age_ms: age of the scraped gauges. last_output_age_ms:
    milliseconds since the router last saw output from the endpoint (-1 with nothing in flight).
    dispatched_since_scrape: requests the router dispatched there after the last successful scrape
    and that have not finished, load the scraped gauges do not show yet (before a first scrape,
    every request in flight there). first_token_rate: how many of the router's requests reach
    their first token there per second, over the last 16 that did (15 over the time from the first
    to the last of them; 0 until 16 have): the rate the endpoint starts requests at while busy,
    which turns a count waiting into a time. running_tpot_ms: the TPOT the router's streams
    decoding there have seen so far, the mean over those with two tokens or more of (time of the
    last token - time of the first) / (tokens - 1); 0 when none has.
    """
    __slots__ = ()

    def idle(self) -> bool:
        """Whether the router has nothing in flight on the endpoint."""
        return self.inflight_requests == 0


class Prediction(namedtuple("Prediction", ("valid", "ttft_ms", "tpot_ms", "ttft_after_ms",
                                           "tpot_after_ms", "ttft_spread", "tpot_spread"),
                            defaults=(False, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0))):
    """A producer's estimate of the latency the request would see on one endpoint, in ms.

    Treat ``valid == False`` as "no prediction" and ignore the numbers. ttft_after_ms and
    tpot_after_ms are what the request would see there had one more request like it been placed
    there first (see place_on); 0 when the producer does not say, and then a placement reads as
    changing nothing. A producer gives them in a round (Cycle.in_round) and may give them outside
    rounds too (the project's producer does for any cycle whose request carries a latency
    objective), so do not assume they are 0 outside rounds. ttft_spread and tpot_spread are how
    far the actual latency is likely to be from ttft_ms and tpot_ms: the standard deviation of
    ln(actual / predicted) over the producer's recent predictions of that target on the endpoint,
    the width of the log-normal distribution whose median is the prediction; 0 when the producer
    does not know. A producer that says nothing of rounds or spreads returns
    ``Prediction(valid, ttft, tpot)``; new fields come last, so read the fields by name (or
    ``p[:3]``) rather than unpacking the whole tuple.
    """
    __slots__ = ()

    def usable(self) -> bool:
        """Whether the prediction is valid and both numbers are finite and non-negative."""
        return self[0] and 0 <= self[1] < math.inf and 0 <= self[2] < math.inf


class Endpoint(namedtuple("Endpoint", ("id", "labels", "state", "prediction"),
                          defaults=("", NO_LABELS, EndpointState(), Prediction()))):
    """One candidate model server with its state and, once a producer ran, its prediction.

    id: unique within the fleet (usually host:port), "" unless the stage reads endpoints.ids.
    labels: a read-only mapping of label to value (e.g. accelerator, role).
    """
    __slots__ = ()


@dataclass(slots=True, frozen=True)
class Round:
    """A cycle's place among the requests the host decides together (mirrors sdk.Round).

    The host decides a round as if its requests were decided one at a time in arrival order, each
    after the earlier ones were placed on their first choice, but with one call per stage for the
    whole round: the producer says what each request would see on each endpoint after one more
    request like it (Prediction.ttft_after_ms), each scorer that can say it what each endpoint's
    score would become, on the scale of its current scores (Scorer.score_after), and the kit
    places a picker's round in order against those figures (place_on). A round's size is at
    least 1: a round of one (position 0, size 1) is a request the host decides after an earlier
    round whose placements it must account for. The zero Round (size 0) is a request decided
    alone.
    """
    #: The cycle's place in the round, from 0, in arrival order.
    position: int = 0
    #: How many cycles the round holds: at least 1 in a round, 0 for a cycle decided alone.
    size: int = 0


#: The Round of a request decided alone (read-only, shared).
NO_ROUND = Round()


@dataclass(slots=True)
class Cycle:
    """The input of one scheduling decision.

    A stage is a function of (cycle, parameters, learned state): it reads the time from ``now``
    and draws random numbers only from ``seed`` (see :meth:`rand`), never from the wall clock.
    Fields the stage did not declare in ``reads`` arrive as zeros.
    """
    request: Request = field(default_factory=Request)
    endpoints: list = field(default_factory=list)
    #: The decision time (timezone-aware UTC), None when the host sent none.
    now: Optional[_dt.datetime] = None
    seed: int = 0
    #: The fleet's endpoints the host left out of the cycle because they are out of its rotation
    #: (ExcludedEndpoint): filled for the stages that read "endpoints.excluded" (or everything),
    #: else empty. They are not candidates: the indices a stage answers with are into
    #: ``endpoints`` only.
    excluded: list = field(default_factory=list)
    #: Set when the host decides this request in a round (see Round: with others, or as a round
    #: of one); NO_ROUND when it is decided alone. Always sent, whatever the stage reads; in a round the endpoint ids are
    #: sent too, since the kit tells the round's endpoints apart by them.
    round: Round = NO_ROUND

    def in_round(self) -> bool:
        """Whether the cycle is in a round (a Round of size 1 or more): the host wants its
        after-predictions and after-scores, and a picker's round is placed in order. A round of
        one is a request the host decides after an earlier round whose placements it accounts
        for; NO_ROUND (size 0) is a cycle decided alone."""
        return self.round.size >= 1

    def uncached_tokens(self, e: int) -> int:
        """The part of the request's prompt that endpoint e is not believed to cache: the prefill
        work the request brings there (sdk.Cycle.UncachedTokens: rounded half away from zero). A
        decode hop brings none: its prompt arrives as KV."""
        if self.request.hop_on(self.endpoints[e].id) == HOP_DECODE:
            return 0
        match = self.endpoints[e].state.prefix_match
        match = 0.0 if match != match else min(max(match, 0.0), 1.0)  # NaN: nothing cached
        return round_half_away(float(self.request.input_tokens) * (1 - match))

    def any_prediction(self) -> bool:
        """Whether at least one endpoint carries a valid prediction."""
        return any(e.prediction.valid for e in self.endpoints)

    def rand(self, salt: str) -> _random.Random:
        """A random source derived from the seed and salt (use the plugin type), so the stage's
        random choices are reproducible from the cycle alone. (Not the Go SDK's stream.)"""
        h = _hashlib.blake2b(salt.encode(), digest_size=8).digest()
        return _random.Random((self.seed << 64) | int.from_bytes(h, "big"))


def round_half_away(x: float) -> int:
    """x rounded to the nearest int, halves away from zero, as Go's math.Round (Python's round
    rounds halves to even; floor(x + 0.5) is off for the double just below 0.5)."""
    a = abs(x)
    r = math.floor(a)
    if a - r >= 0.5:  # exact: a double minus its floor loses nothing
        r += 1
    return -r if x < 0 else r


# Reasons an endpoint of the fleet is out of a cycle (ExcludedEndpoint.reason).
#: The endpoint stopped answering the router's scrapes or probes.
EXCLUDED_UNHEALTHY = "unhealthy"
#: The endpoint answers, but its requests kept failing, so the router set it aside for a while.
EXCLUDED_EJECTED = "ejected"


@dataclass(slots=True)
class ExcludedEndpoint:
    """An endpoint of the fleet that a cycle does not offer as a candidate because it is out of
    the router's rotation.

    Filters that judge a whole failure domain (a zone, a node) need it: the candidates alone
    cannot show that a domain has a failing member. ``reason`` is EXCLUDED_UNHEALTHY or
    EXCLUDED_EJECTED; a host may add reasons, so a stage must not assume it knows them all.
    """
    id: str = ""
    labels: dict = field(default_factory=dict)
    reason: str = ""


@dataclass(slots=True)
class Sample:
    """One finished request as a producer learns from it (state and prediction at dispatch)."""
    request: Request = field(default_factory=Request)
    endpoint_id: str = ""
    state: EndpointState = field(default_factory=EndpointState)
    predicted: Prediction = field(default_factory=Prediction)
    actual_ttft_ms: float = 0.0
    #: (last token - first token) / (output tokens - 1); 0 with fewer than two tokens.
    actual_tpot_ms: float = 0.0
    output_tokens: int = 0
    dispatched_at: Optional[_dt.datetime] = None


@dataclass(slots=True)
class FilterVerdict:
    """A filter's answer for one cycle: the indices into the cycle's endpoints it keeps."""
    kept: list = field(default_factory=list)
    #: Why these were kept, in a few words.
    reason: str = ""


@dataclass(slots=True)
class AdmitVerdict:
    """An admitter's answer for one cycle."""
    admitted: bool = True
    reason: str = ""


@dataclass(slots=True)
class SaturationVerdict:
    """A saturation detector's answer for one cycle."""
    #: One count per endpoint of the cycle, in its order: how many more of the router's requests
    #: the endpoint takes now before it is full; 0: full. A negative count travels as 0.
    room: list = field(default_factory=list)
    #: The estimated wait in ms before the request's prefill could start were it dispatched now;
    #: negative: unknown. None (the default) sends 0 when some endpoint has room and -1 (unknown)
    #: when none has: a detector that estimates no wait claims none.
    wait_ms: Optional[float] = None
    #: When every count is 0, why, in a few words (e.g. "engines-full").
    reason: str = ""
    #: How many requests the detector believes each endpoint runs at once (its slots, as a slot
    #: engine's or vLLM's max_num_seqs), in the cycle's order: empty (the default) when it
    #: believes nothing, else one per endpoint, 0 for one it does not know. The host reports them
    #: and does not act on them; the room counts are the verdict.
    slots: list = field(default_factory=list)

    def saturated(self) -> bool:
        """Whether no endpoint has room."""
        return not any(r > 0 for r in self.room)


@dataclass(slots=True)
class OrderKey:
    """A queued request's place in its flow: bands (priorities) first, flows in turn within a
    band, then, within a flow, the requests that are not hopeless by rank, then the hopeless ones
    by rank; equal ranks leave in arrival order."""
    #: Lower leaves first, e.g. the arrival (FCFS) or the TTFT deadline (EDF) in Unix nanoseconds
    #: (an int64).
    rank: int = 0
    #: A timezone-aware datetime: the request is hopeless once the host's estimate of the wait,
    #: added to the time, passes it (e.g. cycle.now plus the TTFT objective). None: never hopeless.
    hopeless_after: Optional[_dt.datetime] = None
    #: The fairness flow; empty: the one the host's flowControl.flowKey names.
    flow: str = ""


@dataclass(slots=True)
class TargetStats:
    """The rolling error of one prediction target over recent samples."""
    samples: int = 0
    #: Mean absolute percentage error as a fraction; mae the mean absolute error in ms.
    mape: float = 0.0
    mae: float = 0.0
    #: For a quantile model, the fraction of samples at or below the prediction; None otherwise.
    quantile_coverage: Optional[float] = None


@dataclass(slots=True)
class PredictorStats:
    """A learning producer's model and its recent prediction error."""
    model_version: int = 0
    training_rows: int = 0
    ttft: TargetStats = field(default_factory=TargetStats)
    tpot: TargetStats = field(default_factory=TargetStats)
    drift: bool = False


@dataclass(slots=True)
class ObserveResult:
    """A producer's answer to observe: how many samples it took and, if it learns, its quality."""
    accepted: int = 0
    stats: Optional[PredictorStats] = None
