"""Parameter decoding and range checks (the Go SDK's DecodeParams and Check… rules)."""

import unittest

from tests.support import fp  # noqa: F401

DEFAULTS = {"weight": 0.8, "count": 3, "strategy": "least", "enabled": True, "costs": {}, "extra": None}


class DecodeParamsTest(unittest.TestCase):
    def test_empty_and_null_give_the_defaults(self):
        for raw in (None, b"", b"  \n", b"null", "null"):
            with self.subTest(raw=raw):
                self.assertEqual(fp.decode_params(raw, DEFAULTS), DEFAULTS)

    def test_values_merge_over_a_copy_of_the_defaults(self):
        out = fp.decode_params(b'{"weight": 2, "costs": {"h100": 4}, "extra": [1]}', DEFAULTS)
        self.assertEqual(out, {**DEFAULTS, "weight": 2.0, "costs": {"h100": 4}, "extra": [1]})
        self.assertIsInstance(out["weight"], float)
        self.assertEqual(DEFAULTS["costs"], {}, "the defaults are not modified")

    def test_a_null_value_keeps_the_default(self):
        self.assertEqual(fp.decode_params(b'{"weight": null}', DEFAULTS)["weight"], 0.8)

    def test_names_match_case_insensitively_like_encoding_json(self):
        self.assertEqual(fp.decode_params(b'{"WEIGHT": 0.5}', DEFAULTS)["weight"], 0.5)

    def test_rejections(self):
        cases = [
            (b'{"wait": 1}', 'decoding parameters: json: unknown field "wait"'),
            (b'{"weight": "1"}', 'decoding parameters: parameter "weight": got JSON string, want float64'),
            (b'{"weight": true}', 'decoding parameters: parameter "weight": got JSON bool, want float64'),
            (b'{"count": 1.5}', 'decoding parameters: parameter "count": got JSON number 1.5, want int'),
            (b'{"strategy": 1}', 'decoding parameters: parameter "strategy": got JSON number 1, want string'),
            (b'{"enabled": 1}', 'decoding parameters: parameter "enabled": got JSON number 1, want bool'),
            (b'{"costs": []}', 'decoding parameters: parameter "costs": got JSON array, want object'),
            (b'[1]', "decoding parameters: want a JSON object, got array"),
            (b'{"weight": 1}x', "decoding parameters: trailing data after the JSON object"),
        ]
        for raw, message in cases:
            with self.subTest(raw=raw):
                with self.assertRaises(ValueError) as cm:
                    fp.decode_params(raw, DEFAULTS)
                self.assertEqual(str(cm.exception), message)
        for raw in (b'{"weight": NaN}', b'{"weight": 1', b"{'weight': 1}"):
            with self.subTest(raw=raw), self.assertRaises(ValueError) as cm:
                fp.decode_params(raw, DEFAULTS)
            self.assertTrue(str(cm.exception).startswith("decoding parameters: "))

    def test_integral_numbers_are_ints(self):
        self.assertEqual(fp.decode_params(b'{"count": 4.0}', DEFAULTS)["count"], 4)


class ChecksTest(unittest.TestCase):
    def test_messages_match_the_go_sdk(self):
        with self.assertRaises(ValueError) as cm:
            fp.check_range("ttftWeight", 5000.0, 0, 1e3)
        self.assertEqual(str(cm.exception), 'parameter "ttftWeight" must be in [0, 1000], got 5000')
        with self.assertRaises(ValueError) as cm:
            fp.check_range_open_low("sloBufferFactor", 0.0, 0, 10)
        self.assertEqual(str(cm.exception), 'parameter "sloBufferFactor" must be in (0, 10], got 0')
        with self.assertRaises(ValueError) as cm:
            fp.check_range("x", float("nan"), 0, 1)
        self.assertEqual(str(cm.exception), 'parameter "x" must be in [0, 1], got NaN')
        with self.assertRaises(ValueError) as cm:
            fp.check_one_of("strategy", "fast", "least", "most")
        self.assertEqual(str(cm.exception), 'parameter "strategy" must be one of ["least" "most"], got "fast"')

    def test_bounds_are_inclusive(self):
        fp.check_range("x", 0, 0, 1)
        fp.check_range("x", 1, 0, 1)
        fp.check_range_open_low("x", 10, 0, 10)
        fp.check_one_of("s", "most", "least", "most")


if __name__ == "__main__":
    unittest.main()
