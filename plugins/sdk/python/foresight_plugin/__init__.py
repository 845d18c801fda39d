"""foresight_plugin: write a Foresight pipeline stage in Python.

A stage is a class with one method, served by one call::

    import foresight_plugin

    class MyScorer(foresight_plugin.Scorer):
        type = "my-scorer"
        description = "prefers endpoints with the shortest waiting queue"

        def score(self, cycle):
            return [1 / (1 + e.state.waiting) for e in cycle.endpoints]

    if __name__ == "__main__":
        foresight_plugin.serve(MyScorer(), version="1.0.0")

The kit speaks hashicorp/go-plugin's gRPC protocol (handshake, AutoMTLS, health, controller) and
Foresight's plugin contracts (proto/foresight/v1) with the Debian packages python3-grpcio,
python3-protobuf and python3-cryptography only. See README.md beside this package.
"""

from . import _gen  # noqa: F401  (puts the generated code on sys.path)
from .cycle import (
    EXCLUDED_EJECTED, EXCLUDED_UNHEALTHY, HOP_DECODE, HOP_PREFILL, HOP_WHOLE, NO_LABELS, NO_ROUND,
    SLO, STAGE_ADMITTER, STAGE_DETECTOR,
    STAGE_FILTER, STAGE_NAMES, STAGE_ORDER, STAGE_PICKER, STAGE_PRODUCER, STAGE_SCORER,
    AdmitVerdict, Cycle, Disaggregation, Endpoint, EndpointState, ExcludedEndpoint, FilterVerdict, ObserveResult,
    OrderKey, Prediction, PredictorStats, Request, Round, Sample, SaturationVerdict, TargetStats,
)
from .convert import cycle_from_proto, cycle_to_proto
from .heuristics import (
    CompositeWeights, Headroom, composite_scores, composite_scores_after, effective_tpot_slo,
    fresh_waiting, headroom_of,
)
from .log import Logger, logger
from .params import check_one_of, check_range, check_range_open_low, decode_params, resolve_path
from .rounds import after_scores, pick_round, place_on, with_own_endpoints
from .server import serve
from .stages import (
    Admitter, Detector, Filter, Orderer, Picker, Plugin, Producer, Scorer, read_paths,
)
from .status import (
    CODE_ERROR, CODE_INVALID_ARGUMENT, CODE_OK, CODE_UNAVAILABLE, InvalidArgument, StatusError,
    Unavailable,
)

__version__ = "1.0.0"

__all__ = [
    # stages and serving
    "Plugin", "Producer", "Filter", "Scorer", "Admitter", "Picker", "Detector", "Orderer", "serve",
    "read_paths",
    # the cycle and the answers
    "Cycle", "Request", "SLO", "Disaggregation", "HOP_WHOLE", "HOP_PREFILL", "HOP_DECODE", "Endpoint", "EndpointState", "Prediction", "ExcludedEndpoint",
    "EXCLUDED_UNHEALTHY", "EXCLUDED_EJECTED", "Sample",
    "FilterVerdict", "AdmitVerdict", "SaturationVerdict", "OrderKey", "ObserveResult",
    "PredictorStats", "TargetStats", "NO_LABELS", "Round", "NO_ROUND",
    # rounds
    "place_on", "with_own_endpoints", "after_scores", "pick_round",
    "STAGE_PRODUCER", "STAGE_FILTER", "STAGE_SCORER", "STAGE_ADMITTER", "STAGE_PICKER",
    "STAGE_DETECTOR", "STAGE_ORDER", "STAGE_NAMES", "cycle_from_proto", "cycle_to_proto",
    # errors
    "StatusError", "InvalidArgument", "Unavailable", "CODE_OK", "CODE_ERROR",
    "CODE_INVALID_ARGUMENT", "CODE_UNAVAILABLE",
    # parameters
    "decode_params", "check_range", "check_range_open_low", "check_one_of", "resolve_path",
    # logging
    "logger", "Logger",
    # heuristics shared with the Go stages
    "CompositeWeights", "composite_scores", "composite_scores_after", "fresh_waiting", "Headroom", "headroom_of",
    "effective_tpot_slo",
]
