"""The HAL's execution paths behind one shape, so a rule can be checked on every path alike.

Each path takes a prepared model and a request and returns an Outcome. A driver that never answers raises
CallbackTimeout (a HANG to the caller); an exception from the driver propagates (a FAILURE to the caller).

An Outcome also carries the wall time the harness measured around the calls that surely contain the execution
(`elapsed_ns`): a duration the driver reports cannot be longer (harness.oracle.rules.judge_timing).

An Outcome lists every status the driver answered on the way, each with the HAL method that answered it
(`answers`), so that the caller can check each against the statuses that method may give
(harness.oracle.status_sets): a fenced execution's launch status and its getExecutionInfo status, an asynchronous
one's launch and callback statuses, a burst's configuration status and its result packet's status.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.hal import (
    NO_TIMING_INFO,
    Deadline,
    Duration,
    ErrorStatus,
    MeasureTiming,
    OutputShape,
    PreparedModel,
    Request,
    Timing,
)
from harness.hal.callbacks import CallbackTimeout, WaitableExecutionCallback
from harness.hal.fence import FenceState

DEFAULT_TIMEOUT_S = 30.0


@dataclass
class Outcome:
    """What one execution reported."""

    path: str
    status: ErrorStatus
    output_shapes: list[OutputShape] = field(default_factory=list)
    timing: Timing = NO_TIMING_INFO
    launch_status: ErrorStatus | None = None  # asynchronous paths: the status returned at launch
    timing_launched: Timing | None = None  # fenced path only
    notes: list[str] = field(default_factory=list)  # convention breaches seen on the way (for the oracle)
    answers: list[tuple[str, ErrorStatus]] = field(default_factory=list)  # (HAL method, status) in the order given
    elapsed_ns: int | None = None  # wall time from before the launching call to after the timing was returned


# The HAL methods whose statuses the paths receive, as harness.oracle.status_sets names them.
EXECUTE_SYNCHRONOUSLY = "IPreparedModel::executeSynchronously_1_3"
EXECUTE = "IPreparedModel::execute_1_3"
EXECUTION_CALLBACK = "IExecutionCallback::notify_1_3"
EXECUTE_FENCED = "IPreparedModel::executeFenced"
GET_EXECUTION_INFO = "IFencedExecutionCallback::getExecutionInfo"
CONFIGURE_BURST = "IPreparedModel::configureExecutionBurst"
BURST_RESULT = "FmqResultDatum::packetInformation"


@dataclass(frozen=True)
class ExecutionArgs:
    """The per-execution arguments every path takes."""

    measure: MeasureTiming = MeasureTiming.NO
    deadline: Deadline = None
    loop_timeout: Duration = None
    timeout_s: float = DEFAULT_TIMEOUT_S


def run_synchronous(pm: PreparedModel, request: Request, args: ExecutionArgs) -> Outcome:
    """IPreparedModel::executeSynchronously_1_3."""
    started = time.perf_counter_ns()
    status, shapes, timing = pm.execute_synchronously(request, args.measure, args.deadline, args.loop_timeout)
    elapsed = time.perf_counter_ns() - started
    status = ErrorStatus(status)
    answers = [(EXECUTE_SYNCHRONOUSLY, status)]
    return Outcome("sync", status, list(shapes), timing, answers=answers, elapsed_ns=elapsed)


def run_asynchronous(pm: PreparedModel, request: Request, args: ExecutionArgs) -> Outcome:
    """IPreparedModel::execute_1_3 and its callback; the launch status must agree with the callback's."""
    callback = WaitableExecutionCallback()
    started = time.perf_counter_ns()
    launch = ErrorStatus(pm.execute(request, args.measure, args.deadline, args.loop_timeout, callback))
    status, shapes, timing = callback.result(args.timeout_s)
    elapsed = time.perf_counter_ns() - started
    answers = [(EXECUTE, launch), (EXECUTION_CALLBACK, status)]
    outcome = Outcome("async", status, shapes, timing, launch_status=launch, answers=answers, elapsed_ns=elapsed)
    if launch != ErrorStatus.NONE and launch != status:
        outcome.notes.append(f"launch status {launch.name} differs from callback status {status.name}")
    if callback.notify_count > 1:
        outcome.notes.append(f"callback notified {callback.notify_count} times")
    return outcome


def run_fenced(pm: PreparedModel, request: Request, args: ExecutionArgs) -> Outcome:
    """IPreparedModel::executeFenced with no fences to wait for; waits on the returned fence."""
    started = time.perf_counter_ns()
    status, fence, callback = pm.execute_fenced(request, [], args.measure, args.deadline, args.loop_timeout, None)
    status = ErrorStatus(status)
    answers = [(EXECUTE_FENCED, status)]
    if status != ErrorStatus.NONE:
        return Outcome("fenced", status, launch_status=status, answers=answers)
    if fence is None or callback is None:
        note = "NONE returned without a fence or callback"
        return Outcome("fenced", status, launch_status=status, notes=[note], answers=answers)
    state = fence.wait(args.timeout_s)
    fence.close()
    if state == FenceState.ACTIVE:
        raise CallbackTimeout(f"fence not signalled within {args.timeout_s} s")
    info_status, launched, fenced = callback.get_execution_info()
    # Both timings are of work launched by executeFenced and finished before getExecutionInfo could answer.
    elapsed = time.perf_counter_ns() - started
    info_status = ErrorStatus(info_status)
    answers.append((GET_EXECUTION_INFO, info_status))
    return Outcome(
        "fenced",
        info_status,
        [],
        fenced,
        launch_status=status,
        timing_launched=launched,
        answers=answers,
        elapsed_ns=elapsed,
    )


def run_burst(pm: PreparedModel, request: Request, args: ExecutionArgs) -> Outcome:
    """A burst execution over fast message queues (configureExecutionBurst, one burst per call).

    What the burst wire cannot carry (a deadline, a loop timeout, a driver-buffer pool, a request that does not
    serialize) goes through executeSynchronously instead, as the NNAPI runtime falls back.
    """
    from harness.paths.burst_client import BurstCannotCarry, BurstClient, BurstUnavailable

    def fall_back() -> Outcome:
        outcome = run_synchronous(pm, request, args)
        outcome.path = "burst"
        return outcome

    if args.deadline is not None or args.loop_timeout is not None:
        return fall_back()
    try:
        client = BurstClient(pm, timeout_s=args.timeout_s)
    except BurstUnavailable as e:
        return Outcome("burst", e.status, launch_status=e.status, answers=[(CONFIGURE_BURST, e.status)])
    with client:
        try:
            status, shapes, timing = client.execute(request, args.measure)
        except BurstCannotCarry:
            outcome = fall_back()
            outcome.answers.insert(0, (CONFIGURE_BURST, ErrorStatus.NONE))
            return outcome
    status = ErrorStatus(status)
    answers = [(CONFIGURE_BURST, ErrorStatus.NONE), (BURST_RESULT, status)]
    notes, elapsed = list(client.last_notes), client.last_elapsed_ns
    return Outcome("burst", status, list(shapes), timing, notes=notes, answers=answers, elapsed_ns=elapsed)


PATHS: dict[str, Callable[[PreparedModel, Request, ExecutionArgs], Outcome]] = {
    "sync": run_synchronous,
    "async": run_asynchronous,
    "fenced": run_fenced,
    "burst": run_burst,
}
