"""Callback implementations a client can wait on with a timeout."""

from __future__ import annotations

import threading

from harness.hal.enums import ErrorStatus
from harness.hal.interfaces import ExecutionCallback, PreparedModel, PreparedModelCallback
from harness.hal.types import NO_TIMING_INFO, OutputShape, Timing


class CallbackTimeout(Exception):
    """The driver did not call the callback within the time allowed."""


class _Waitable:
    def __init__(self) -> None:
        self._done = threading.Event()
        self.notify_count = 0

    def _set(self) -> None:
        self.notify_count += 1
        self._done.set()

    def wait(self, timeout: float | None = None) -> None:
        """Block until notified; CallbackTimeout after `timeout` seconds."""
        if not self._done.wait(timeout):
            raise CallbackTimeout(f"{type(self).__name__} not notified within {timeout} s")

    @property
    def notified(self) -> bool:
        """True once the driver has called notify."""
        return self._done.is_set()


class WaitablePreparedModelCallback(_Waitable, PreparedModelCallback):
    """A prepared-model callback that stores the result and lets the client wait for it."""

    def __init__(self) -> None:
        super().__init__()
        self.status: ErrorStatus | None = None
        self.prepared_model: PreparedModel | None = None

    def notify(self, status: ErrorStatus, prepared_model: PreparedModel | None) -> None:
        """Record the preparation result (the first call wins)."""
        if not self.notified:
            self.status, self.prepared_model = ErrorStatus(status), prepared_model
        self._set()

    def result(self, timeout: float | None = None) -> tuple[ErrorStatus, PreparedModel | None]:
        """Wait, then return (status, prepared model)."""
        self.wait(timeout)
        assert self.status is not None
        return self.status, self.prepared_model


class WaitableExecutionCallback(_Waitable, ExecutionCallback):
    """An execution callback that stores status, shapes and timing and lets the client wait for them."""

    def __init__(self) -> None:
        super().__init__()
        self.status: ErrorStatus | None = None
        self.output_shapes: list[OutputShape] = []
        self.timing: Timing = NO_TIMING_INFO

    def notify(self, status: ErrorStatus, output_shapes: list[OutputShape], timing: Timing) -> None:
        """Record the execution result (the first call wins)."""
        if not self.notified:
            self.status, self.output_shapes, self.timing = ErrorStatus(status), list(output_shapes), timing
        self._set()

    def result(self, timeout: float | None = None) -> tuple[ErrorStatus, list[OutputShape], Timing]:
        """Wait, then return (status, output shapes, timing)."""
        self.wait(timeout)
        assert self.status is not None
        return self.status, self.output_shapes, self.timing
