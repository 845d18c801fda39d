"""Imports the generated protobuf code (proto/gen/python), putting it on sys.path if needed.

The generated modules import each other as ``foresight.v1.<name>_pb2``, so the directory that
holds the ``foresight`` package must be on sys.path. A plugin normally adds it itself (see
plugins/python-scorer/main.py); otherwise it is found relative to this file in the repository.
"""

import sys
from pathlib import Path

try:
    from foresight.v1 import types_pb2  # noqa: F401
except ImportError:
    # plugins/sdk/python/foresight_plugin/_gen.py -> the repository root is four levels up.
    _gen = Path(__file__).resolve().parents[4] / "proto" / "gen" / "python"
    if not (_gen / "foresight" / "v1").is_dir():
        raise ImportError(
            "foresight_plugin needs the generated Python code of proto/foresight/v1 "
            f"(proto/gen/python); not found at {_gen}: put its directory on sys.path") from None
    sys.path.insert(0, str(_gen))

from foresight.v1 import (  # noqa: E402
    admitter_pb2, admitter_pb2_grpc, detector_pb2, detector_pb2_grpc, filter_pb2, filter_pb2_grpc,
    order_pb2, order_pb2_grpc, picker_pb2, picker_pb2_grpc, plugin_pb2, plugin_pb2_grpc,
    producer_pb2, producer_pb2_grpc, scorer_pb2, scorer_pb2_grpc, types_pb2,
)

__all__ = [
    "admitter_pb2", "admitter_pb2_grpc", "detector_pb2", "detector_pb2_grpc", "filter_pb2",
    "filter_pb2_grpc", "order_pb2", "order_pb2_grpc", "picker_pb2", "picker_pb2_grpc",
    "plugin_pb2", "plugin_pb2_grpc", "producer_pb2", "producer_pb2_grpc", "scorer_pb2",
    "scorer_pb2_grpc", "types_pb2",
]
