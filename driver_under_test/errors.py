"""The driver's internal error: carries the ErrorStatus it becomes at the HAL boundary."""

from __future__ import annotations

from harness.hal import ErrorStatus


class DriverError(Exception):
    """A failure inside the driver, converted to `status` when it reaches the HAL interface."""

    def __init__(self, status: ErrorStatus, message: str, rule: str = "") -> None:
        super().__init__(message)
        self.status = ErrorStatus(status)
        self.rule = rule  # which validation rule was broken, when it is a validation failure

    def __str__(self) -> str:
        prefix = f"[{self.rule}] " if self.rule else ""
        return f"{self.status.name}: {prefix}{self.args[0]}"


def invalid(message: str, rule: str = "") -> DriverError:
    """An INVALID_ARGUMENT error naming the broken rule."""
    return DriverError(ErrorStatus.INVALID_ARGUMENT, message, rule)


def failure(message: str, rule: str = "") -> DriverError:
    """A GENERAL_FAILURE error."""
    return DriverError(ErrorStatus.GENERAL_FAILURE, message, rule)


def as_driver_error(e: BaseException) -> DriverError:
    """The error to report for any exception reaching the HAL boundary: unexpected ones become GENERAL_FAILURE."""
    if isinstance(e, DriverError):
        return e
    return DriverError(ErrorStatus.GENERAL_FAILURE, f"internal error: {type(e).__name__}: {e}", "driver.internal")
