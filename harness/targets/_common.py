"""What every target shares: calling the driver so that its exceptions become verdicts, preparing, inputs.

A target never lets a driver exception or a missing callback escape as an exception of its own: `guarded` turns
them into FAILURE (driver.no_exception_escapes) and HANG (driver.answers_in_time) verdicts. Exceptions raised by
harness code outside a HAL call propagate: they are harness bugs and must crash loudly.

`call` is also where every status a HAL call answers is checked, once, against the statuses the HAL lets that
method give (harness.oracle.status_sets): the call's name says which method answered (`CALL_METHODS`), or the
answer lists its methods itself (an execution path's Outcome). A status outside its method's set ends the case as
a FAILURE of `status.in_method_set`, before the target judges the answer by its other rules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from harness.hal import (
    CallbackTimeout,
    Device,
    ErrorStatus,
    ExecutionPreference,
    Model,
    PreparedModel,
    Priority,
)
from harness.hal.callbacks import WaitablePreparedModelCallback
from harness.oracle.rules import INVALID_MODEL_REJECTED, Breach, exception_verdict, hang_verdict, verdict_of
from harness.oracle.status_sets import judge_status_in_set
from harness.oracle.verdict import Verdict
from harness.paths import CONFIGURE_BURST
from harness.paths.burst_client import BurstUnavailable
from harness.reference import validate_model

T = TypeVar("T")

# How long a target waits for a callback or fence before calling the driver hung (seconds).
DEFAULT_TIMEOUT_S = 10.0
TOKEN = bytes(32)
DEFAULT_PREFERENCE = int(ExecutionPreference.FAST_SINGLE_ANSWER)
DEFAULT_PRIORITY = int(Priority.MEDIUM)


class DriverRaised(Exception):
    """An exception escaped a HAL call (carried to `guarded`, which makes it a verdict)."""

    def __init__(self, call: str, error: BaseException) -> None:
        super().__init__(f"{call}: {type(error).__name__}: {error}")
        self.call = call
        self.error = error


class Hung(Exception):
    """A HAL call never answered (carried to `guarded`, which makes it a HANG verdict)."""

    def __init__(self, call: str, error: CallbackTimeout) -> None:
        super().__init__(f"{call}: {error}")
        self.call = call
        self.error = error


class StatusOutsideSet(Exception):
    """A HAL call answered a status its method may not give (carried to `guarded`, which makes it a verdict)."""

    def __init__(self, call: str, breach: Breach) -> None:
        super().__init__(f"{call}: {breach.title}")
        self.call = call
        self.breach = breach


# The HAL method whose status a call answers, by the name the targets give the call (harness.oracle.status_sets
# names). A call named "<path> execution" runs an execution path, whose Outcome lists its answers itself.
CALL_METHODS = {
    "getSupportedOperations": "IDevice::getSupportedOperations_1_3",
    "getNumberOfCacheFilesNeeded": "IDevice::getNumberOfCacheFilesNeeded",
    "prepareModel": "IDevice::prepareModel_1_3",
    "prepareModel callback": "IPreparedModelCallback::notify_1_3",
    "prepareModelFromCache": "IDevice::prepareModelFromCache_1_3",
    "prepareModelFromCache callback": "IPreparedModelCallback::notify_1_3",
    "allocate": "IDevice::allocate",
    "copyTo": "IBuffer::copyTo",
    "copyFrom": "IBuffer::copyFrom",
    "executeSynchronously": "IPreparedModel::executeSynchronously_1_3",
    "configureExecutionBurst": CONFIGURE_BURST,
    "burst exchange": "FmqResultDatum::packetInformation",
}
# Calls whose answer carries no status: IBurstContext::freeMemory returns nothing; release ends a burst.
NO_STATUS_CALLS = frozenset({"freeMemory", "release"})


def answers_of(what: str, result: object) -> list[tuple[str, ErrorStatus]]:
    """The (HAL method, status) pairs a call's result carries: an Outcome's own list, or the status of the method
    `CALL_METHODS` gives for the call's name (the result itself, the first of a tuple, or its `status`)."""
    listed = getattr(result, "answers", None)
    if listed is not None:
        return list(listed)
    method = CALL_METHODS.get(what)
    if method is None:
        return []
    if isinstance(result, tuple):
        status = result[0] if result else None
    elif isinstance(result, int):
        status = result
    else:
        status = getattr(result, "status", None)
    if not isinstance(status, int) or isinstance(status, bool):
        return []  # no status to check (a burst client: configured, so NONE); other rules judge a malformed one
    try:
        return [(method, ErrorStatus(status))]
    except ValueError:
        return []  # not an ErrorStatus at all: driver.returns_hal_values, where the target converts it


def check_answers(what: str, answers: list[tuple[str, ErrorStatus]]) -> None:
    """StatusOutsideSet for the first answer outside its method's set."""
    for method, status in answers:
        breach = judge_status_in_set(method, status, what)
        if breach is not None:
            raise StatusOutsideSet(what, breach)


def call(what: str, fn: Callable[..., T], *args: Any) -> T:
    """fn(*args), a HAL call (or a path function wrapping one): its exceptions become DriverRaised or Hung, and
    each status it answers is checked against its method's set (StatusOutsideSet)."""
    try:
        result = fn(*args)
    except CallbackTimeout as exc:
        raise Hung(what, exc) from exc
    except Exception as exc:  # the harness treats anything escaping the HAL interface as a driver failure
        if isinstance(exc, BurstUnavailable):  # configureExecutionBurst refused: its status is an answer too
            check_answers(what, [(CONFIGURE_BURST, exc.status)])
        raise DriverRaised(what, exc) from exc
    check_answers(what, answers_of(what, result))
    return result


def guarded(target: str, body: Callable[[], Verdict]) -> Verdict:
    """body(), with escaped driver exceptions as FAILURE, missing answers as HANG and statuses outside their
    method's set as FAILURE (status.in_method_set) verdicts."""
    try:
        return body()
    except DriverRaised as exc:
        return exception_verdict(exc.call, exc.error, target)
    except Hung as exc:
        return hang_verdict(exc.call, str(exc.error), target)
    except StatusOutsideSet as exc:
        return verdict_of([exc.breach], target, call=exc.call)


def prepared_invalid_model(verdict: Verdict, model: Model, target: str) -> Verdict:
    """The verdict, or, when it is a failure on a model the reference validator refuses and the driver prepared,
    the invalid-model finding instead.

    Generated models are valid by construction, but a minimized or hand-edited case may not be: what the driver
    computes for an invalid model it should have refused is no finding of its own. Checked only on a failure.
    """
    if verdict.ok or verdict.rule == INVALID_MODEL_REJECTED:
        return verdict
    violations = validate_model(model)
    if not violations:
        return verdict
    first = violations[0]
    breach = Breach(
        INVALID_MODEL_REJECTED,
        "the driver prepared a model the reference validator refuses",
        f"the reference validator says {first.v}: {first.message}; the driver then failed {verdict.rule}",
    )
    return verdict_of([breach], target)


def status_of(value: object) -> ErrorStatus:
    """A driver's status as an ErrorStatus (ValueError for values the HAL does not define)."""
    return ErrorStatus(value)


def supported_operations(device: Device, model: Model) -> tuple[ErrorStatus, list[bool]]:
    """IDevice::getSupportedOperations_1_3, checked to return a status and a list of booleans."""

    def ask() -> tuple[ErrorStatus, list[bool]]:
        status, flags = device.get_supported_operations(model)
        flags = list(flags)
        if not all(isinstance(f, bool | np.bool_) for f in flags):
            raise TypeError(f"getSupportedOperations flags are not booleans: {flags!r}")
        return status_of(status), [bool(f) for f in flags]

    return call("getSupportedOperations", ask)


@dataclass
class Preparation:
    """What prepareModel answered."""

    launch: ErrorStatus
    status: ErrorStatus
    prepared: PreparedModel | None


def prepare(
    device: Device,
    model: Model,
    *,
    preference: int = DEFAULT_PREFERENCE,
    priority: int = DEFAULT_PRIORITY,
    deadline: int | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> Preparation:
    """IDevice::prepareModel_1_3 without caches, waiting for the callback."""
    callback = WaitablePreparedModelCallback()

    def launch() -> ErrorStatus:
        return status_of(device.prepare_model(model, preference, priority, deadline, [], [], TOKEN, callback))

    launched = call("prepareModel", launch)
    status, prepared = call("prepareModel callback", callback.result, timeout_s)
    return Preparation(launched, status, prepared)
