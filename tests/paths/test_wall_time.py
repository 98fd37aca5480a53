"""The wall time each execution path measures around the driver's work, and the timing rule that uses it (D8)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from driver_under_test import create_device
from harness.case import simple_request
from harness.hal import NO_TIMING, MeasureTiming, Timing
from harness.oracle import rules
from harness.paths import PATHS, ExecutionArgs
from tests.driver.conftest import prepared
from tests.driver.models import add_model

A = np.asarray([[1, 2], [3, 4]], dtype=np.float32)
B = np.asarray([[10, 20], [30, 40]], dtype=np.float32)
TEN_SECONDS_US = 10_000_000


def longer(timing: Timing) -> Timing:
    """The timing with timeInDriver ten seconds longer than measured (a unit slip or a stale start time)."""
    if timing.time_in_driver == NO_TIMING:
        return timing
    return dataclasses.replace(timing, time_in_driver=timing.time_in_driver + TEN_SECONDS_US)


class _LongerCallback:
    def __init__(self, inner) -> None:
        self.inner = inner

    def notify(self, status, output_shapes, timing) -> None:
        self.inner.notify(status, output_shapes, longer(timing))


class _LongerFencedCallback:
    def __init__(self, inner) -> None:
        self.inner = inner

    def get_execution_info(self):
        status, launched, fenced = self.inner.get_execution_info()
        return status, longer(launched), fenced


class LongerTiming:
    """A planted bug: a prepared model reporting timeInDriver ten seconds longer than its executions took."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def execute_synchronously(self, *args):
        status, shapes, timing = self.inner.execute_synchronously(*args)
        return status, shapes, longer(timing)

    def execute(self, request, measure, deadline, loop_timeout, callback):
        return self.inner.execute(request, measure, deadline, loop_timeout, _LongerCallback(callback))

    def execute_fenced(self, *args):
        status, fence, callback = self.inner.execute_fenced(*args)
        return status, fence, None if callback is None else _LongerFencedCallback(callback)


def run(path: str, pm) -> object:
    """One measured execution of the ADD model on a path."""
    with simple_request(add_model(), [A, B], [16]) as rb:
        return PATHS[path](pm, rb.request, ExecutionArgs(measure=MeasureTiming.YES))


@pytest.mark.parametrize("path", sorted(PATHS))
def test_every_path_measures_a_wall_time_covering_the_reported_timing(path: str) -> None:
    outcome = run(path, prepared(create_device(faults=[]), add_model()))
    assert outcome.elapsed_ns is not None and outcome.elapsed_ns > 0
    assert outcome.timing.time_in_driver != NO_TIMING
    assert rules.judge_timing(outcome, measure=True) is None


@pytest.mark.parametrize("path", ["sync", "async", "fenced"])
def test_a_timing_longer_than_the_execution_is_flagged_on_every_path(path: str) -> None:
    outcome = run(path, LongerTiming(prepared(create_device(faults=[]), add_model())))
    finding = rules.judge_timing(outcome, measure=True)
    assert finding is not None and finding.rule == rules.TIMING_WITHIN_WALL_TIME
    if path == "fenced":
        assert "timingLaunched" in finding.title
