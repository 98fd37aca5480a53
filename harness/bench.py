"""Benchmark of the targets: executions per second, in-process on one core, on the fault-free driver.

A target's rate counts whole cases: decoding a seeded random source, driving the driver and judging. For the
validation and execution targets the bare driver calls are timed too, on the same cases decoded and set up
beforehand (getSupportedOperations + prepareModel; executeSynchronously on prepared models), so that the
harness's overhead shows as the ratio of the two rates.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from harness.case import Case
from harness.drivers import DEFAULT_DRIVER, create_device
from harness.hal import Device, ErrorStatus, ExecutionPreference, MeasureTiming, Priority
from harness.hal.callbacks import WaitablePreparedModelCallback
from harness.runner.execute import decode_seed, resolve_target, run_case
from harness.targets.base import Target

DEFAULT_SECONDS = 10.0
_TOKEN = bytes(32)
_CALLBACK_TIMEOUT_S = 30.0


@dataclass
class TargetBench:
    """One target's figures."""

    name: str
    executions: int = 0
    rejected: int = 0  # seeds the generator rejected (counted in the time, not in the executions)
    failures: int = 0  # cases that did not end in SUCCESS (on a fault-free driver: worth a look)
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # processor time of the whole process (driver threads included) over the cases
    bare_calls: int | None = None
    bare_seconds: float | None = None
    cases: list[Case] = field(default_factory=list, repr=False)

    @property
    def execs_per_second(self) -> float:
        """Whole cases per second."""
        return self.executions / self.seconds if self.seconds else 0.0

    @property
    def cpu_us_per_case(self) -> float:
        """Processor microseconds per whole case: steadier than the rate on a machine other work shares."""
        return self.cpu_seconds / self.executions * 1e6 if self.executions else 0.0

    @property
    def bare_per_second(self) -> float | None:
        """Bare driver calls per second (None when not measured)."""
        if not self.bare_calls or not self.bare_seconds:
            return None
        return self.bare_calls / self.bare_seconds

    @property
    def overhead_ratio(self) -> float | None:
        """How many times the bare driver calls outpace the whole target."""
        bare = self.bare_per_second
        return bare / self.execs_per_second if bare and self.execs_per_second else None

    def to_json(self) -> dict:
        """The report's entry."""
        d = {
            "execs_per_second": round(self.execs_per_second, 2),
            "executions": self.executions,
            "rejected": self.rejected,
            "failures": self.failures,
            "seconds": round(self.seconds, 3),
            "cpu_us_per_case": round(self.cpu_us_per_case, 1),
        }
        if self.bare_per_second is not None:
            d["bare_driver_calls_per_second"] = round(self.bare_per_second, 2)
            d["overhead_ratio"] = round(self.overhead_ratio or 0.0, 2)
        return d


def bench_target(target: Target, device: Device, seconds: float, keep: int = 200) -> TargetBench:
    """Run seeded cases for `seconds`; keep up to `keep` decoded cases for the bare-call measurement."""
    result = TargetBench(target.name)
    seed = 0
    cpu_start = time.process_time()
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        case = decode_seed(target, seed)
        seed += 1
        if case is None:
            result.rejected += 1
            continue
        verdict = run_case(target, case, device).verdict
        result.executions += 1
        result.failures += not verdict.ok
        if len(result.cases) < keep:
            result.cases.append(case)  # with its live objects, for the bare calls
        else:
            case.close()
    result.seconds = time.perf_counter() - start
    result.cpu_seconds = time.process_time() - cpu_start
    return result


def _timed_cycle(calls: Sequence[Callable[[], object]], seconds: float) -> tuple[int, float]:
    """Call each in turn, round and round, for `seconds`; (calls made, seconds)."""
    if not calls:
        return 0, 0.0
    n = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        calls[n % len(calls)]()
        n += 1
    return n, time.perf_counter() - start


def bare_validation(cases: Sequence[Case], device: Device, seconds: float) -> tuple[int, float]:
    """getSupportedOperations + prepareModel (waiting for the callback) on the cases' models."""

    def check_and_prepare(model) -> Callable[[], object]:
        def call() -> object:
            device.get_supported_operations(model)
            callback = WaitablePreparedModelCallback()
            device.prepare_model(
                model, ExecutionPreference.FAST_SINGLE_ANSWER, Priority.MEDIUM, None, [], [], _TOKEN, callback
            )
            return callback.result(_CALLBACK_TIMEOUT_S)

        return call

    return _timed_cycle([check_and_prepare(c.materialized().model) for c in cases], seconds)


def bare_execution(cases: Sequence[Case], device: Device, seconds: float) -> tuple[int, float]:
    """executeSynchronously on the cases' prepared models and requests (set up beforehand, untimed)."""
    calls = []
    for case in cases:
        if case.request is None:
            continue
        live = case.materialized()  # the case keeps its model, request and memories alive
        model = live.model
        callback = WaitablePreparedModelCallback()
        device.prepare_model(
            model, ExecutionPreference.FAST_SINGLE_ANSWER, Priority.MEDIUM, None, [], [], _TOKEN, callback
        )
        status, prepared = callback.result(_CALLBACK_TIMEOUT_S)
        if status != ErrorStatus.NONE or prepared is None:
            continue
        request = live.request.request  # type: ignore[union-attr]
        measure = MeasureTiming.YES if case.execution.get("measure") else MeasureTiming.NO
        loop_timeout = case.execution.get("loopTimeoutNs")
        calls.append(lambda p=prepared, r=request, m=measure, t=loop_timeout: p.execute_synchronously(r, m, None, t))
    return _timed_cycle(calls, seconds)


BARE_CALLS: dict[str, Callable[[Sequence[Case], Device, float], tuple[int, float]]] = {
    "validation": bare_validation,
    "execution": bare_execution,
}


@dataclass
class TargetStarted:
    """A target's measurement begins."""

    name: str
    seconds: float


@dataclass
class TargetDone:
    """A target's figures are in."""

    bench: TargetBench


def run_bench(
    targets: Sequence[str],
    seconds: float = DEFAULT_SECONDS,
    driver: str = DEFAULT_DRIVER,
    emit: Callable[[TargetStarted | TargetDone], None] = lambda e: None,
) -> list[TargetBench]:
    """Measure each target (and its bare driver calls, where defined) on one fault-free device."""
    device = create_device(driver, faults=[])
    results = []
    for ref in targets:
        target = resolve_target(ref)
        emit(TargetStarted(target.name, seconds))
        bench = bench_target(target, device, seconds)
        bare = BARE_CALLS.get(target.name)
        if bare is not None and bench.cases:
            bench.bare_calls, bench.bare_seconds = bare(bench.cases, device, seconds)
        emit(TargetDone(bench))
        results.append(bench)
    return results


def usable_cpus() -> set[int]:
    """The CPUs this process may run on (empty where affinity is not available)."""
    return set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else set()


@contextmanager
def one_cpu(cpu: int | None = None) -> Iterator[int | None]:
    """Within the block, this process runs on one CPU (`cpu`, or the first it may use); yields the CPU, or None where
    affinity is not available. ValueError for a CPU the process may not use. The affinity is restored after."""
    # "One core" is meant literally: the driver's worker threads and the caller then hand over the interpreter on
    # the same core, as in a fuzzing worker on a loaded machine, instead of waking an idle core each time.
    if not hasattr(os, "sched_setaffinity"):
        yield None
        return
    allowed = os.sched_getaffinity(0)
    chosen = min(allowed) if cpu is None else cpu
    if chosen not in allowed:
        raise ValueError(f"CPU {chosen} is not one this process may use ({', '.join(map(str, sorted(allowed)))})")
    os.sched_setaffinity(0, {chosen})
    try:
        yield chosen
    finally:
        os.sched_setaffinity(0, allowed)


def report_json(results: Sequence[TargetBench], cpu: int | None = None) -> dict:
    """{"targets": {name: {"execs_per_second": ..., ...}}, "cpu": the CPU it ran on (None: not pinned)}."""
    return {"targets": {r.name: r.to_json() for r in results}, "cpu": cpu}
