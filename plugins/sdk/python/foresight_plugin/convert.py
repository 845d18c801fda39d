"""Conversions between the wire messages and the Python types (mirrors plugins/sdk/convert.go).

The cycle travels in columnar form (see Endpoints in proto/foresight/v1/types.proto): entry i of
every column describes endpoint i, and a column is either empty (not sent: every entry reads as
zero) or exactly ``count`` long; any other length makes the cycle invalid (INVALID_ARGUMENT).
"""

from __future__ import annotations

import datetime as _dt
import operator
from itertools import repeat
from typing import Optional

from ._gen import types_pb2
from .status import InvalidArgument, StatusError
from .cycle import (
    NO_LABELS, NO_ROUND, SLO, AdmitVerdict, Cycle, Disaggregation, Endpoint, EndpointState, ExcludedEndpoint,
    FilterVerdict,
    ObserveResult, OrderKey, Prediction, PredictorStats, Request, Round, Sample, SaturationVerdict,
    TargetStats,
)

_UTC = _dt.timezone.utc

#: The columns of EndpointStates, in field order, with their zero value.
STATE_COLUMNS = (
    ("kv_cache_usage", 0.0), ("waiting", 0), ("running", 0), ("inflight_requests", 0),
    ("prefill_tokens_in_flight", 0), ("decode_tokens_in_flight", 0), ("prefix_match", 0.0),
    ("min_running_tpot_slo_ms", 0.0), ("metrics_age_ms", 0.0), ("last_output_age_ms", 0.0),
    ("dispatched_since_scrape", 0), ("first_token_rate", 0.0), ("running_tpot_ms", 0.0),
)


def _column(name: str, col, n: int, zero):
    """The column as an iterable of n values: zeros when empty, else its entries."""
    size = len(col)
    if size == 0:
        return repeat(zero, n)
    if size != n:
        raise InvalidArgument(f'invalid cycle: column "{name}" has {size} entries for {n} endpoints')
    return col


def _time(ts) -> _dt.datetime:
    return _dt.datetime.fromtimestamp(ts.seconds, _UTC) + _dt.timedelta(microseconds=ts.nanos // 1000)


def cycle_from_proto(pc: types_pb2.Cycle) -> Cycle:
    """The Python form of a wire cycle; raises InvalidArgument when a column's length does not
    match the endpoint count (the count, or the number of ids from a host that sends none)."""
    eps = pc.endpoints
    ids = eps.ids
    n = eps.count or len(ids)
    st = eps.states
    pr = eps.predictions
    # Checked in the Go SDK's order, so the first bad column named is the same.
    ids = _column("ids", ids, n, "")
    states = [_column(name, getattr(st, name), n, zero) for name, zero in STATE_COLUMNS]
    valid = _column("predictions.valid", pr.valid, n, False)
    ttft = _column("predictions.ttft_ms", pr.ttft_ms, n, 0.0)
    tpot = _column("predictions.tpot_ms", pr.tpot_ms, n, 0.0)
    ttft_after = _column("predictions.ttft_after_ms", pr.ttft_after_ms, n, 0.0)
    tpot_after = _column("predictions.tpot_after_ms", pr.tpot_after_ms, n, 0.0)
    ttft_spread = _column("predictions.ttft_spread", pr.ttft_spread, n, 0.0)
    tpot_spread = _column("predictions.tpot_spread", pr.tpot_spread, n, 0.0)
    labels = eps.labels
    if len(labels) == 0:
        labels = repeat(NO_LABELS, n)
    else:  # each endpoint's label map, read-only by convention (copying costs more than decoding)
        labels = [l.values for l in _column("labels", labels, n, None)]
    # Tuples straight from the columns: no Python call per endpoint.
    new = tuple.__new__
    endpoints = list(map(new, repeat(Endpoint), zip(
        ids, labels, map(new, repeat(EndpointState), zip(*states)),
        map(new, repeat(Prediction), zip(valid, ttft, tpot, ttft_after, tpot_after,
                                                   ttft_spread, tpot_spread)))))
    # Not a column: the excluded endpoints have their own length, usually zero.
    excluded = [ExcludedEndpoint(x.id, dict(x.labels), x.reason) for x in eps.excluded]
    rnd = NO_ROUND
    if pc.HasField("round"):
        rnd = Round(pc.round.position, pc.round.size)
    return Cycle(request_from_proto(pc.request), endpoints,
                 _time(pc.now) if pc.HasField("now") else None, pc.seed, excluded, rnd)


def request_from_proto(p: types_pb2.Request) -> Request:
    """The Python form of a wire request (an absent request reads as the zero request)."""
    slo = p.slo
    d = p.disaggregation
    return Request(p.id, p.model, p.input_tokens, p.max_output_tokens, p.streaming,
                   SLO(slo.ttft_ms, slo.tpot_ms), p.priority, p.session_id,
                   list(p.prefix_block_hashes), dict(p.labels),
                   Disaggregation(d.hop, d.decode_endpoint, d.decode_ttft_ms, d.decode_tpot_ms))


def request_to_proto(r: Request) -> types_pb2.Request:
    """The wire form of a request."""
    return types_pb2.Request(
        id=r.id, model=r.model, input_tokens=r.input_tokens, max_output_tokens=r.max_output_tokens,
        streaming=r.streaming, slo=types_pb2.Slo(ttft_ms=r.slo.ttft_ms, tpot_ms=r.slo.tpot_ms),
        priority=r.priority, session_id=r.session_id, prefix_block_hashes=r.prefix_block_hashes,
        labels=r.labels, disaggregation=_disaggregation_to_proto(r.disaggregation))


def _disaggregation_to_proto(d: Disaggregation) -> Optional[types_pb2.Disaggregation]:
    """The wire form of d: None for a request served whole, as the host sends it."""
    if d == Disaggregation():
        return None
    return types_pb2.Disaggregation(hop=d.hop, decode_endpoint=d.decode_endpoint,
                                    decode_ttft_ms=d.decode_ttft_ms, decode_tpot_ms=d.decode_tpot_ms)


def cycle_to_proto(c: Cycle) -> types_pb2.Cycle:
    """The wire form of a cycle, as the host sends it with every column (for tests and tools)."""
    eps = types_pb2.Endpoints(count=len(c.endpoints), ids=[e.id for e in c.endpoints])
    for name, _ in STATE_COLUMNS:
        getattr(eps.states, name).extend(getattr(e.state, name) for e in c.endpoints)
    if any(e.labels for e in c.endpoints):
        for e in c.endpoints:
            eps.labels.add().values.update(e.labels)
    if any(e.prediction.valid for e in c.endpoints):
        eps.predictions.CopyFrom(predictions_to_proto([e.prediction for e in c.endpoints]))
    for x in c.excluded:
        eps.excluded.add(id=x.id, labels=x.labels, reason=x.reason)
    out = types_pb2.Cycle(request=request_to_proto(c.request), endpoints=eps, seed=c.seed)
    if c.round != NO_ROUND:  # absent for a cycle decided alone, as the Go host sends it
        out.round.position = max(c.round.position, 0)
        out.round.size = max(c.round.size, 0)
    if c.now is not None:
        out.now.FromDatetime(c.now)
    return out


#: The prediction columns sent only when some entry is not zero; each is named alike on the wire
#: and in Prediction.
_OPTIONAL_PREDICTION_COLUMNS = ("ttft_after_ms", "tpot_after_ms", "ttft_spread", "tpot_spread")


def predictions_to_proto(preds) -> types_pb2.Predictions:
    """The columnar wire form of one prediction per endpoint (None reads as no prediction). Each
    optional column (ttft_after_ms, tpot_after_ms, ttft_spread, tpot_spread) is sent only when one
    of its entries is not zero, so predictions that do not fill it stay as lean as before the
    columns existed (wire.OptionalColumn)."""
    out = types_pb2.Predictions()
    ps = [Prediction() if p is None else p for p in preds]
    out.valid.extend(bool(p.valid) for p in ps)
    out.ttft_ms.extend(p.ttft_ms for p in ps)
    out.tpot_ms.extend(p.tpot_ms for p in ps)
    for name in _OPTIONAL_PREDICTION_COLUMNS:
        col = [getattr(p, name) for p in ps]
        if any(col):
            getattr(out, name).extend(col)
    return out


def _state_from_proto(st: types_pb2.EndpointState) -> EndpointState:
    return EndpointState._make(getattr(st, name) for name, _ in STATE_COLUMNS)


def sample_from_proto(p: types_pb2.Sample) -> Sample:
    """The Python form of a wire sample."""
    pr = p.predicted
    return Sample(request_from_proto(p.request), p.endpoint_id, _state_from_proto(p.state),
                  Prediction(pr.valid, pr.ttft_ms, pr.tpot_ms), p.actual_ttft_ms, p.actual_tpot_ms,
                  p.output_tokens, _time(p.dispatched_at) if p.HasField("dispatched_at") else None)


def sample_to_proto(s: Sample) -> types_pb2.Sample:
    """The wire form of a sample (for tests and tools)."""
    from ._gen import producer_pb2
    out = producer_pb2.Sample(
        request=request_to_proto(s.request), endpoint_id=s.endpoint_id,
        state=types_pb2.EndpointState(**{name: getattr(s.state, name) for name, _ in STATE_COLUMNS}),
        predicted=types_pb2.Prediction(valid=s.predicted.valid, ttft_ms=s.predicted.ttft_ms,
                                       tpot_ms=s.predicted.tpot_ms),
        actual_ttft_ms=s.actual_ttft_ms, actual_tpot_ms=s.actual_tpot_ms,
        output_tokens=s.output_tokens)
    if s.dispatched_at is not None:
        out.dispatched_at.FromDatetime(s.dispatched_at)
    return out


def predictor_stats_to_proto(s: PredictorStats | None):
    """The wire form of a producer's stats (None stays None)."""
    if s is None:
        return None
    from ._gen import producer_pb2

    def target(t: TargetStats):
        out = producer_pb2.TargetStats(samples=t.samples, mape=t.mape, mae=t.mae)
        if t.quantile_coverage is not None:
            out.quantile_coverage = t.quantile_coverage
        return out
    return producer_pb2.PredictorStats(model_version=s.model_version, training_rows=s.training_rows,
                                       ttft=target(s.ttft), tpot=target(s.tpot), drift=s.drift)


def filter_verdict(v) -> FilterVerdict:
    """A filter's return value as a FilterVerdict: a verdict, or just the kept indices."""
    return v if isinstance(v, FilterVerdict) else FilterVerdict(list(v))


def admit_verdict(v) -> AdmitVerdict:
    """An admitter's return value as an AdmitVerdict: a verdict, or just a bool."""
    if isinstance(v, AdmitVerdict):
        return v
    if isinstance(v, bool):
        return AdmitVerdict(v)
    raise TypeError(f"admit must return an AdmitVerdict or a bool, got {type(v).__name__}")


def observe_result(v) -> ObserveResult:
    """A producer's observe return value as an ObserveResult: a result, or just the count."""
    return v if isinstance(v, ObserveResult) else ObserveResult(int(v))


def saturation_verdict(v) -> SaturationVerdict:
    """A detector's return value as a SaturationVerdict: a verdict, or just the room counts."""
    if isinstance(v, SaturationVerdict):
        return v
    if isinstance(v, (str, bytes, dict)) or not hasattr(v, "__len__"):
        raise StatusError("detect must return a SaturationVerdict or a list of room counts, "
                          f"got {type(v).__name__}")
    return SaturationVerdict(list(v))


# The largest room or slot count the wire carries (uint32); the host reads no more than 2^31 - 1
# anyway.
_MAX_COUNT = (1 << 32) - 1


def room_to_proto(room, n: int) -> list:
    """The wire form of a detector's room counts for a cycle of n endpoints: one per endpoint
    (another length is that cycle's error, as in the Go SDK), a negative count becoming 0 (full)
    and one beyond the wire's uint32 its largest value."""
    if len(room) != n:
        raise StatusError(f"detector returned {len(room)} room counts for {n} endpoints")
    out = []
    for i, r in enumerate(room):
        try:
            r = operator.index(r)  # an int; a float such as 1.5 is refused, not truncated
        except TypeError:
            raise StatusError(f"detector returned room[{i}] = {r!r}: want an int") from None
        out.append(min(max(r, 0), _MAX_COUNT))
    return out


def slots_to_proto(slots, n: int) -> list:
    """The wire form of a detector's slot counts for a cycle of n endpoints: none (an empty list
    or None), or one per endpoint, each an int >= 0 (another length or a negative count is that
    cycle's error, as in the Go SDK), one beyond the wire's uint32 its largest value."""
    if slots is None or len(slots) == 0:
        return []
    if len(slots) != n:
        raise StatusError(f"detector returned {len(slots)} slot counts for {n} endpoints")
    out = []
    for i, s in enumerate(slots):
        try:
            s = operator.index(s)
        except TypeError:
            raise StatusError(f"detector returned slots[{i}] = {s!r}: want an int >= 0") from None
        if s < 0:
            raise StatusError(f"detector returned slots[{i}] = {s}: want an int >= 0")
        out.append(min(s, _MAX_COUNT))
    return out


def wait_ms_of(v: SaturationVerdict) -> float:
    """The verdict's wait estimate as it travels: its own, or when it has none 0 if some endpoint
    has room and -1 (unknown) if none has."""
    if v.wait_ms is None:
        return -1.0 if v.saturated() else 0.0
    if isinstance(v.wait_ms, bool) or not isinstance(v.wait_ms, (int, float)) or v.wait_ms != v.wait_ms:
        # (v != v: NaN, which estimates nothing; -1 says "unknown".)
        raise StatusError(f"detector returned wait_ms = {v.wait_ms!r}: want a number of milliseconds")
    return float(v.wait_ms)


def order_key(v) -> OrderKey:
    """An orderer's return value as an OrderKey: a key, or just the rank."""
    if isinstance(v, OrderKey):
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        return OrderKey(v)
    raise StatusError(f"order must return an OrderKey or an int rank, got {type(v).__name__}")


_INT64 = (-(1 << 63), (1 << 63) - 1)


def order_key_to_proto(k: OrderKey):
    """The wire form of an order key; raises naming the field that cannot travel: a rank that is
    not an int64, a naive or non-datetime hopeless_after, a flow that is not a string."""
    from ._gen import order_pb2
    if isinstance(k.rank, bool) or not isinstance(k.rank, int) or not _INT64[0] <= k.rank <= _INT64[1]:
        raise StatusError(f"order returned rank {k.rank!r}: want an int64 (an int in [-2^63, 2^63))")
    if not isinstance(k.flow, str):
        raise StatusError(f"order returned flow {k.flow!r}: want a string")
    out = order_pb2.OrderResult(rank=k.rank, flow=k.flow)
    h = k.hopeless_after
    if h is not None:
        # A naive datetime is refused rather than read as UTC: datetime.now() is naive local time,
        # and a deadline off by the zone's offset would go unnoticed.
        if not isinstance(h, _dt.datetime) or h.utcoffset() is None:
            raise StatusError(f"order returned hopeless_after {h!r}: want a timezone-aware datetime "
                              "(e.g. cycle.now + timedelta) or None")
        out.hopeless_after.FromDatetime(h.astimezone(_UTC))
    return out
