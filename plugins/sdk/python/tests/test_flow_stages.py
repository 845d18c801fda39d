"""Flow control's two stages, detector and order: their services' per-cycle semantics without gRPC
(the Go SDK's detectorServer and orderServer in plugins/sdk/server.go)."""

import datetime as dt
import io
import unittest

from tests.support import fp  # noqa: F401  (sets up the paths)
from foresight_plugin import convert
from foresight_plugin.handlers import Handlers
from foresight_plugin.log import Logger
from foresight.v1 import detector_pb2, order_pb2, plugin_pb2, types_pb2

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 11, 26, 1, 2, 3, 456789, tzinfo=UTC)


def cycle(waiting, ttft_slo=0.0, tenant=""):
    labels = {"tenant": tenant} if tenant else {}
    return convert.cycle_to_proto(fp.Cycle(
        request=fp.Request(id="r", slo=fp.SLO(ttft_slo, 0), labels=labels),
        endpoints=[fp.Endpoint(f"e{i}", state=fp.EndpointState(waiting=w)) for i, w in enumerate(waiting)],
        now=NOW))


def malformed():
    c = cycle([1, 2])
    del c.endpoints.states.waiting[1]
    return c


# The slots QueueDetector believes in, by request id.
SLOTS = {"slots": [8, 0, 2**40], "slots-none": None, "slots-short": [8], "slots-negative": [8, -1],
         "slots-float": [8.0, 4]}


class QueueDetector(fp.Detector):
    """Room = 4 - waiting; its answer's shape is chosen by the request id, to reach every path."""
    type = "queue-detector"
    reads = ["request", "endpoints.states.waiting"]

    def detect(self, c):
        room = [4 - e.state.waiting for e in c.endpoints]
        kind = c.request.id
        if kind == "list":
            return room
        if kind == "short":
            return room[:-1]
        if kind == "float":
            return [1.5 for _ in room]
        if kind == "huge":
            return [2**40 for _ in room]
        if kind == "wait":
            return fp.SaturationVerdict(room, wait_ms=250.0, reason="engines-full")
        if kind == "string":
            return "full"
        if kind == "nan":
            return fp.SaturationVerdict(room, wait_ms=float("nan"))
        if kind in SLOTS:
            return fp.SaturationVerdict(room, slots=SLOTS[kind])
        return fp.SaturationVerdict(room, reason="" if any(r > 0 for r in room) else "engines-full")


def detect(h, *cycles):
    return h.detect(detector_pb2.DetectRequest(cycles=list(cycles))).results


def with_id(pc, rid):
    pc.request.id = rid
    return pc


class DetectTest(unittest.TestCase):
    def setUp(self):
        self.h = Handlers(QueueDetector(), "0.1.0", Logger(io.StringIO()))

    def test_get_info(self):
        self.assertEqual(self.h.get_info().stage, plugin_pb2.STAGE_DETECTOR)

    def test_each_cycle_of_a_batch(self):
        ok, full, bad, empty = detect(self.h, cycle([0, 3, 9]), cycle([4, 6]), malformed(), cycle([]))
        # room 4-0, 4-3, 4-9 = 4, 1, -5: a negative count travels as 0 (full). Some room and no
        # estimate: the wait is 0.
        self.assertFalse(ok.HasField("status"))
        self.assertEqual((list(ok.room), ok.wait_ms, ok.reason), ([4, 1, 0], 0.0, ""))
        # 0 and -2: no room anywhere, no estimate: the wait is unknown (-1).
        self.assertEqual((list(full.room), full.wait_ms, full.reason), ([0, 0], -1.0, "engines-full"))
        self.assertEqual(bad.status.code, types_pb2.STATUS_CODE_INVALID_ARGUMENT)
        self.assertEqual(bad.status.message, 'invalid cycle: column "waiting" has 1 entries for 2 endpoints')
        # No endpoints: nothing has room, and no counts is the right count.
        self.assertFalse(empty.HasField("status"))
        self.assertEqual((list(empty.room), empty.wait_ms), ([], -1.0))

    def test_answer_shapes(self):
        tests = [
            # (request id, waiting, room, wait_ms, reason, status code, status message)
            ("list", [1, 7], [3, 0], 0.0, "", None, None),
            ("wait", [5, 6], [0, 0], 250.0, "engines-full", None, None),
            # 2^40 is beyond the wire's uint32: its largest value, 2^32 - 1.
            ("huge", [0], [2**32 - 1], 0.0, "", None, None),
            ("short", [1, 2], [], 0.0, "", types_pb2.STATUS_CODE_ERROR,
             "detector returned 1 room counts for 2 endpoints"),
            ("float", [1], [], 0.0, "", types_pb2.STATUS_CODE_ERROR,
             "detector returned room[0] = 1.5: want an int"),
            ("string", [1], [], 0.0, "", types_pb2.STATUS_CODE_ERROR,
             "detect must return a SaturationVerdict or a list of room counts, got str"),
            ("nan", [1], [], 0.0, "", types_pb2.STATUS_CODE_ERROR,
             "detector returned wait_ms = nan: want a number of milliseconds"),
        ]
        for rid, waiting, room, wait, reason, code, message in tests:
            with self.subTest(rid):
                r = detect(self.h, with_id(cycle(waiting), rid))[0]
                self.assertEqual((list(r.room), r.wait_ms, r.reason), (room, wait, reason))
                if code is None:
                    self.assertFalse(r.HasField("status"))
                else:
                    self.assertEqual((r.status.code, r.status.message), (code, message))

    def test_slots(self):
        tests = [
            # (request id, waiting, room, slots, status code, status message)
            # 0: a slot count the detector does not know; 2^40: the wire's largest, 2^32 - 1.
            ("slots", [0, 1, 5], [4, 3, 0], [8, 0, 2**32 - 1], None, None),
            # None and the default: the detector believes nothing.
            ("slots-none", [1, 2], [3, 2], [], None, None),
            ("wait", [1, 2], [3, 2], [], None, None),
            ("slots-short", [1, 2], [], [], types_pb2.STATUS_CODE_ERROR,
             "detector returned 1 slot counts for 2 endpoints"),
            ("slots-negative", [1, 2], [], [], types_pb2.STATUS_CODE_ERROR,
             "detector returned slots[1] = -1: want an int >= 0"),
            ("slots-float", [1, 2], [], [], types_pb2.STATUS_CODE_ERROR,
             "detector returned slots[0] = 8.0: want an int >= 0"),
        ]
        for rid, waiting, room, slots, code, message in tests:
            with self.subTest(rid):
                r = detect(self.h, with_id(cycle(waiting), rid))[0]
                # As the host reads it: through the wire.
                r = detector_pb2.DetectResult.FromString(r.SerializeToString())
                self.assertEqual((list(r.room), list(r.slots)), (room, slots))
                if code is None:
                    self.assertFalse(r.HasField("status"))
                else:
                    self.assertEqual((r.status.code, r.status.message), (code, message))

    def test_a_failing_cycle_leaves_the_others(self):
        short, ok = detect(self.h, with_id(cycle([1, 2]), "short"), cycle([2]))
        self.assertEqual(short.status.code, types_pb2.STATUS_CODE_ERROR)
        self.assertEqual(list(ok.room), [2])


class DeadlineOrder(fp.Orderer):
    """EDF: rank = the TTFT deadline in Unix ns (the arrival without an objective), hopeless after
    the deadline, flow = the tenant label. Request ids pick the broken answers."""
    type = "deadline-order"

    def order(self, c):
        kind = c.request.id
        if kind == "int":
            return 7
        if kind == "naive":
            return fp.OrderKey(1, hopeless_after=dt.datetime(2026, 11, 26))
        if kind == "bool":
            return True
        if kind == "overflow":
            return fp.OrderKey(2**63)
        if kind == "flow":
            return fp.OrderKey(1, flow=3)
        deadline = None
        if c.request.slo.ttft_ms > 0:
            deadline = c.now + dt.timedelta(milliseconds=c.request.slo.ttft_ms)
        at = deadline or c.now
        rank = int((at - dt.datetime(1970, 1, 1, tzinfo=UTC)) / dt.timedelta(microseconds=1)) * 1000
        return fp.OrderKey(rank, deadline, c.request.labels.get("tenant", ""))


def order(h, *cycles):
    return h.order(order_pb2.OrderRequest(cycles=list(cycles))).results


class OrderTest(unittest.TestCase):
    def setUp(self):
        self.h = Handlers(DeadlineOrder(), "0.1.0", Logger(io.StringIO()))

    def test_get_info(self):
        self.assertEqual(self.h.get_info().stage, plugin_pb2.STAGE_ORDER)

    def test_each_cycle_of_a_batch(self):
        edf, fcfs, bad = order(self.h, cycle([1], ttft_slo=500, tenant="acme"), cycle([1]), malformed())
        now_ns = 1_795_654_923_456_789_000  # NOW in Unix ns (2026-11-26T01:02:03.456789Z)
        self.assertFalse(edf.HasField("status"))
        # The deadline: NOW + 500 ms.
        self.assertEqual((edf.rank, edf.flow), (now_ns + 500_000_000, "acme"))
        self.assertEqual(edf.hopeless_after.ToDatetime(tzinfo=UTC), NOW + dt.timedelta(milliseconds=500))
        # No objective: the arrival, never hopeless (hopeless_after absent), the host's flow key.
        self.assertEqual((fcfs.rank, fcfs.flow, fcfs.HasField("hopeless_after")), (now_ns, "", False))
        self.assertEqual(bad.status.code, types_pb2.STATUS_CODE_INVALID_ARGUMENT)

    def test_answer_shapes(self):
        tests = [
            # (request id, rank, status code, status message)
            ("int", 7, None, None),
            ("naive", 0, types_pb2.STATUS_CODE_ERROR,
             "order returned hopeless_after datetime.datetime(2026, 11, 26, 0, 0): want a "
             "timezone-aware datetime (e.g. cycle.now + timedelta) or None"),
            ("bool", 0, types_pb2.STATUS_CODE_ERROR, "order must return an OrderKey or an int rank, got bool"),
            ("overflow", 0, types_pb2.STATUS_CODE_ERROR,
             f"order returned rank {2**63}: want an int64 (an int in [-2^63, 2^63))"),
            ("flow", 0, types_pb2.STATUS_CODE_ERROR, "order returned flow 3: want a string"),
        ]
        for rid, rank, code, message in tests:
            with self.subTest(rid):
                r = order(self.h, with_id(cycle([1]), rid))[0]
                self.assertEqual(r.rank, rank)
                if code is None:
                    self.assertFalse(r.HasField("status"))
                    self.assertFalse(r.HasField("hopeless_after"))
                else:
                    self.assertEqual((r.status.code, r.status.message), (code, message))

    def test_hopeless_after_in_another_zone_travels_as_the_same_instant(self):
        class Fixed(fp.Orderer):
            type = "fixed-order"

            def order(self, c):
                return fp.OrderKey(0, dt.datetime(2026, 11, 26, 3, 0, tzinfo=dt.timezone(dt.timedelta(hours=2))))
        r = order(Handlers(Fixed(), "0.1.0", Logger(io.StringIO())), cycle([1]))[0]
        self.assertEqual(r.hopeless_after.ToDatetime(tzinfo=UTC), dt.datetime(2026, 11, 26, 1, 0, tzinfo=UTC))


class VerdictTest(unittest.TestCase):
    def test_saturated(self):
        self.assertTrue(fp.SaturationVerdict([0, 0]).saturated())
        self.assertTrue(fp.SaturationVerdict([]).saturated())
        self.assertFalse(fp.SaturationVerdict([0, 2]).saturated())


if __name__ == "__main__":
    unittest.main()
