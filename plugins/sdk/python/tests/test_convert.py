"""Decoding cycles from the wire (the Go SDK's CycleFromProto rules)."""

import datetime as dt
import unittest

from tests.support import fp  # noqa: F401  (sets up the paths)
from foresight_plugin import convert
from foresight_plugin.status import CODE_INVALID_ARGUMENT, InvalidArgument
from foresight.v1 import types_pb2


def wire_cycle():
    """A wire cycle built by hand, as the host encodes one: three endpoints, every column, and two
    of the fleet's endpoints out of the rotation."""
    c = types_pb2.Cycle(seed=42)
    c.now.seconds, c.now.nanos = 1_795_000_000, 123_456_789
    r = c.request
    r.id, r.model, r.input_tokens, r.max_output_tokens, r.streaming = "req-1", "llama", 900, 128, True
    r.slo.ttft_ms, r.slo.tpot_ms, r.priority, r.session_id = 500.0, 40.0, -1, "sess"
    r.prefix_block_hashes.extend([11, 12, 2**64 - 1])
    r.labels["tenant"] = "acme"
    r.disaggregation.hop, r.disaggregation.decode_endpoint = types_pb2.HOP_PREFILL, "b:8000"
    r.disaggregation.decode_ttft_ms, r.disaggregation.decode_tpot_ms = 31.5, 9.25
    e = c.endpoints
    e.count = 3
    e.ids.extend(["a:8000", "b:8000", "c:8000"])
    s = e.states
    s.kv_cache_usage.extend([0.1, 0.5, 0.9])
    s.waiting.extend([0, 3, 7])
    s.running.extend([1, 2, 3])
    s.inflight_requests.extend([0, 4, 8])
    s.prefill_tokens_in_flight.extend([0, 1000, 2000])
    s.decode_tokens_in_flight.extend([5, 6, 7])
    s.prefix_match.extend([1.0, 0.0, 0.25])
    s.min_running_tpot_slo_ms.extend([0.0, 30.0, 50.0])
    s.metrics_age_ms.extend([1.0, 2.0, 3.0])
    s.last_output_age_ms.extend([-1.0, 4.5, 9.0])
    s.dispatched_since_scrape.extend([0, 2, 5])
    s.first_token_rate.extend([0.0, 12.5, 40.0])
    s.running_tpot_ms.extend([0.0, 18.5, 31.0])
    e.predictions.valid.extend([True, False, True])
    e.predictions.ttft_ms.extend([120.0, 0.0, 900.0])
    e.predictions.tpot_ms.extend([10.0, 0.0, 45.0])
    e.predictions.ttft_spread.extend([0.3, 0.0, 0.6])
    e.predictions.tpot_spread.extend([0.1, 0.0, 0.2])
    e.labels.add().values.update({"accelerator": "h100"})
    e.labels.add()
    e.labels.add().values.update({"accelerator": "l4", "cost": "0.8"})
    e.excluded.add(id="d:8000", labels={"topology.kubernetes.io/zone": "z1"}, reason="unhealthy")
    e.excluded.add(id="e:8000", reason="ejected")
    return c


class CycleFromProtoTest(unittest.TestCase):
    def test_every_field_lands_on_its_endpoint(self):
        pc = types_pb2.Cycle.FromString(wire_cycle().SerializeToString())
        c = convert.cycle_from_proto(pc)
        self.assertEqual(c.seed, 42)
        epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
        self.assertEqual(c.now, epoch + dt.timedelta(seconds=1_795_000_000, microseconds=123_456))
        self.assertEqual(c.now.utcoffset(), dt.timedelta(0))
        r = c.request
        self.assertEqual((r.id, r.model, r.input_tokens, r.max_output_tokens, r.streaming),
                         ("req-1", "llama", 900, 128, True))
        self.assertEqual((r.slo.ttft_ms, r.slo.tpot_ms, r.priority, r.session_id), (500.0, 40.0, -1, "sess"))
        self.assertTrue(r.slo.any())
        self.assertEqual(r.prefix_block_hashes, [11, 12, 2**64 - 1])
        self.assertEqual(r.labels, {"tenant": "acme"})

        self.assertEqual([e.id for e in c.endpoints], ["a:8000", "b:8000", "c:8000"])
        b = c.endpoints[1]
        self.assertEqual(b.state, fp.EndpointState(
            kv_cache_usage=0.5, waiting=3, running=2, inflight_requests=4,
            prefill_tokens_in_flight=1000, decode_tokens_in_flight=6, prefix_match=0.0,
            min_running_tpot_slo_ms=30.0, metrics_age_ms=2.0, last_output_age_ms=4.5,
            dispatched_since_scrape=2, first_token_rate=12.5, running_tpot_ms=18.5))
        self.assertFalse(b.prediction.valid)
        self.assertEqual(dict(b.labels), {})
        a, cc = c.endpoints[0], c.endpoints[2]
        self.assertEqual(a.prediction, fp.Prediction(True, 120.0, 10.0, ttft_spread=0.3, tpot_spread=0.1))
        self.assertTrue(a.prediction.usable())
        self.assertTrue(a.state.idle())
        self.assertFalse(cc.state.idle())
        self.assertEqual(dict(a.labels), {"accelerator": "h100"})
        self.assertEqual(cc.labels.get("cost"), "0.8")
        self.assertIsInstance(cc.state.waiting, int)
        self.assertTrue(c.any_prediction())
        # Not a column: two excluded endpoints beside three candidates, each with its own labels.
        self.assertEqual(c.excluded, [
            fp.ExcludedEndpoint("d:8000", {"topology.kubernetes.io/zone": "z1"}, fp.EXCLUDED_UNHEALTHY),
            fp.ExcludedEndpoint("e:8000", {}, fp.EXCLUDED_EJECTED)])

    def test_round_trip_through_cycle_to_proto(self):
        c = convert.cycle_from_proto(wire_cycle())
        again = convert.cycle_from_proto(types_pb2.Cycle.FromString(
            convert.cycle_to_proto(c).SerializeToString()))
        self.assertEqual(again.request, c.request)
        self.assertEqual((again.now, again.seed), (c.now, c.seed))
        for x, y in zip(again.endpoints, c.endpoints):
            self.assertEqual((x.id, dict(x.labels), x.state, x.prediction),
                             (y.id, dict(y.labels), y.state, y.prediction))
        self.assertEqual(again.excluded, c.excluded)
        self.assertEqual(len(again.excluded), 2)

    def test_disaggregation(self):
        c = convert.cycle_from_proto(wire_cycle())
        self.assertEqual(c.request.disaggregation, fp.Disaggregation(fp.HOP_PREFILL, "b:8000", 31.5, 9.25))
        # The decode endpoint of a prefill cycle would serve the request whole.
        self.assertEqual([c.request.hop_on(e.id) for e in c.endpoints], [fp.HOP_PREFILL, fp.HOP_WHOLE, fp.HOP_PREFILL])
        c.request.disaggregation = fp.Disaggregation(hop=fp.HOP_DECODE)
        self.assertEqual([c.uncached_tokens(i) for i in range(3)], [0, 0, 0])  # a decode hop's prompt arrives as KV
        # A request served whole goes on the wire without the message, as the host sends it.
        self.assertFalse(convert.request_to_proto(fp.Request()).HasField("disaggregation"))

    def test_columns_left_out_read_as_zero(self):
        # What a stage that declared only endpoints.states.waiting receives.
        pc = types_pb2.Cycle(seed=7)
        pc.endpoints.count = 2
        pc.endpoints.states.waiting.extend([4, 9])
        c = convert.cycle_from_proto(pc)
        self.assertEqual([e.state.waiting for e in c.endpoints], [4, 9])
        self.assertEqual([e.id for e in c.endpoints], ["", ""])
        self.assertEqual([e.state.kv_cache_usage for e in c.endpoints], [0.0, 0.0])
        self.assertEqual([e.prediction for e in c.endpoints], [fp.Prediction()] * 2)
        self.assertEqual([len(e.labels) for e in c.endpoints], [0, 0])
        self.assertIsNone(c.now)
        self.assertEqual(c.request, fp.Request())
        self.assertFalse(c.any_prediction())
        self.assertEqual(c.excluded, [])

    def test_excluded_alone_and_reasons_it_does_not_know(self):
        # What a stage that declared only endpoints.excluded receives; a reason newer than the kit
        # passes as it is (the Go SDK's rule: a stage must not assume it knows them all).
        pc = types_pb2.Cycle()
        pc.endpoints.count = 2
        pc.endpoints.excluded.add(id="x:1", labels={"node": "n1"}, reason="drained")
        c = convert.cycle_from_proto(pc)
        self.assertEqual(c.excluded, [fp.ExcludedEndpoint("x:1", {"node": "n1"}, "drained")])
        self.assertEqual([e.id for e in c.endpoints], ["", ""])
        self.assertEqual([len(e.labels) for e in c.endpoints], [0, 0])

    def test_count_falls_back_to_the_ids(self):
        # A host that predates Endpoints.count sends count 0 and the ids.
        pc = types_pb2.Cycle()
        pc.endpoints.ids.extend(["x", "y"])
        self.assertEqual([e.id for e in convert.cycle_from_proto(pc).endpoints], ["x", "y"])
        self.assertEqual(convert.cycle_from_proto(types_pb2.Cycle()).endpoints, [])

    def test_a_column_of_another_length_is_an_invalid_argument(self):
        pc = wire_cycle()
        del pc.endpoints.states.waiting[2]
        with self.assertRaises(InvalidArgument) as cm:
            convert.cycle_from_proto(pc)
        self.assertEqual(cm.exception.code, CODE_INVALID_ARGUMENT)
        self.assertEqual(str(cm.exception), 'invalid cycle: column "waiting" has 2 entries for 3 endpoints')

    def test_the_first_bad_column_in_go_order_is_named(self):
        pc = wire_cycle()
        pc.endpoints.labels.add()
        pc.endpoints.predictions.tpot_ms.append(1.0)
        with self.assertRaises(InvalidArgument) as cm:
            convert.cycle_from_proto(pc)
        self.assertIn('"predictions.tpot_ms" has 4 entries', str(cm.exception))
        del pc.endpoints.predictions.tpot_ms[3]
        with self.assertRaises(InvalidArgument) as cm:
            convert.cycle_from_proto(pc)
        self.assertIn('"labels" has 4 entries', str(cm.exception))


class PredictionColumnsTest(unittest.TestCase):
    """The optional prediction columns: the after-predictions and the spreads."""

    def test_positional_construction_keeps_working(self):
        # A producer written before the spreads builds its predictions with 3 or 5 arguments.
        self.assertEqual(fp.Prediction(True, 100, 10), fp.Prediction(True, 100, 10, 0.0, 0.0, 0.0, 0.0))
        p = fp.Prediction(True, 100, 10, 120, 11)
        self.assertEqual((p.ttft_after_ms, p.tpot_after_ms, p.ttft_spread, p.tpot_spread), (120, 11, 0.0, 0.0))
        p = fp.Prediction(True, 100, 10, 0, 0, 0.4, 0.2)
        self.assertEqual((p.ttft_spread, p.tpot_spread), (0.4, 0.2))
        self.assertEqual(fp.Prediction()[:3], (False, 0.0, 0.0))

    def test_spreads_cross_the_wire(self):
        c = convert.cycle_from_proto(wire_cycle())
        eps = c.endpoints
        eps[0] = eps[0]._replace(prediction=eps[0].prediction._replace(tpot_spread=0.0))
        eps[2] = eps[2]._replace(prediction=eps[2].prediction._replace(tpot_spread=0.0))
        pc = convert.cycle_to_proto(c)
        self.assertEqual(list(pc.endpoints.predictions.ttft_spread), [0.3, 0.0, 0.6])
        self.assertEqual(list(pc.endpoints.predictions.tpot_spread), [], "a column of zeros is not sent")
        again = convert.cycle_from_proto(types_pb2.Cycle.FromString(pc.SerializeToString()))
        self.assertEqual([e.prediction for e in again.endpoints], [e.prediction for e in c.endpoints])

    def test_spread_columns_only_when_said(self):
        p = convert.predictions_to_proto([fp.Prediction(True, 1, 2), None, fp.Prediction(True, 1, 2, 3, 4)])
        self.assertEqual((list(p.ttft_spread), list(p.tpot_spread)), ([], []))
        p = convert.predictions_to_proto([fp.Prediction(True, 1, 2), fp.Prediction(True, 1, 2, tpot_spread=0.25)])
        self.assertEqual((list(p.ttft_spread), list(p.tpot_spread)), ([], [0.0, 0.25]))
        self.assertEqual((list(p.ttft_after_ms), list(p.tpot_after_ms)), ([], []))

    def test_an_older_producer_sends_no_spreads(self):
        pc = wire_cycle()
        pc.endpoints.predictions.ClearField("ttft_spread")
        pc.endpoints.predictions.ClearField("tpot_spread")
        c = convert.cycle_from_proto(pc)
        self.assertEqual([(e.prediction.ttft_spread, e.prediction.tpot_spread) for e in c.endpoints],
                         [(0.0, 0.0)] * 3)

    def test_a_spread_column_of_another_length(self):
        for name in ("ttft_spread", "tpot_spread"):
            with self.subTest(name):
                pc = wire_cycle()
                col = getattr(pc.endpoints.predictions, name)
                del col[1:]
                with self.assertRaises(InvalidArgument) as cm:
                    convert.cycle_from_proto(pc)
                self.assertEqual(str(cm.exception),
                                 f'invalid cycle: column "predictions.{name}" has 1 entries for 3 endpoints')


class ReadPathsTest(unittest.TestCase):
    def test_the_go_sdks_paths_in_its_order(self):
        # transport.ReadPaths in plugins/sdk/transport/reads.go.
        cols = ["kv_cache_usage", "waiting", "running", "inflight_requests",
                "prefill_tokens_in_flight", "decode_tokens_in_flight", "prefix_match",
                "min_running_tpot_slo_ms", "metrics_age_ms", "last_output_age_ms",
                "dispatched_since_scrape", "first_token_rate", "running_tpot_ms"]
        self.assertEqual(fp.read_paths(), [
            "request", "request.prefix_block_hashes", "endpoints.count", "endpoints.ids",
            "endpoints.labels", "endpoints.states"] + ["endpoints.states." + c for c in cols] + [
            "endpoints.predictions", "endpoints.excluded"])


class SampleTest(unittest.TestCase):
    def test_sample_round_trip(self):
        s = fp.Sample(request=fp.Request(id="r", input_tokens=10), endpoint_id="e",
                      state=fp.EndpointState(waiting=3, kv_cache_usage=0.5, first_token_rate=20.0),
                      predicted=fp.Prediction(True, 100.0, 9.0), actual_ttft_ms=120.0,
                      actual_tpot_ms=10.5, output_tokens=64,
                      dispatched_at=dt.datetime(2026, 1, 2, 3, 4, 5, 6000, tzinfo=dt.timezone.utc))
        wire = convert.sample_to_proto(s).SerializeToString()
        from foresight.v1 import producer_pb2
        self.assertEqual(convert.sample_from_proto(producer_pb2.Sample.FromString(wire)), s)


if __name__ == "__main__":
    unittest.main()
