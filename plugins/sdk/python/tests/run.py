"""Runs the kit's tests (`make test` calls it) and exits without finalizing the interpreter.

grpcio's completion-queue threads can race the interpreter's finalization in a process that made
client calls (grpc/grpc#11804, #18456): on 2026-11-30 one CI run segfaulted in the test process
after all 100 tests had passed and printed OK, and 15 runs in a row did not repeat it. The plugins
under test run in processes of their own and are stopped by the tests; only the test process skips
its finalization. faulthandler prints every thread's stack should a crash happen while tests run.
"""

import faulthandler
import os
import sys
import unittest
from pathlib import Path

KIT = Path(__file__).resolve().parents[1]


def main() -> int:
    faulthandler.enable()
    suite = unittest.defaultTestLoader.discover(start_dir=str(KIT / "tests"), top_level_dir=str(KIT))
    result = unittest.TextTestRunner(verbosity=1).run(suite)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
