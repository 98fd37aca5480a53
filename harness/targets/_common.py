"""What every target shares: calling the driver so that its exceptions become verdicts, preparing, inputs.

A target never lets a driver exception or a missing callback escape as an exception of its own: `guarded` turns
them into FAILURE (driver.no_exception_escapes) and HANG (driver.answers_in_time) verdicts. Exceptions raised by
harness code outside a HAL call propagate: they are harness bugs and must crash loudly.
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
from harness.oracle.rules import exception_verdict, hang_verdict
from harness.oracle.verdict import Verdict

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


def call(what: str, fn: Callable[..., T], *args: Any) -> T:
    """fn(*args), a HAL call (or a path function wrapping one): its exceptions become DriverRaised or Hung."""
    try:
        return fn(*args)
    except CallbackTimeout as exc:
        raise Hung(what, exc) from exc
    except Exception as exc:  # the harness treats anything escaping the HAL interface as a driver failure
        raise DriverRaised(what, exc) from exc


def guarded(target: str, body: Callable[[], Verdict]) -> Verdict:
    """body(), with escaped driver exceptions as FAILURE and missing answers as HANG verdicts."""
    try:
        return body()
    except DriverRaised as exc:
        return exception_verdict(exc.call, exc.error, target)
    except Hung as exc:
        return hang_verdict(exc.call, str(exc.error), target)


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
