"""headroom_of against the Go SDK's cases (plugins/sdk/heuristics/headroom_test.go)."""

import math
import unittest

from tests.support import fp


def headroom(streaming, slo, pred, running_slo=0.0):
    r = fp.Request(streaming=streaming, slo=slo)
    e = fp.Endpoint("a", state=fp.EndpointState(min_running_tpot_slo_ms=running_slo), prediction=pred)
    h = fp.headroom_of(r, e)
    return None if h is None else (h.ttft_ms, h.tpot_ms)


class HeadroomOfTest(unittest.TestCase):
    slo = fp.SLO(ttft_ms=500, tpot_ms=40)

    def test_cases(self):
        inf = math.inf
        cases = [
            ("no prediction", True, fp.Prediction(), 0, None),
            ("both objectives", True, fp.Prediction(True, 200, 30), 0, (300, 10)),
            ("a tighter running objective", True, fp.Prediction(True, 600, 30), 25, (-100, -5)),
            ("not streaming: no TPOT objective", False, fp.Prediction(True, 200, 30), 0, (300, inf)),
            # TPOT 0 is "unknown": it must not pass for 40 ms of headroom.
            ("TPOT unknown", True, fp.Prediction(True, 200), 25, (300, inf)),
        ]
        for name, streaming, pred, running, want in cases:
            with self.subTest(name):
                self.assertEqual(headroom(streaming, self.slo, pred, running), want)


if __name__ == "__main__":
    unittest.main()
