"""The Foresight services' logic: wire requests in, sdk calls, wire answers out (mirrors
plugins/sdk/server.go). Nothing here knows about gRPC, so it is tested without a server.

Per cycle of a batch, exactly as the Go SDK's shims: a cycle that does not decode is answered with
its INVALID_ARGUMENT status; a stage method that raises is answered with the exception's status
(StatusError's code, else CODE_ERROR); the other cycles of the batch are answered normally.
"""

from __future__ import annotations

import time

from ._gen import (
    admitter_pb2, detector_pb2, filter_pb2, order_pb2, picker_pb2, plugin_pb2, producer_pb2,
    scorer_pb2,
)
from .convert import (
    admit_verdict, cycle_from_proto, filter_verdict, observe_result, order_key,
    order_key_to_proto, predictions_to_proto, predictor_stats_to_proto, room_to_proto,
    sample_from_proto, saturation_verdict, slots_to_proto, wait_ms_of,
)
from .log import Logger, logger as default_logger
from .rounds import after_scores, pick_round
from .cycle import STAGE_PICKER
from .stages import Plugin, stage_of
from .status import InvalidArgument, StatusError, describe, status_to_proto

__all__ = ["Handlers"]


class _ErrorLog:
    """Logs a stage's unexpected exceptions with their traceback, at most one line per interval
    (a stage failing on every cycle must not flood the host's log); counts the ones left out."""

    def __init__(self, log: Logger, interval: float = 10.0):
        self._log, self._interval = log, interval
        self._next, self._suppressed = 0.0, 0

    def __call__(self, method: str, exc: BaseException) -> None:
        now = time.monotonic()
        if now < self._next:
            self._suppressed += 1
            return
        self._next = now + self._interval
        fields = {"method": method}
        if self._suppressed:
            fields["suppressed_since_last"] = self._suppressed
            self._suppressed = 0
        self._log.exception("stage raised an exception; the cycle gets the stage's fallback", exc, **fields)


class Handlers:
    """Answers the PluginService and stage RPCs for one implementation."""

    def __init__(self, impl: Plugin, version: str, log: Logger | None = None):
        self.impl, self.version = impl, version
        self.stage = stage_of(impl)
        self._error = _ErrorLog(log or default_logger)

    def _failed(self, method: str, exc: BaseException):
        if not isinstance(exc, StatusError):
            self._error(method, exc)
        return status_to_proto(exc)

    # PluginService

    def get_info(self, _req=None) -> plugin_pb2.GetInfoResponse:
        impl = self.impl
        # Every picker this kit serves places rounds (pick_round); the field means nothing for
        # the other stages.
        return plugin_pb2.GetInfoResponse(type=impl.type, stage=self.stage, version=self.version,
                                          description=impl.description, reads=list(impl.reads or ()),
                                          rounds=self.stage == STAGE_PICKER)

    def configure(self, req: plugin_pb2.ConfigureRequest) -> plugin_pb2.ConfigureResponse:
        if req.instance:  # a host addresses named instances only in a plugin reporting multi_instance
            msg = f"instance {req.instance!r}: this plugin serves a single instance"
            return plugin_pb2.ConfigureResponse(status=status_to_proto(InvalidArgument(msg)))
        try:
            self.impl.set_parameters(req.parameters)
        except Exception as e:  # noqa: BLE001 - every rejection is the host's to report
            return plugin_pb2.ConfigureResponse(status=status_to_proto(InvalidArgument(describe(e))))
        unread = getattr(self.impl, "admits_unsheddable", None)
        return plugin_pb2.ConfigureResponse(admits_unsheddable=bool(unread()) if unread else False)

    # Stages. Each answers every cycle of the batch, in order.

    def score(self, req: scorer_pb2.ScoreRequest) -> scorer_pb2.ScoreResponse:
        out = scorer_pb2.ScoreResponse()
        impl = self.impl
        add, score = out.results.add, impl.score
        for pc in req.cycles:
            r = add()
            try:
                c = cycle_from_proto(pc)
                scores = list(score(c))
                r.scores.extend(scores)
                after = after_scores(impl, c, scores)
                if after is not None:
                    r.scores_after.extend(after)
            except Exception as e:  # noqa: BLE001
                r.Clear()
                r.status.CopyFrom(self._failed("score", e))
        return out

    def filter(self, req: filter_pb2.FilterRequest) -> filter_pb2.FilterResponse:
        out = filter_pb2.FilterResponse()
        for pc in req.cycles:
            r = out.results.add()
            try:
                v = filter_verdict(self.impl.filter(cycle_from_proto(pc)))
                r.kept.extend(v.kept)
                r.reason = v.reason
            except Exception as e:  # noqa: BLE001
                r.Clear()
                r.status.CopyFrom(self._failed("filter", e))
        return out

    def admit(self, req: admitter_pb2.AdmitRequest) -> admitter_pb2.AdmitResponse:
        out = admitter_pb2.AdmitResponse()
        for pc in req.cycles:
            r = out.results.add()
            try:
                v = admit_verdict(self.impl.admit(cycle_from_proto(pc)))
                r.admitted, r.reason = v.admitted, v.reason
            except Exception as e:  # noqa: BLE001
                r.Clear()
                r.status.CopyFrom(self._failed("admit", e))
        return out

    def pick(self, req: picker_pb2.PickRequest) -> picker_pb2.PickResponse:
        out = picker_pb2.PickResponse()
        cycles, errors = [], {}
        for i, pc in enumerate(req.cycles):
            try:
                cycles.append(cycle_from_proto(pc))
            except Exception as e:  # noqa: BLE001
                cycles.append(None)
                errors[i] = e
        scores = [list(s.values) for s in req.scores]
        after = [list(s.values) for s in req.scores_after]
        results = [out.results.add() for _ in cycles]
        impl_pick = self.impl.pick

        def pick(i, c, s):
            # Answers cycle i; returns the order given, None when the cycle failed.
            r = results[i]
            try:
                if i in errors:
                    raise errors[i]
                if s is None:
                    raise InvalidArgument("pick request has fewer score sets than cycles")
                order = list(impl_pick(c, s))
                r.order.extend(order)
                return order
            except Exception as e:  # noqa: BLE001
                r.Clear()
                r.status.CopyFrom(self._failed("pick", e))
                return None

        pick_round(cycles, scores, after, pick)
        return out

    def detect(self, req: detector_pb2.DetectRequest) -> detector_pb2.DetectResponse:
        out = detector_pb2.DetectResponse()
        for pc in req.cycles:
            r = out.results.add()
            try:
                c = cycle_from_proto(pc)
                v = saturation_verdict(self.impl.detect(c))
                r.room.extend(room_to_proto(v.room, len(c.endpoints)))
                r.wait_ms, r.reason = wait_ms_of(v), v.reason
                r.slots.extend(slots_to_proto(v.slots, len(c.endpoints)))
            except Exception as e:  # noqa: BLE001
                r.Clear()
                r.status.CopyFrom(self._failed("detect", e))
        return out

    def order(self, req: order_pb2.OrderRequest) -> order_pb2.OrderResponse:
        out = order_pb2.OrderResponse()
        for pc in req.cycles:
            r = out.results.add()
            try:
                r.CopyFrom(order_key_to_proto(order_key(self.impl.order(cycle_from_proto(pc)))))
            except Exception as e:  # noqa: BLE001
                r.Clear()
                r.status.CopyFrom(self._failed("order", e))
        return out

    def produce(self, req: producer_pb2.ProduceRequest) -> producer_pb2.ProduceResponse:
        out = producer_pb2.ProduceResponse()
        for pc in req.cycles:
            r = out.results.add()
            try:
                r.predictions.CopyFrom(predictions_to_proto(self.impl.produce(cycle_from_proto(pc))))
            except Exception as e:  # noqa: BLE001
                r.Clear()
                r.status.CopyFrom(self._failed("produce", e))
        return out

    def observe(self, req: producer_pb2.ObserveRequest) -> producer_pb2.ObserveResponse:
        try:
            samples = [sample_from_proto(s) for s in req.samples]
            res = observe_result(self.impl.observe(samples))
        except Exception as e:  # noqa: BLE001
            return producer_pb2.ObserveResponse(status=self._failed("observe", e))
        out = producer_pb2.ObserveResponse(accepted=max(int(res.accepted), 0))
        stats = predictor_stats_to_proto(res.stats)
        if stats is not None:
            out.stats.CopyFrom(stats)
        return out
