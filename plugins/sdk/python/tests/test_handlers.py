"""The services' per-cycle semantics, without gRPC (the Go SDK's server.go shims)."""

import io
import json
import unittest

from tests.support import fp  # noqa: F401
from foresight_plugin import convert
from foresight_plugin.handlers import Handlers
from foresight_plugin.log import Logger
from foresight.v1 import (
    admitter_pb2, filter_pb2, picker_pb2, plugin_pb2, producer_pb2, scorer_pb2, types_pb2,
)


def cycle(waiting, priority=0):
    return convert.cycle_to_proto(fp.Cycle(
        request=fp.Request(id="r", priority=priority),
        endpoints=[fp.Endpoint(f"e{i}", state=fp.EndpointState(waiting=w)) for i, w in enumerate(waiting)]))


def malformed():
    c = cycle([1, 2])
    del c.endpoints.states.waiting[1]
    return c


class QueueScorer(fp.Scorer):
    type = "queue-scorer"
    description = "1 / (1 + waiting)"
    parameters = {"weight": 1.0, "mode": "plain"}
    reads = ["endpoints.states.waiting"]

    def configure(self, params):
        fp.check_range("weight", params["weight"], 0, 10)
        fp.check_one_of("mode", params["mode"], "plain", "fail", "status")

    def score(self, c):
        mode = self.params["mode"]
        if mode == "fail" and c.endpoints[0].state.waiting == 0:
            raise ZeroDivisionError("division by zero")
        if mode == "status":
            raise fp.Unavailable("no model yet")
        return [self.params["weight"] / (1 + e.state.waiting) for e in c.endpoints]


class HandlersTest(unittest.TestCase):
    def setUp(self):
        self.log = io.StringIO()
        self.impl = QueueScorer()
        self.impl.set_parameters(None)
        self.h = Handlers(self.impl, "1.2.3", Logger(self.log))

    def test_get_info(self):
        info = self.h.get_info()
        self.assertEqual((info.type, info.stage, info.version, info.description, list(info.reads)),
                         ("queue-scorer", plugin_pb2.STAGE_SCORER, "1.2.3", "1 / (1 + waiting)",
                          ["endpoints.states.waiting"]))

    def test_configure_accepts_merges_and_rejects(self):
        resp = self.h.configure(plugin_pb2.ConfigureRequest(parameters=b'{"weight": 2}'))
        self.assertFalse(resp.HasField("status"))
        self.assertEqual(self.impl.params, {"weight": 2.0, "mode": "plain"})
        for raw, message in [
            (b'{"wieght": 1}', 'decoding parameters: json: unknown field "wieght"'),
            (b'{"weight": 11}', 'parameter "weight" must be in [0, 10], got 11'),
            (b'{"weight": "x"}', 'decoding parameters: parameter "weight": got JSON string, want float64'),
            (b'{"mode": "loud"}', 'parameter "mode" must be one of ["plain" "fail" "status"], got "loud"'),
            (b'{"weight": 1} {}', "decoding parameters: trailing data after the JSON object"),
        ]:
            with self.subTest(raw=raw):
                resp = self.h.configure(plugin_pb2.ConfigureRequest(parameters=raw))
                self.assertEqual(resp.status.code, types_pb2.STATUS_CODE_INVALID_ARGUMENT)
                self.assertEqual(resp.status.message, message)
                # A rejected Configure leaves the parameters in force.
                self.assertEqual(self.impl.params, {"weight": 2.0, "mode": "plain"})
        resp = self.h.configure(plugin_pb2.ConfigureRequest(parameters=b""))
        self.assertFalse(resp.HasField("status"))
        self.assertEqual(self.impl.params, {"weight": 1.0, "mode": "plain"})

    def test_configure_answers_admits_unsheddable(self):
        class Gate(fp.Admitter):
            type = "gate"
            description = "sheds every sheddable request"
            parameters = {"unread": False}

            def admits_unsheddable(self):
                return self.params["unread"]

            def admit(self, c):
                return c.request.priority >= 0

        gate = Gate()
        h = Handlers(gate, "1.0.0", Logger(self.log))
        self.assertTrue(h.configure(plugin_pb2.ConfigureRequest(parameters=b'{"unread": true}')).admits_unsheddable)
        self.assertFalse(h.configure(plugin_pb2.ConfigureRequest(parameters=b'{"unread": false}')).admits_unsheddable)
        # Other stages, and an admitter that does not say, leave it false.
        self.assertFalse(self.h.configure(plugin_pb2.ConfigureRequest(parameters=b"")).admits_unsheddable)

    def test_score_answers_each_cycle_of_a_batch(self):
        req = scorer_pb2.ScoreRequest(cycles=[cycle([0, 1, 3]), malformed(), cycle([])])
        resp = self.h.score(scorer_pb2.ScoreRequest.FromString(req.SerializeToString()))
        self.assertEqual(len(resp.results), 3)
        ok, bad, empty = resp.results
        self.assertFalse(ok.HasField("status"))
        self.assertEqual(list(ok.scores), [1.0, 0.5, 0.25])
        self.assertEqual(bad.status.code, types_pb2.STATUS_CODE_INVALID_ARGUMENT)
        self.assertEqual(bad.status.message, 'invalid cycle: column "waiting" has 1 entries for 2 endpoints')
        self.assertEqual(list(bad.scores), [])
        self.assertFalse(empty.HasField("status"))
        self.assertEqual(list(empty.scores), [])
        self.assertEqual(self.log.getvalue(), "", "a malformed cycle is the host's problem, not logged")

    def test_an_exception_fails_only_its_cycle_and_is_logged_once(self):
        self.impl.set_parameters('{"mode": "fail"}')
        resp = self.h.score(scorer_pb2.ScoreRequest(cycles=[cycle([0]), cycle([2]), cycle([0])]))
        first, second, third = resp.results
        self.assertEqual(first.status.code, types_pb2.STATUS_CODE_ERROR)
        self.assertEqual(first.status.message, "ZeroDivisionError: division by zero")
        self.assertEqual(list(second.scores), [1 / 3])
        self.assertEqual(third.status.code, types_pb2.STATUS_CODE_ERROR)
        lines = self.log.getvalue().splitlines()
        self.assertEqual(len(lines), 1, "the second failure within the interval is not logged")
        entry = json.loads(lines[0])
        self.assertEqual(entry["@level"], "error")
        self.assertEqual(entry["method"], "score")
        self.assertIn("ZeroDivisionError", entry["traceback"])

    def test_a_status_error_keeps_its_code(self):
        self.impl.set_parameters('{"mode": "status"}')
        r = self.h.score(scorer_pb2.ScoreRequest(cycles=[cycle([1])])).results[0]
        self.assertEqual((r.status.code, r.status.message), (types_pb2.STATUS_CODE_UNAVAILABLE, "no model yet"))
        self.assertEqual(self.log.getvalue(), "")


class Everything(fp.Producer, fp.Filter, fp.Admitter, fp.Picker):
    """One object with every stage's method, served through each stage's handler in turn."""
    type = "everything"

    def produce(self, c):
        return [fp.Prediction(True, 10.0 * e.state.waiting, 1.0) if e.state.waiting else None
                for e in c.endpoints]

    def observe(self, samples):
        return fp.ObserveResult(len(samples), fp.PredictorStats(
            model_version=2, training_rows=5, ttft=fp.TargetStats(3, 0.1, 4.0, 0.9), drift=True))

    def filter(self, c):
        return [i for i, e in enumerate(c.endpoints) if e.state.waiting > 0]

    def admit(self, c):
        return fp.AdmitVerdict(False, "sheddable") if c.request.priority < 0 else True

    def pick(self, c, scores):
        return sorted(range(len(scores)), key=lambda i: -scores[i])


class OtherStagesTest(unittest.TestCase):
    def setUp(self):
        self.h = Handlers(Everything(), "0.1.0", Logger(io.StringIO()))

    def test_produce(self):
        r = self.h.produce(producer_pb2.ProduceRequest(cycles=[cycle([0, 2]), malformed()])).results
        self.assertEqual(list(r[0].predictions.valid), [False, True])
        self.assertEqual(list(r[0].predictions.ttft_ms), [0.0, 20.0])
        self.assertEqual(r[1].status.code, types_pb2.STATUS_CODE_INVALID_ARGUMENT)

    def test_observe(self):
        s = convert.sample_to_proto(fp.Sample(endpoint_id="e", actual_ttft_ms=5.0))
        resp = self.h.observe(producer_pb2.ObserveRequest(samples=[s, s]))
        self.assertEqual(resp.accepted, 2)
        self.assertEqual((resp.stats.model_version, resp.stats.training_rows, resp.stats.drift), (2, 5, True))
        self.assertTrue(resp.stats.ttft.HasField("quantile_coverage"))
        self.assertFalse(resp.stats.tpot.HasField("quantile_coverage"))

    def test_filter(self):
        r = self.h.filter(filter_pb2.FilterRequest(cycles=[cycle([0, 3, 1])])).results[0]
        self.assertEqual((list(r.kept), r.reason), ([1, 2], ""))

    def test_admit(self):
        r = self.h.admit(admitter_pb2.AdmitRequest(cycles=[cycle([1]), cycle([1], priority=-1)])).results
        self.assertEqual([(x.admitted, x.reason) for x in r], [(True, ""), (False, "sheddable")])

    def test_pick_needs_a_score_set_per_cycle(self):
        req = picker_pb2.PickRequest(cycles=[cycle([1, 1, 1]), cycle([1])])
        req.scores.add().values.extend([0.2, 0.9, 0.5])
        r = self.h.pick(req).results
        self.assertEqual(list(r[0].order), [1, 2, 0])
        self.assertEqual((r[1].status.code, r[1].status.message),
                         (types_pb2.STATUS_CODE_INVALID_ARGUMENT, "pick request has fewer score sets than cycles"))


class HealthyZoneFilter(fp.Filter):
    """Keeps the candidates whose zone has no member out of the rotation: a filter that judges a
    failure domain, which it can do only from the cycle's excluded endpoints."""
    type = "healthy-zone-filter"
    reads = ["endpoints.labels", "endpoints.excluded"]

    def filter(self, c):
        failing = {x.labels.get("zone") for x in c.excluded}
        return fp.FilterVerdict([i for i, e in enumerate(c.endpoints) if e.labels.get("zone") not in failing],
                                f"{len(c.excluded)} excluded")


class ExcludedTest(unittest.TestCase):
    def test_a_filter_sees_the_excluded_endpoints_of_each_cycle(self):
        h = Handlers(HealthyZoneFilter(), "0.1.0", Logger(io.StringIO()))
        zones = [{"zone": "z0"}, {"zone": "z1"}, {"zone": "z2"}]
        cycles = [
            # z1 has a member out: its candidate goes.
            fp.Cycle(endpoints=[fp.Endpoint(f"e{i}", z) for i, z in enumerate(zones)],
                     excluded=[fp.ExcludedEndpoint("x", {"zone": "z1"}, fp.EXCLUDED_EJECTED)]),
            # Nothing out: every candidate stays (the excluded list of one cycle is not the next's).
            fp.Cycle(endpoints=[fp.Endpoint(f"e{i}", z) for i, z in enumerate(zones)]),
        ]
        r = h.filter(filter_pb2.FilterRequest(cycles=[convert.cycle_to_proto(c) for c in cycles])).results
        self.assertEqual([(list(x.kept), x.reason) for x in r], [([0, 2], "1 excluded"), ([0, 1, 2], "0 excluded")])


if __name__ == "__main__":
    unittest.main()
