"""The HAL's execution paths behind one shape, so a rule can be checked on every path alike.

Each path takes a prepared model and a request and returns an Outcome. A driver that never answers raises
CallbackTimeout (a HANG to the caller); an exception from the driver propagates (a FAILURE to the caller).
"""

from __future__ import annotations

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


@dataclass(frozen=True)
class ExecutionArgs:
    """The per-execution arguments every path takes."""

    measure: MeasureTiming = MeasureTiming.NO
    deadline: Deadline = None
    loop_timeout: Duration = None
    timeout_s: float = DEFAULT_TIMEOUT_S


def run_synchronous(pm: PreparedModel, request: Request, args: ExecutionArgs) -> Outcome:
    """IPreparedModel::executeSynchronously_1_3."""
    status, shapes, timing = pm.execute_synchronously(request, args.measure, args.deadline, args.loop_timeout)
    return Outcome("sync", ErrorStatus(status), list(shapes), timing)


def run_asynchronous(pm: PreparedModel, request: Request, args: ExecutionArgs) -> Outcome:
    """IPreparedModel::execute_1_3 and its callback; the launch status must agree with the callback's."""
    callback = WaitableExecutionCallback()
    launch = ErrorStatus(pm.execute(request, args.measure, args.deadline, args.loop_timeout, callback))
    status, shapes, timing = callback.result(args.timeout_s)
    outcome = Outcome("async", status, shapes, timing, launch_status=launch)
    if launch != ErrorStatus.NONE and launch != status:
        outcome.notes.append(f"launch status {launch.name} differs from callback status {status.name}")
    if callback.notify_count > 1:
        outcome.notes.append(f"callback notified {callback.notify_count} times")
    return outcome


def run_fenced(pm: PreparedModel, request: Request, args: ExecutionArgs) -> Outcome:
    """IPreparedModel::executeFenced with no fences to wait for; waits on the returned fence."""
    status, fence, callback = pm.execute_fenced(request, [], args.measure, args.deadline, args.loop_timeout, None)
    status = ErrorStatus(status)
    if status != ErrorStatus.NONE:
        return Outcome("fenced", status, launch_status=status)
    if fence is None or callback is None:
        return Outcome("fenced", status, launch_status=status, notes=["NONE returned without a fence or callback"])
    state = fence.wait(args.timeout_s)
    fence.close()
    if state == FenceState.ACTIVE:
        raise CallbackTimeout(f"fence not signalled within {args.timeout_s} s")
    info_status, launched, fenced = callback.get_execution_info()
    return Outcome("fenced", ErrorStatus(info_status), [], fenced, launch_status=status, timing_launched=launched)


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
        return Outcome("burst", e.status, launch_status=e.status)
    with client:
        try:
            status, shapes, timing = client.execute(request, args.measure)
        except BurstCannotCarry:
            return fall_back()
    return Outcome("burst", ErrorStatus(status), list(shapes), timing, notes=list(client.last_notes))


PATHS: dict[str, Callable[[PreparedModel, Request, ExecutionArgs], Outcome]] = {
    "sync": run_synchronous,
    "async": run_asynchronous,
    "fenced": run_fenced,
    "burst": run_burst,
}
