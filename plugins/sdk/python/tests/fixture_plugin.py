#!/usr/bin/python3
"""A plugin for the kit's process tests: `fixture_plugin.py STAGE` serves a trivial stage."""

import datetime
import sys
from pathlib import Path

KIT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(KIT))
sys.path.insert(0, str(KIT.parents[2] / "proto" / "gen" / "python"))

import foresight_plugin as fp  # noqa: E402


class Producer(fp.Producer):
    type = "fixture-producer"

    def produce(self, cycle):
        # TTFT grows with the waiting queue; the last endpoint has no prediction.
        out = [fp.Prediction(True, 100.0 + 10 * e.state.waiting, 20.0) for e in cycle.endpoints]
        if out:
            out[-1] = None
        return out

    def observe(self, samples):
        return fp.ObserveResult(len(samples), fp.PredictorStats(
            model_version=3, training_rows=len(samples),
            ttft=fp.TargetStats(samples=len(samples), mape=0.1, mae=5.0, quantile_coverage=0.9)))


class Filter(fp.Filter):
    type = "fixture-filter"

    def filter(self, cycle):
        return fp.FilterVerdict([i for i, e in enumerate(cycle.endpoints) if e.state.waiting < 5],
                                "waiting < 5")


class Admitter(fp.Admitter):
    type = "fixture-admitter"

    def admit(self, cycle):
        if cycle.request.priority < 0:
            return fp.AdmitVerdict(False, "sheddable")
        return True


class Picker(fp.Picker):
    type = "fixture-picker"

    def pick(self, cycle, scores):
        return sorted(range(len(scores)), key=lambda i: -scores[i])


class Detector(fp.Detector):
    type = "fixture-detector"

    def detect(self, cycle):
        # Room for 2 - waiting more; a negative count travels as 0.
        room = [2 - e.state.waiting for e in cycle.endpoints]
        return fp.SaturationVerdict(room, reason="" if any(r > 0 for r in room) else "queues-full")


class Orderer(fp.Orderer):
    type = "fixture-order"

    def order(self, cycle):
        # Rank by priority, highest first; hopeless 100 ms after arrival with a TTFT objective.
        hopeless = None
        if cycle.request.slo.ttft_ms > 0:
            hopeless = cycle.now + datetime.timedelta(milliseconds=100)
        return fp.OrderKey(-cycle.request.priority, hopeless, cycle.request.session_id)


class Scorer(fp.Scorer):
    type = "fixture-scorer"
    parameters = {"fail": False}

    def configure(self, params):
        print("configured with", params)  # reaches the host's log, not go-plugin's stdout

    def score(self, cycle):
        if self.params["fail"]:
            raise RuntimeError("asked to fail")
        return [1.0 / (1 + e.state.waiting) for e in cycle.endpoints]


class BadReads(Scorer):
    type = "fixture-bad-reads"
    reads = ["request", "endpoints.state.waiting"]  # "states", not "state"


class BadDefaults(Scorer):
    type = "fixture-bad-defaults"
    parameters = {"weight": -1.0}

    def configure(self, params):
        fp.check_range("weight", params["weight"], 0, 1)


STAGES = {"producer": Producer, "filter": Filter, "admitter": Admitter, "picker": Picker,
          "scorer": Scorer, "detector": Detector, "order": Orderer, "bad-reads": BadReads,
          "bad-defaults": BadDefaults}

if __name__ == "__main__":
    fp.serve(STAGES[sys.argv[1]](), version="0.1.0")
