"""Rounds: place_on's arithmetic against the Go SDK's (plugins/sdk/round.go), the after-scores a
scorer answers, and a picker placing a round's cycles in order (plugins/sdk/roundrun.go)."""

import io
import unittest

from tests.support import fp
from foresight_plugin import convert
from foresight_plugin.handlers import Handlers
from foresight_plugin.log import Logger
from foresight.v1 import picker_pb2, scorer_pb2


def one(input_tokens, match, state=None, pred=None):
    """A cycle of one endpoint "a" with the prefix match, state and prediction given."""
    st = (state or fp.EndpointState())._replace(prefix_match=match)
    return fp.Cycle(request=fp.Request(input_tokens=input_tokens),
                    endpoints=[fp.Endpoint("a", state=st, prediction=pred or fp.Prediction())])


class PlaceOnTest(unittest.TestCase):
    def test_arithmetic_as_the_go_sdk(self):
        # Each expected line is what sdk.PlaceOn leaves (checked against the Go SDK):
        # (uncached, inflight, dispatched, prefill, ttft, tpot, ttft_after, tpot_after).
        tests = [
            # 1000 × (1 − 0.25) = 750 uncached; n = 2: inflight 3 + 2, dispatched 1 + 2, prefill
            # 100 + 2 × 750; TTFT moves 2 × (250 − 200) = 100, TPOT 2 × (22 − 20) = 4.
            ("two placements", one(1000, 0.25, fp.EndpointState(inflight_requests=3, dispatched_since_scrape=1,
                                                                prefill_tokens_in_flight=100),
                                   fp.Prediction(True, 200, 20, 250, 22, 0.3, 0.15)), 2,
             (750, 5, 3, 1600, 300, 24, 350, 26)),
            # 5 × 0.5 = 2.5 rounds half away from zero to 3 (Python's round would give 2).
            ("a half rounds up", one(5, 0.5), 1, (3, 1, 1, 3, 0, 0, 0, 0)),
            # 1 × 0.5 = 0.5 rounds to 1; three placements bring 3 × 1 in prefill.
            ("a half of one token", one(1, 0.5), 3, (1, 3, 3, 3, 0, 0, 0, 0)),
            # 7 × (1 − 0.9) = 7 × 0.09999999999999998 = 0.6999999999999998, rounded 1.
            ("below a half of a float", one(7, 0.9), 1, (1, 1, 1, 1, 0, 0, 0, 0)),
            # A match above 1 counts as 1 (nothing uncached), below 0 as 0 (everything).
            ("match above 1", one(100, 1.5), 1, (0, 1, 1, 0, 0, 0, 0, 0)),
            ("match below 0", one(100, -0.5), 1, (100, 1, 1, 100, 0, 0, 0, 0)),
            # TTFT after below now moves it down: 100 + 3 × (90 − 100) = 70, after 90 − 30 = 60;
            # TPOT 0 (unknown) stays 0 and its after stays as it is.
            ("after below now, tpot unknown", one(10, 0, pred=fp.Prediction(True, 100, 0, 90, 12)), 3,
             (10, 3, 3, 30, 70, 0, 60, 12)),
            # TTFT after 0 (not said): TTFT stays. n = 0 changes nothing at all.
            ("no placement", one(10, 0, pred=fp.Prediction(True, 100, 10, 0, 12)), 0,
             (10, 0, 0, 0, 100, 10, 0, 12)),
            ("negative n", one(10, 0, pred=fp.Prediction(True, 100, 10, 0, 12)), -1,
             (10, 0, 0, 0, 100, 10, 0, 12)),
            # In floats as Go computes them: d = 0.3 − 0.1 = 0.19999999999999998; 0.1 + 3d = 0.7,
            # 0.3 + 3d = 0.8999999999999999; TPOT 10 + 3 × 2 = 16, 12 + 6 = 18.
            ("float steps", one(10, 0, pred=fp.Prediction(True, 0.1, 10, 0.3, 12)), 3,
             (10, 3, 3, 30, 0.7, 16, 0.8999999999999999, 18)),
        ]
        for name, c, n, want in tests:
            with self.subTest(name):
                before = c.endpoints[0]
                uncached = c.uncached_tokens(0)
                fp.place_on(c, 0, n)
                s, p = c.endpoints[0].state, c.endpoints[0].prediction
                got = (uncached, s.inflight_requests, s.dispatched_since_scrape,
                       s.prefill_tokens_in_flight, p.ttft_ms, p.tpot_ms, p.ttft_after_ms, p.tpot_after_ms)
                self.assertEqual(got, want)
                # The gauges, the prefix match, the id, the validity and the spreads never move.
                self.assertEqual((s.waiting, s.running, s.kv_cache_usage, s.prefix_match, p.valid,
                                  p.ttft_spread, p.tpot_spread, c.endpoints[0].id),
                                 (before.state.waiting, before.state.running, before.state.kv_cache_usage,
                                  before.state.prefix_match, before.prediction.valid,
                                  before.prediction.ttft_spread, before.prediction.tpot_spread, before.id))

    def test_copy_keeps_the_original(self):
        c = one(100, 0)
        cp = fp.with_own_endpoints(c)
        fp.place_on(cp, 0, 2)
        self.assertEqual(c.endpoints[0].state.inflight_requests, 0)
        self.assertEqual(cp.endpoints[0].state.inflight_requests, 2)


class LoadScorer(fp.Scorer):
    """1 / (1 + requests in flight), knowing nothing of rounds."""
    type = "load-scorer"
    calls = 0

    def score(self, c):
        self.calls += 1
        return [1 / (1 + e.state.inflight_requests) for e in c.endpoints]


class OwnAfterScorer(LoadScorer):
    """A LoadScorer that says its after-scores itself (fixed ones, to tell them apart)."""
    after = [0.1, 0.2]

    def score_after(self, c, scores):
        return self.after


def two(pos, size, inflight_a=1, inflight_b=3):
    """A cycle on endpoints a and b at position pos of a round of size (0, 0: decided alone)."""
    return fp.Cycle(request=fp.Request(id="r"), round=fp.Round(pos, size), endpoints=[
        fp.Endpoint("a", state=fp.EndpointState(inflight_requests=inflight_a)),
        fp.Endpoint("b", state=fp.EndpointState(inflight_requests=inflight_b))])


def handlers(impl):
    impl.set_parameters(None)
    return Handlers(impl, "1.0.0", Logger(io.StringIO()))


class AfterScoresTest(unittest.TestCase):
    def test_score_answers(self):
        class Short(OwnAfterScorer):
            after = [0.1]

        class Failing(OwnAfterScorer):
            def score_after(self, c, scores):
                raise fp.Unavailable("no after-scores today")

        tests = [
            # 1 and 3 in flight: scores 1/2 and 1/4. Without score_after the kit says no
            # after-scores, in a round too: re-scoring would renormalise a scorer's scale.
            ("no score_after, in a round", LoadScorer(), two(1, 2), [], None),
            # The zero Round is a cycle decided alone: score_after is not asked.
            ("alone: no after-scores", OwnAfterScorer(), two(0, 0), [], None),
            # A round of one (position 0, size 1) is a round: the host needs its after-scores to
            # account for an earlier round's placements.
            ("a round of one: the scorer's own", OwnAfterScorer(), two(0, 1), [0.1, 0.2], None),
            ("the scorer's own", OwnAfterScorer(), two(0, 2), [0.1, 0.2], None),
            ("too few of its own", Short(), two(0, 2), None, "scorer returned 1 after-scores for 2 endpoints"),
            ("its own failing", Failing(), two(0, 2), None, "no after-scores today"),
        ]
        for name, impl, c, want, err in tests:
            with self.subTest(name):
                resp = handlers(impl).score(scorer_pb2.ScoreRequest(cycles=[convert.cycle_to_proto(c)]))
                r = resp.results[0]
                if err is not None:
                    self.assertEqual(r.status.message, err)
                    self.assertEqual(list(r.scores), [])
                    continue
                self.assertFalse(r.HasField("status"), r.status.message)
                self.assertEqual(list(r.scores), [1 / 2, 1 / 4])
                for got, w in zip(r.scores_after, want, strict=True):
                    self.assertAlmostEqual(got, w, places=12)

    def test_without_score_after_the_kit_scores_once(self):
        # A scorer without score_after is scored once per cycle in a round, as alone, and answers
        # no scores_after (the kit no longer re-scores once per endpoint).
        s = LoadScorer()
        h = handlers(s)
        resp = h.score(scorer_pb2.ScoreRequest(cycles=[convert.cycle_to_proto(two(k, 3)) for k in range(3)]))
        self.assertEqual([len(r.scores_after) for r in resp.results], [0, 0, 0])
        self.assertEqual(s.calls, 3, "one score call per cycle")
        self.assertIsNone(fp.after_scores(s, two(0, 2), [1 / 2, 1 / 4]))


class CompositeAfterTest(unittest.TestCase):
    def test_the_longest_queue_held(self):
        def cyc(*queues):
            return fp.Cycle(request=fp.Request(input_tokens=10), round=fp.Round(0, 2), endpoints=[
                fp.Endpoint(str(k), state=fp.EndpointState(waiting=q, kv_cache_usage=0.5, prefix_match=0.25))
                for k, q in enumerate(queues)])
        queue_only, even = fp.CompositeWeights(0, 1, 0), fp.CompositeWeights(1, 1, 1)
        tests = [
            # Queues 2 and 0, maxQ 2 held: (2 − 3)/2 = −0.5 and (2 − 1)/2 = 0.5.
            ("queue term", cyc(2, 0), queue_only, [-0.5, 0.5]),
            # Every queue empty: terms 1, one request the scale: 1 − 1 = 0.
            ("all empty", cyc(0, 0), queue_only, [0.0, 0.0]),
            # KV and prefix stay: (0.5 + (4 − 5)/4 + 0.25)/3 and (0.5 + (4 − 2)/4 + 0.25)/3.
            ("with KV and prefix", cyc(4, 1), even, [(0.5 - 0.25 + 0.25) / 3, (0.5 + 0.5 + 0.25) / 3]),
        ]
        for name, c, w, want in tests:
            with self.subTest(name):
                got = fp.composite_scores_after(c, w)
                for g, v in zip(got, want, strict=True):
                    self.assertAlmostEqual(g, v, places=12)


class MaxScorePicker(fp.Picker):
    """Orders the endpoints by score, highest first, the lower index first among equals."""
    type = "max-score"

    def pick(self, c, scores):
        return sorted(range(len(c.endpoints)), key=lambda i: -scores[i])


class LeastLoadPicker(fp.Picker):
    """Orders the endpoints by requests in flight, fewest first, ignoring the scores."""
    type = "least-load"

    def pick(self, c, scores):
        return sorted(range(len(c.endpoints)), key=lambda i: c.endpoints[i].state.inflight_requests)


class QueueScorer(fp.Scorer):
    """The Go queue-scorer's (maxQ − q) / (maxQ − minQ) on the fresh queue (waiting + dispatched
    since the scrape), 1 when all queues are equal; its after-scores hold the frame: endpoint i's
    queue one longer, normalised by the cycle's min and max, one request being the scale when
    they are equal."""
    type = "queue"

    @staticmethod
    def _frame(c):
        qs = [fp.fresh_waiting(e.state) for e in c.endpoints]
        lo, hi = min(qs, default=0), max(qs, default=0)
        return qs, hi, (hi - lo if hi > lo else 1)

    def score(self, c):
        qs, hi, scale = self._frame(c)
        return [(hi - q) / scale if len(set(qs)) > 1 else 1.0 for q in qs]

    def score_after(self, c, scores):
        qs, _, scale = self._frame(c)
        return [s - 1 / scale for s in scores]


def four(pos, size):
    return fp.Cycle(request=fp.Request(id=f"r{pos}", input_tokens=100), round=fp.Round(pos, size),
                    endpoints=[fp.Endpoint(k) for k in "abcd"])


def first_choices(resp, cycles):
    out = ""
    for r, c in zip(resp.results, cycles, strict=True):
        if r.HasField("status"):
            out += "!"
        else:
            out += c.endpoints[r.order[0]].id
    return out


def pick_request(cycles, scores, after=None):
    req = picker_pb2.PickRequest(cycles=[convert.cycle_to_proto(c) for c in cycles],
                                 scores=[picker_pb2.Scores(values=s) for s in scores])
    for a in after or []:
        req.scores_after.add(values=a)
    return req


class PickRoundTest(unittest.TestCase):
    def test_a_round_spreads_as_one_at_a_time_picks(self):
        # 8 requests, 4 equal endpoints: the queue scorer's frame-held after-scores summed as the
        # host sums them (weight 1), then one pick call for the whole round.
        scorer, picker = QueueScorer(), MaxScorePicker()
        cycles = [four(k, 8) for k in range(8)]
        scores = [scorer.score(c) for c in cycles]
        after = [fp.after_scores(scorer, c, s) for c, s in zip(cycles, scores)]
        resp = handlers(picker).pick(pick_request(cycles, scores, after))
        got = first_choices(resp, cycles)
        # One at a time: each request scored on the state the earlier ones left, then placed.
        state = four(0, 0)
        want = ""
        for _ in cycles:
            e = picker.pick(state, scorer.score(state))[0]
            want += state.endpoints[e].id
            fp.place_on(state, e, 1)
        # Queues all 0: scores 1, after-scores 0 (scale one request). a; a at 1 − 1 × (1 − 0)
        # = 0, the others 1: b; c; d; all at 0: a; a at 1 − 2 × 1 = −1 (unclamped) below the
        # others' 0: b; c; d. One at a time: queues 0 → a, then [1, 0, 0, 0] → b, … the same.
        self.assertEqual(got, "abcdabcd")
        self.assertEqual(got, want)
        self.assertEqual(sorted(got.count(k) for k in "abcd"), [2, 2, 2, 2])

    def test_rounds_in_a_batch(self):
        def batch(*sizes):
            out = []
            for size in sizes:
                out += [two(0, 0, 0, 2)] if size == 1 else [two(p, size, 0, 2) for p in range(size)]
            return out
        tests = [
            # Scores 1 and 1, 0.5 after one more: a (first among equals); then a is 1 − 1 × 0.5
            # = 0.5 against b's 1: b; then 0.5 and 0.5: a; then a 1 − 2 × 0.5 = 0 against 0.5: b.
            ("max-score on after-scores", MaxScorePicker(), batch(4), [[1, 1]] * 4, [[0.5, 0.5]] * 4, "abab"),
            # Scores 1 and 0, after-scores −0.5 and −1: a; then a is 1 − 1 × (1 + 0.5) = −0.5,
            # not clamped at 0, below b's 0: b (clamped, a would tie b at 0 and win as the first).
            ("a score below 0 ranks below 0", MaxScorePicker(), batch(2), [[1, 0]] * 2, [[-0.5, -1]] * 2, "ab"),
            # Without after-scores the scores do not move: a every time.
            ("max-score without after-scores", MaxScorePicker(), batch(4), [[1, 1]] * 4, None, "aaaa"),
            # 0 and 2 in flight: a (0); a (1 < 2); a (2 = 2, the lower index); b (3 > 2).
            ("least-load on the placed state", LeastLoadPicker(), batch(4), [[0, 0]] * 4, None, "aaab"),
            # Alone, each sees 0 and 2: a every time.
            ("alone", LeastLoadPicker(), batch(1, 1, 1, 1), [[0, 0]] * 4, None, "aaaa"),
            # Two rounds of two: the second starts again from the scraped state.
            ("two rounds", LeastLoadPicker(), batch(2, 2), [[0, 0]] * 4, None, "aaaa"),
            # Rounds of one, each at position 0: nothing of its round placed before it, so each
            # is picked on itself with its scores unmoved (1 and 1, the after-scores unused): a.
            ("rounds of one", MaxScorePicker(), [two(0, 1, 0, 2) for _ in range(3)], [[1, 1]] * 3,
             [[0.5, 0.5]] * 3, "aaa"),
            # A round of two (a; a, 1 < 2), then a round of one starting again from the scraped
            # state: 0 and 2 in flight, a.
            ("a round of one after a round", LeastLoadPicker(),
             [two(0, 2, 0, 2), two(1, 2, 0, 2), two(0, 1, 0, 2)], [[0, 0]] * 3, None, "aaa"),
            # A cycle without its score set fails alone and places nothing.
            ("a missing score set", LeastLoadPicker(), batch(4), [[0, 0]] * 3, None, "aaa!"),
        ]
        for name, picker, cycles, scores, after, want in tests:
            with self.subTest(name):
                resp = handlers(picker).pick(pick_request(cycles, scores, after))
                self.assertEqual(first_choices(resp, cycles), want)

    def test_a_failed_pick_places_nothing(self):
        class FailsSecond(LeastLoadPicker):
            def pick(self, c, scores):
                if c.request.id == "fail":
                    raise fp.StatusError("no")
                return super().pick(c, scores)
        cycles = [two(p, 3, 0, 1) for p in range(3)]
        cycles[1].request.id = "fail"
        # a (0 < 1); the second fails; the third sees a with 1, b with 1: a, as if only one placed.
        resp = handlers(FailsSecond()).pick(pick_request(cycles, [[0, 0]] * 3))
        self.assertEqual(first_choices(resp, cycles), "a!a")

    def test_get_info_rounds(self):
        # Every picker the kit serves places rounds; no other stage says so.
        for impl, want in [(MaxScorePicker(), True), (LoadScorer(), False)]:
            with self.subTest(impl.type):
                self.assertEqual(handlers(impl).get_info().rounds, want)


class RoundWireTest(unittest.TestCase):
    def test_round_and_after_columns_cross_the_wire(self):
        c = two(1, 3)
        c.endpoints[1] = c.endpoints[1]._replace(prediction=fp.Prediction(True, 90, 9, 95, 9.5))
        pc = convert.cycle_to_proto(c)
        self.assertEqual((pc.round.position, pc.round.size), (1, 3))
        self.assertEqual(list(pc.endpoints.predictions.ttft_after_ms), [0, 95])
        self.assertEqual(convert.cycle_from_proto(pc), c)
        alone = convert.cycle_to_proto(two(0, 0))
        self.assertFalse(alone.HasField("round"), "a cycle decided alone carries no round")
        self.assertEqual(convert.cycle_from_proto(alone).round, fp.NO_ROUND)

    def test_after_columns_only_when_said(self):
        p = convert.predictions_to_proto([fp.Prediction(True, 1, 2), None])
        self.assertEqual((list(p.ttft_after_ms), list(p.tpot_after_ms)), ([], []))
        p = convert.predictions_to_proto([fp.Prediction(True, 1, 2, 3, 0), fp.Prediction(True, 1, 2, 0, 0)])
        self.assertEqual((list(p.ttft_after_ms), list(p.tpot_after_ms)), ([3, 0], []))

    def test_after_column_of_another_length(self):
        pc = convert.cycle_to_proto(two(1, 3))
        pc.endpoints.predictions.ttft_after_ms.append(5)
        with self.assertRaisesRegex(fp.InvalidArgument, 'column "predictions.ttft_after_ms" has 1 entries for 2'):
            convert.cycle_from_proto(pc)


if __name__ == "__main__":
    unittest.main()
