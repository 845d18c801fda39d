"""The log lines go-plugin's host parses (plugins/sdk/log.go's shape)."""

import datetime as dt
import io
import json
import unittest

from tests.support import fp  # noqa: F401
from foresight_plugin.log import LineWriter, Logger, timestamp


class LoggerTest(unittest.TestCase):
    def test_one_json_object_per_line_with_the_hclog_keys(self):
        out = io.StringIO()
        log = Logger(out).with_fields(component="model")
        log.info("model loaded", rows=1200, path="/m", ratio=float("nan"))
        log.debug("dropped below the level")
        log.level = "debug"
        log.debug("kept")
        lines = out.getvalue().splitlines()
        self.assertEqual(len(lines), 2)
        first = json.loads(lines[0])
        self.assertEqual(first["@level"], "info")
        self.assertEqual(first["@message"], "model loaded")
        self.assertEqual((first["rows"], first["path"], first["component"]), (1200, "/m", "model"))
        self.assertEqual(first["ratio"], "nan", "JSON has no NaN: the host would drop the line")
        # go-plugin parses @timestamp with Go's layout 2006-01-02T15:04:05.000000Z07:00.
        self.assertRegex(first["@timestamp"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
        self.assertEqual(json.loads(lines[1])["@level"], "debug")

    def test_timestamp_layout(self):
        t = dt.datetime(2026, 3, 4, 5, 6, 7, 8, tzinfo=dt.timezone(dt.timedelta(hours=2)))
        self.assertEqual(timestamp(t), "2026-03-04T03:06:07.000008Z")

    def test_exception_carries_the_traceback(self):
        out = io.StringIO()
        try:
            {}["missing"]
        except KeyError:
            Logger(out).exception("lookup failed")
        entry = json.loads(out.getvalue())
        self.assertEqual(entry["error"], "KeyError: 'missing'")
        self.assertIn("Traceback", entry["traceback"])

    def test_unknown_level_is_refused(self):
        with self.assertRaises(ValueError):
            Logger(io.StringIO(), level="verbose")

    def test_line_writer_logs_complete_lines(self):
        out = io.StringIO()
        w = LineWriter(Logger(out), "info", stream="stdout")
        print("hello", "world", file=w, end="")
        self.assertEqual(out.getvalue(), "")
        print(file=w)
        print("a\nb", file=w)
        self.assertEqual([json.loads(l)["@message"] for l in out.getvalue().splitlines()],
                         ["hello world", "a", "b"])


if __name__ == "__main__":
    unittest.main()
