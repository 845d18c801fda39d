"""The example scorer, plugins/python-scorer/main.py (cost-aware-scorer)."""

import random
import unittest

from tests.support import fp, load_scorer_module
from foresight_plugin import convert
from foresight.v1 import types_pb2

main = load_scorer_module()


def setUpModule():
    # Cycles with a malformed cost label make the scorer warn once per value; keep stderr quiet.
    global _level
    _level, fp.logger.level = fp.logger.level, "error"


def tearDownModule():
    fp.logger.level = _level

SLO = fp.SLO(ttft_ms=500, tpot_ms=40)


def ep(ttft=None, tpot=10.0, labels=None, **state):
    """An endpoint predicted at (ttft, tpot), or without a prediction when ttft is None."""
    pred = fp.Prediction() if ttft is None else fp.Prediction(True, float(ttft), float(tpot))
    return fp.Endpoint("e", labels or fp.NO_LABELS, fp.EndpointState(**state), pred)


def cycle(*endpoints, slo=SLO, streaming=True):
    return fp.Cycle(request=fp.Request(slo=slo, streaming=streaming), endpoints=list(endpoints))


def scorer(params=None):
    s = main.CostAwareScorer()
    s.set_parameters(params)
    return s


PRICED = '{"acceleratorCosts": {"h100": 4.0, "a100": 2.2, "l4": 0.8}}'
H100, A100, L4 = {"accelerator": "h100"}, {"accelerator": "a100"}, {"accelerator": "l4"}


def order(scores):
    return sorted(range(len(scores)), key=lambda i: -scores[i])


class CostAwareScorerTest(unittest.TestCase):
    def test_cheaper_first_then_lower_ttft_among_those_meeting_the_slo(self):
        s = scorer(PRICED)
        scores = s.score(cycle(ep(100, labels=H100), ep(300, labels=L4), ep(200, labels=L4),
                               ep(150, labels=A100)))
        self.assertEqual(order(scores), [2, 1, 3, 0])
        self.assertEqual(scores[2], 1.0, "the cheapest tier's fastest endpoint scores 1")
        self.assertTrue(all(main.MEETS_FLOOR < v <= 1 for v in scores))

    def test_readme_worked_example(self):
        s = scorer('{"acceleratorCosts": {"h100": 4.0, "l4": 0.8}}')
        scores = s.score(cycle(ep(100, 10, H100), ep(300, 20, L4), ep(200, 20, L4), ep(550, 20, L4),
                               ep(700, 60, L4), ep(None, labels=L4)))
        for got, want in zip(scores, [0.755, 0.7795, 1.0, 0.49, 0.01, 0.0]):
            self.assertAlmostEqual(got, want)

    def test_every_endpoint_missing_the_slo_scores_below_every_one_meeting_it(self):
        s = scorer(PRICED)
        scores = s.score(cycle(
            ep(450, labels=H100),               # meets, most expensive, slowest
            ep(510, labels=L4),                 # misses TTFT by 2 %
            ep(100, tpot=60, labels=L4),        # misses TPOT by 50 %
            ep(900, tpot=80, labels=L4),        # misses both badly
            ep(None, labels=L4),                # no prediction
        ))
        self.assertGreater(scores[0], main.MEETS_FLOOR)
        self.assertEqual(order(scores), [0, 1, 2, 3, 4])
        self.assertEqual(scores[1], main.MISS_CEIL, "the smallest miss tops the missing group")
        self.assertAlmostEqual(scores[3], main.MISS_FLOOR)
        self.assertEqual(scores[4], 0.0, "no prediction while others have one")

    def test_no_slo_every_predicted_endpoint_qualifies(self):
        s = scorer(PRICED)
        scores = s.score(cycle(ep(5000, tpot=500, labels=L4), ep(50, labels=H100), slo=fp.SLO()))
        self.assertEqual(order(scores), [0, 1])
        self.assertTrue(all(v > main.MEETS_FLOOR for v in scores))

    def test_tpot_counts_for_streaming_requests_only_with_the_tightest_running_objective(self):
        s = scorer()
        # TPOT 35 meets the request's 40 but not the 30 a running request holds the endpoint to.
        squeezed = ep(100, tpot=35, min_running_tpot_slo_ms=30)
        free = ep(400, tpot=35)
        streaming = s.score(cycle(squeezed, free))
        self.assertLess(streaming[0], main.MEETS_FLOOR)
        self.assertGreater(streaming[1], main.MEETS_FLOOR)
        batch = s.score(cycle(squeezed, free, streaming=False))
        self.assertEqual(order(batch), [0, 1], "no TPOT objective: both meet, lower TTFT first")
        self.assertGreater(min(batch), main.MEETS_FLOOR)
        # sloBufferFactor scales the TPOT objective.
        loose = scorer('{"sloBufferFactor": 1.2}').score(cycle(squeezed, free))
        self.assertGreater(min(loose), main.MEETS_FLOOR)

    def test_cost_label_wins_over_the_accelerator_price(self):
        s = scorer(PRICED)
        self.assertEqual(s.cost_of({"accelerator": "h100", "cost": "1.5"}), 1.5)
        self.assertEqual(s.cost_of(H100), 4.0)
        self.assertEqual(s.cost_of({"accelerator": "h100", "cost": "cheap"}), 4.0, "unparsable: ignored")
        self.assertEqual(s.cost_of({"accelerator": "tpu"}), float("inf"))
        self.assertEqual(s.cost_of(fp.NO_LABELS), float("inf"))
        priced = scorer('{"defaultCost": 3, "costLabel": "", "acceleratorLabel": "gpu",'
                        ' "acceleratorCosts": {"h100": 4}}')
        self.assertEqual(priced.cost_of({"gpu": "h100", "cost": "1"}), 4.0, "costLabel \"\" is off")
        self.assertEqual(priced.cost_of(fp.NO_LABELS), 3.0)

    def test_unknown_costs_rank_after_known_ones(self):
        s = scorer(PRICED)
        scores = s.score(cycle(ep(100), ep(400, labels=H100)))
        self.assertEqual(order(scores), [1, 0])

    def test_equal_costs_and_ttfts_tie(self):
        s = scorer()
        self.assertEqual(s.score(cycle(ep(100), ep(100))), [1.0, 1.0])

    def test_without_predictions_the_load_composite(self):
        s = scorer('{"kvCacheWeight": 2, "queueWeight": 1, "prefixWeight": 1}')
        scores = s.score(cycle(ep(kv_cache_usage=0.5, waiting=4, prefix_match=1.0),
                               ep(kv_cache_usage=0.0, waiting=0, prefix_match=0.0)))
        # (2·(1 − kv) + 1·(maxQ − q)/maxQ + 1·prefix) / 4
        self.assertAlmostEqual(scores[0], (2 * 0.5 + 0 + 1) / 4)
        self.assertAlmostEqual(scores[1], (2 * 1 + 1 + 0) / 4)

    def test_the_composite_queue_counts_the_dispatches_since_the_scrape(self):
        # The first endpoint's gauge is empty, but 6 requests went there since it was scraped:
        # fresh queues 0 + 6 and 4 + 0, maxQ 6; queue weight only: (6 − q)/6.
        s = scorer('{"kvCacheWeight": 0, "queueWeight": 1, "prefixWeight": 0}')
        scores = s.score(cycle(ep(waiting=0, dispatched_since_scrape=6), ep(waiting=4)))
        self.assertAlmostEqual(scores[0], 0.0)
        self.assertAlmostEqual(scores[1], 2 / 6)
        self.assertEqual(fp.fresh_waiting(fp.EndpointState(waiting=4, dispatched_since_scrape=3)), 7)

    def test_scores_stay_in_range_on_random_cycles(self):
        s = scorer(PRICED)
        rng = random.Random(5)
        for _ in range(300):
            c = random_cycle(rng)
            scores = s.score(c)
            self.assertEqual(len(scores), len(c.endpoints))
            self.assertTrue(all(0 <= v <= 1 for v in scores), scores)

    def test_reads_cover_what_it_reads(self):
        # The host sends only the declared fields: the decision on the projected cycle must equal
        # the decision on the full one (as the Go scorers' TestReadsCoverWhatItReads).
        s = scorer(PRICED)
        self.assertTrue(set(s.reads) <= set(fp.read_paths()))
        rng = random.Random(9)
        # Mostly predicted cycles, then cycles without a prediction (the composite fallback's reads).
        for predicted in [0.8] * 300 + [0.0] * 100:
            full = convert.cycle_to_proto(random_cycle(rng, predicted))
            want = s.score(convert.cycle_from_proto(full))
            got = s.score(convert.cycle_from_proto(project(full, s.reads)))
            self.assertEqual(got, want)


class ScoreAfterTest(unittest.TestCase):
    def test_in_a_round_the_worked_example(self):
        # The README's worked example in a round (two tiers: band 0.245; span 0.9 × 0.245 =
        # 0.2205), each endpoint's TTFT after one more placed there as given; the frame (the l4
        # tier's TTFTs 200–300, the h100 tier's 100, the missing deficits 0.1–0.9) held.
        s = scorer('{"acceleratorCosts": {"h100": 4.0, "l4": 0.8}}')

        def at(ttft, tpot, labels, ttft_after):
            return ep(ttft, tpot, labels)._replace(
                prediction=fp.Prediction(True, float(ttft), float(tpot), float(ttft_after), 0.0))
        tests = [
            # a, alone in its tier at 100 ms: the tier spreads over its TTFT, so 150 ms is half a
            # span down: 0.755 − 0.2205 × 50/100.
            ("a: a tier of one", at(100, 10, H100, 150), 0.755 - 0.2205 * 50 / 100),
            # c at 260 in the l4 tier 200–300: 1 − 0.2205 × 60/100.
            ("c: inside its tier", at(200, 20, L4, 260), 1 - 0.2205 * 60 / 100),
            # b at 520 misses TTFT by 4 %: the missing group's frame (0.1–0.9, spread 0.8) gives
            # 0.49 − 0.48 × (0.04 − 0.1)/0.8, above MISS_CEIL: it misses least of all.
            ("b: across the SLO", at(300, 20, L4, 520), 0.49 - 0.48 * (0.04 - 0.1) / 0.8),
            # d at 600: deficit 0.2; 0.49 − 0.48 × (0.2 − 0.1)/0.8.
            ("d: a larger miss", at(550, 20, L4, 600), 0.49 - 0.48 * (0.2 - 0.1) / 0.8),
            # e at 800: deficit 0.6 + 0.5 = 1.1, past the group's worst: 0.49 − 0.48 × 1.0/0.8,
            # below 0.
            ("e: past the worst, below 0", at(700, 60, L4, 800), 0.49 - 0.48 * (1.1 - 0.1) / 0.8),
            # Without an after-prediction a placement leaves the prediction: the score stays.
            ("c: no after-prediction", ep(200, 20, L4), 1.0),
        ]
        rest = [ep(100, 10, H100), ep(300, 20, L4), ep(200, 20, L4), ep(550, 20, L4),
                ep(700, 60, L4), ep(None, labels=L4)]
        index = {"a": 0, "b": 1, "c": 2, "d": 3, "e": 4}
        for name, e, want in tests:
            with self.subTest(name):
                eps = list(rest)
                eps[index[name[0]]] = e
                c = cycle(*eps)
                c.round = fp.Round(0, 2)
                scores = s.score(c)
                self.assertAlmostEqual(s.score_after(c, scores)[index[name[0]]], want, places=12)

    def test_a_tier_without_spread(self):
        # Four l4 endpoints predicting 200 ms, 230 ms after one more: one tier (band 0.49, span
        # 0.441) spread over its TTFT, 200 ms: 1 − 0.441 × 30/200 each; the others stay at 1.
        s = scorer(PRICED)
        eps = [ep(200, 20, L4)._replace(prediction=fp.Prediction(True, 200.0, 20.0, 230.0, 0.0))
               for _ in range(4)]
        c = cycle(*eps)
        c.round = fp.Round(1, 8)
        self.assertEqual(s.score(c), [1.0] * 4)
        for got in s.score_after(c, s.score(c)):
            self.assertAlmostEqual(got, 1 - 0.441 * 30 / 200, places=12)

    def test_score_after_holds_the_frame(self):
        # Endpoint i's after-score is i as fp.place_on(copy, i, 1) leaves it, scored against the
        # cycle's bounds as they are (reference_after works them out explicitly), on random
        # cycles: some endpoints crossing the SLO when placed, some the only member of their
        # tier or group, then cycles without a prediction (the composite).
        s = scorer(PRICED)
        rng = random.Random(11)
        for predicted in [0.8] * 400 + [0.3] * 100 + [0.0] * 100:
            c = random_cycle(rng, predicted)
            c.round = fp.Round(rng.randrange(4), 4)
            c.request.input_tokens = rng.randint(0, 4000)
            for i, e in enumerate(c.endpoints):
                p = e.prediction
                # After-predictions: none, or a step up (sometimes across the SLO), rarely down.
                ttft_after = rng.choice([0.0, p.ttft_ms + rng.uniform(-20, 400)])
                tpot_after = rng.choice([0.0, p.tpot_ms + rng.uniform(-2, 30)])
                c.endpoints[i] = e._replace(prediction=p._replace(ttft_after_ms=ttft_after,
                                                                  tpot_after_ms=tpot_after))
            got = s.score_after(c, s.score(c))
            self.assertEqual(len(got), len(c.endpoints))
            for i, v in enumerate(got):
                self.assertAlmostEqual(v, reference_after(s, c, i), places=9)

    def test_the_kit_answers_with_it(self):
        # One score call per cycle in a round, not one per endpoint more.
        class Counting(main.CostAwareScorer):
            calls = 0

            def score(self, c):
                self.calls += 1
                return super().score(c)
        s = Counting()
        s.set_parameters(PRICED)
        c = cycle(ep(100, labels=H100), ep(300, labels=L4))
        c.round = fp.Round(0, 2)
        self.assertEqual(len(fp.after_scores(s, c, s.score(c))), 2)
        self.assertEqual(s.calls, 1)


def reference_after(s, c, i):
    """Endpoint i's after-score worked out with the cycle's bounds taken explicitly: the tiers'
    TTFT bounds, the missing group's deficit bounds, or the composite's longest queue, from c as
    it is; endpoint i's stand and queue from a copy with i placed on."""
    stands = s._stands(c.request, c.endpoints)
    cp = fp.with_own_endpoints(c)
    fp.place_on(cp, i, 1)
    placed = cp.endpoints[i]
    if all(kind == main.UNPREDICTED for kind, _ in stands):
        # (wkv·(1 − kv) + wq·(maxQ − q')/scale + wp·prefix) / Σw, scale maxQ (1 when every queue
        # is empty, whose term 1 the placement takes to 0).
        w = s._weights
        max_q = max([fp.fresh_waiting(e.state) for e in c.endpoints] + [0])
        q_now = fp.fresh_waiting(c.endpoints[i].state)
        q_term = 1.0 if max_q == 0 else (max_q - q_now) / max_q
        q_term -= (fp.fresh_waiting(placed.state) - q_now) / (max_q or 1)
        st = placed.state
        return (w.kv_cache * min(max(1 - st.kv_cache_usage, 0), 1) + w.queue * q_term
                + w.prefix * min(max(st.prefix_match, 0), 1)) / (w.kv_cache + w.queue + w.prefix)
    tiers, deficits = {}, []
    for e, (kind, v) in zip(c.endpoints, stands):
        if kind == main.MEETS:
            tiers.setdefault(s.cost_of(e.labels), []).append(v)
        elif kind == main.MISSES:
            deficits.append(v)
    kind, v = s._stands(c.request, [placed])[0]
    if kind == main.MEETS:
        cost = s.cost_of(placed.labels)
        band = 0.49 / max(len(tiers), 1)
        top = 1 - sum(k < cost for k in tiers) * band
        lo, hi = min(tiers.get(cost, [v])), max(tiers.get(cost, [v]))
        spread = hi - lo if hi - lo > main.EPS else max(lo, 1.0)
        return top - 0.9 * band * (v - lo) / spread
    if kind == main.MISSES:
        lo, hi = min(deficits or [v]), max(deficits or [v])
        spread = hi - lo if hi - lo > main.EPS else 1.0
        return 0.49 - 0.48 * (v - lo) / spread
    return 0.0


def random_cycle(rng, predicted=0.8):
    """A random cycle whose endpoints each have a valid prediction with probability predicted."""
    n = rng.randint(0, 12)
    eps = []
    for i in range(n):
        labels = rng.choice([fp.NO_LABELS, H100, A100, L4, {"cost": str(rng.choice([0.5, 3, -1]))}])
        pred = rng.random()
        eps.append(fp.Endpoint(
            f"e{i}", labels,
            fp.EndpointState(kv_cache_usage=rng.random(), waiting=rng.randint(0, 9),
                             running=rng.randint(0, 9), inflight_requests=rng.randint(0, 3),
                             prefix_match=rng.random(),
                             min_running_tpot_slo_ms=rng.choice([0.0, 25.0, 60.0]),
                             dispatched_since_scrape=rng.choice([0, 0, 3, 7]),
                             # From the index rather than rng, so that the draws above keep their
                             # values (as sdktest.RandomCycle): 0 (unknown) on the first endpoint.
                             first_token_rate=float((i * 7) % 20) * 2.5,
                             running_tpot_ms=float((i * 3) % 5) * 11),
            fp.Prediction(pred < predicted, rng.uniform(-10, 1200), rng.uniform(0, 80))))
    slo = rng.choice([fp.SLO(), fp.SLO(500, 0), fp.SLO(0, 40), fp.SLO(800, 40)])
    return fp.Cycle(request=fp.Request(id="r", slo=slo, streaming=rng.random() < 0.5,
                                       priority=rng.randint(-1, 1)), endpoints=eps,
                    seed=rng.randrange(2**32))


def project(pc, reads):
    """The cycle as the host sends it to a stage declaring reads (host's projection, sdk/reads.go)."""
    out = types_pb2.Cycle(seed=pc.seed, now=pc.now)
    src = pc.endpoints
    out.endpoints.count = src.count or len(src.ids)
    if "request" in reads:
        out.request.CopyFrom(pc.request)
        out.request.ClearField("prefix_block_hashes")
    if "endpoints.ids" in reads:
        out.endpoints.ids.extend(src.ids)
    if "endpoints.labels" in reads:
        out.endpoints.labels.extend(src.labels)
    if "endpoints.predictions" in reads:
        out.endpoints.predictions.CopyFrom(src.predictions)
    if "endpoints.excluded" in reads:
        out.endpoints.excluded.extend(src.excluded)
    for f in types_pb2.EndpointStates.DESCRIPTOR.fields:
        if "endpoints.states" in reads or "endpoints.states." + f.name in reads:
            getattr(out.endpoints.states, f.name).extend(getattr(src.states, f.name))
    return out


class ConfigureTest(unittest.TestCase):
    def test_defaults(self):
        s = scorer()
        self.assertEqual(s.params, main.CostAwareScorer.parameters)

    def test_rejections_leave_the_parameters_in_force(self):
        s = scorer(PRICED)
        cases = [
            ('{"acceleratorCost": {}}', 'decoding parameters: json: unknown field "acceleratorCost"'),
            ('{"acceleratorCosts": {"h100": -1}}',
             'parameter "acceleratorCosts": the cost of "h100" must be a number >= 0, got -1'),
            ('{"acceleratorCosts": {"h100": "4"}}',
             "parameter \"acceleratorCosts\": the cost of \"h100\" must be a number >= 0, got '4'"),
            ('{"defaultCost": "x"}', "parameter \"defaultCost\" must be a number or null, got 'x'"),
            ('{"defaultCost": -2}', 'parameter "defaultCost" must be in [0, 1e+12], got -2'),
            ('{"sloBufferFactor": 0}', 'parameter "sloBufferFactor" must be in (0, 10], got 0'),
            ('{"kvCacheWeight": 0, "queueWeight": 0, "prefixWeight": 0}',
             "at least one of kvCacheWeight, queueWeight, prefixWeight must be positive"),
            ('{"queueWeight": 101}', 'parameter "queueWeight" must be in [0, 100], got 101'),
        ]
        for raw, message in cases:
            with self.subTest(raw=raw):
                with self.assertRaises(ValueError) as cm:
                    s.set_parameters(raw)
                self.assertEqual(str(cm.exception), message)
                self.assertEqual(s.params["acceleratorCosts"], {"h100": 4.0, "a100": 2.2, "l4": 0.8})
                self.assertEqual(s.cost_of(L4), 0.8)


if __name__ == "__main__":
    unittest.main()
