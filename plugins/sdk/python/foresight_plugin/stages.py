"""The stage base classes a plugin subclasses (mirrors plugins/sdk/stage.go).

A stage is a class with class attributes saying what it is and one method doing the work::

    class MyScorer(foresight_plugin.Scorer):
        type = "my-scorer"                      # must equal the type in the host's config
        description = "one line saying what it does"
        parameters = {"weight": 1.0}            # the defaults; None/absent: no parameters
        reads = ["request", "endpoints.predictions"]   # optional: the cycle fields it reads

        def configure(self, params):            # optional: validate (raise ValueError), derive
            foresight_plugin.check_range("weight", params["weight"], 0, 10)

        def score(self, cycle):
            return [1.0 for _ in cycle.endpoints]

The kit calls ``configure`` with the defaults merged under the host's JSON parameters (see
params.decode_params) and, once it returns, makes them the parameters in force, ``self.params``.
If it raises, Configure fails with INVALID_ARGUMENT and the previous parameters stay. Stage calls
are made one at a time, in the process's one event-loop thread: a stage needs no locking.
"""

from __future__ import annotations

from typing import Any, ClassVar, Optional, Sequence

from ._gen import types_pb2
from .params import decode_params
from .cycle import (
    STAGE_ADMITTER, STAGE_DETECTOR, STAGE_FILTER, STAGE_ORDER, STAGE_PICKER, STAGE_PRODUCER,
    STAGE_SCORER, AdmitVerdict, Cycle, FilterVerdict, ObserveResult, OrderKey, Prediction, Sample,
    SaturationVerdict,
)

__all__ = ["Plugin", "Producer", "Filter", "Scorer", "Admitter", "Picker", "Detector", "Orderer",
           "read_paths"]


def read_paths() -> list:
    """The valid read paths (see GetInfoResponse.reads in proto/foresight/v1/plugin.proto)."""
    paths = ["request", "request.prefix_block_hashes", "endpoints.count", "endpoints.ids",
             "endpoints.labels", "endpoints.states"]
    paths += ["endpoints.states." + f.name for f in types_pb2.EndpointStates.DESCRIPTOR.fields]
    return paths + ["endpoints.predictions", "endpoints.excluded"]


class Plugin:
    """What every stage is: a typed, configurable component. Subclass a stage class below."""

    #: The stage served (set by the stage classes).
    stage: ClassVar[int] = 0
    #: The kebab-case plugin type, e.g. "cost-aware-scorer"; the host checks it against its config.
    type: ClassVar[str] = ""
    #: One line saying what the plugin does.
    description: ClassVar[str] = ""
    #: The parameters' defaults, by name; the JSON type of each is its default's (see params.py).
    parameters: ClassVar[Optional[dict]] = None
    #: The cycle fields the stage reads (see read_paths); None: everything. The host leaves every
    #: other field out of the cycles it sends, which makes each call cheaper: undeclared fields
    #: arrive as zeros.
    reads: ClassVar[Optional[Sequence[str]]] = None

    #: The parameters in force (the defaults until the host configures the plugin).
    params: dict

    def configure(self, params: dict) -> None:
        """Validates params (the defaults merged under the host's) and derives any state from
        them. Raise ValueError naming the parameter and the accepted range to reject them."""

    def set_parameters(self, raw: bytes | str | None = None) -> None:
        """What the host's Configure does: merges raw (a JSON object; None: the defaults) over
        the defaults, calls configure with the result and makes it self.params. Raises what
        configure raised (or ValueError for bad JSON), leaving the parameters in force as they
        were. serve() calls it with the defaults before serving; tests call it directly."""
        params = decode_params(raw, self.parameters or {})
        self.configure(params)
        self.params = params


class Producer(Plugin):
    """Adds latency predictions to every endpoint of a cycle and learns from finished requests."""
    stage = STAGE_PRODUCER

    def produce(self, cycle: Cycle) -> Sequence[Prediction]:
        """One prediction per endpoint of cycle, in order (None counts as no prediction)."""
        raise NotImplementedError

    def observe(self, samples: list[Sample]) -> ObserveResult | int:
        """Takes finished-request samples; returns how many it accepted (and, for a learning
        producer, an ObserveResult with its prediction quality). Default: takes none."""
        return ObserveResult(0)


class Filter(Plugin):
    """Narrows the candidate endpoints."""
    stage = STAGE_FILTER

    def filter(self, cycle: Cycle) -> FilterVerdict | Sequence[int]:
        """The indices into cycle.endpoints it keeps, ascending (a FilterVerdict to add why)."""
        raise NotImplementedError


class Scorer(Plugin):
    """Rates the candidate endpoints.

    In a round (Cycle.in_round) a scorer may also say each endpoint's after-score by defining
    ``score_after(self, cycle, scores)`` (scores are its own scores for cycle), asked only for
    cycles in a round. Endpoint i's after-score is its score had one more request like the
    cycle's been placed there first (``place_on(copy, i, 1)``), on the scale of scores: every
    quantity the scorer computes over the candidates (a min and a max, a tier's bounds, a sum)
    held at its value for cycle, only endpoint i's own inputs moved. So a placement changes that
    endpoint's score alone, and an after-score may fall outside [0, 1] (e.g. a min–max queue score
    on queues [1, 1, 0, 0]: scores [0, 0, 1, 1], after-scores [-1, -1, 0, 0]; all queues equal:
    the scale is one request, scores 1, after-scores 0). A scorer without score_after answers no
    after-scores, and the host re-decides the round's collisions itself.
    """
    stage = STAGE_SCORER

    def score(self, cycle: Cycle) -> Sequence[float]:
        """One score in [0, 1] per endpoint of cycle, in order; higher is better. The host clamps
        out-of-range scores and multiplies by the scorer's weight."""
        raise NotImplementedError


class Admitter(Plugin):
    """Decides whether a request is served at all."""
    stage = STAGE_ADMITTER

    def admit(self, cycle: Cycle) -> AdmitVerdict | bool:
        """The verdict for cycle's request (a bool, or an AdmitVerdict to add why)."""
        raise NotImplementedError

    def admits_unsheddable(self) -> bool:
        """True when, with the parameters in force, every request of priority 0 or above is
        admitted without reading anything else of its cycle and leaves no state behind: the kit
        tells the host after each Configure, and the host admits those requests without a call.
        False (the default): every request is sent."""
        return False


class Picker(Plugin):
    """Orders the candidate endpoints by preference.

    The kit places a round's cycles in order (and tells the host so, GetInfo's rounds): cycle k
    of a round is picked on a copy on which each endpoint that n earlier cycles of its round took
    as their first choice is moved by ``place_on(copy, e, n)``, its score lowered by
    n × (score − after-score), not clamped: in a round pick may be given scores below 0 (a
    picker that needs weights >= 0 sees to that itself). Otherwise pick needs to know nothing of
    rounds.
    """
    stage = STAGE_PICKER

    def pick(self, cycle: Cycle, scores: Sequence[float]) -> Sequence[int]:
        """Indices into cycle.endpoints, best first; scores[i] is the weighted score of endpoint i.
        Returning every index lets the proxy fail over down the list."""
        raise NotImplementedError


class Detector(Plugin):
    """Flow control's saturation detector: which endpoints have room for a request now. A request
    for which none has room waits in the router's queue and is decided again when one has."""
    stage = STAGE_DETECTOR

    def detect(self, cycle: Cycle) -> SaturationVerdict | Sequence[int]:
        """One room count per endpoint of cycle, in order (0: full), or a SaturationVerdict to add
        the estimated wait, why every endpoint is full and the slots it believes each has. A count
        list of another length than the endpoints is that cycle's error."""
        raise NotImplementedError


class Orderer(Plugin):
    """Flow control's ordering policy: the key by which a request waits in the router's queue.
    It is asked once, when the request enters the queue; cycle.now is the request's arrival."""
    stage = STAGE_ORDER

    def order(self, cycle: Cycle) -> OrderKey | int:
        """cycle's request's key: an OrderKey, or just its rank (an int64, lower leaves first)."""
        raise NotImplementedError


def stage_of(impl: Any) -> int:
    """The stage impl serves, or 0 when it is none of the stage classes."""
    for cls in (Producer, Filter, Scorer, Admitter, Picker, Detector, Orderer):
        if isinstance(impl, cls):
            return cls.stage
    return 0
