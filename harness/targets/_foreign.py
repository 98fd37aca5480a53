"""A fake of a HAL object for the memory_domain target: a prepared model another device made.

D15 says IDevice::allocate refuses roles on a prepared model the device did not make; an allocation that lists one
(harness.gen.roles' {"foreign": true}) is given this instead.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.hal import (
    NO_TIMING_INFO,
    BurstCallback,
    BurstContext,
    Deadline,
    Duration,
    ErrorStatus,
    ExecutionCallback,
    FencedExecutionCallback,
    MeasureTiming,
    OutputShape,
    PreparedModel,
    Request,
    SyncFence,
    Timing,
)


class ForeignPreparedModel(PreparedModel):
    """A prepared model the device under test did not make (as another device's would be): it runs nothing."""

    def execute(
        self,
        request: Request,
        measure: MeasureTiming,
        deadline: Deadline,
        loop_timeout_duration: Duration,
        callback: ExecutionCallback,
    ) -> ErrorStatus:
        """Refuses."""
        callback.notify(ErrorStatus.GENERAL_FAILURE, [], NO_TIMING_INFO)
        return ErrorStatus.GENERAL_FAILURE

    def execute_synchronously(
        self, request: Request, measure: MeasureTiming, deadline: Deadline, loop_timeout_duration: Duration
    ) -> tuple[ErrorStatus, list[OutputShape], Timing]:
        """Refuses."""
        return ErrorStatus.GENERAL_FAILURE, [], NO_TIMING_INFO

    def execute_fenced(
        self,
        request: Request,
        wait_for: Sequence[SyncFence],
        measure: MeasureTiming,
        deadline: Deadline,
        loop_timeout_duration: Duration,
        timeout_after_fence: Duration,
    ) -> tuple[ErrorStatus, SyncFence | None, FencedExecutionCallback | None]:
        """Refuses."""
        return ErrorStatus.GENERAL_FAILURE, None, None

    def configure_execution_burst(
        self, callback: BurstCallback, request_channel: object, result_channel: object
    ) -> tuple[ErrorStatus, BurstContext | None]:
        """Refuses."""
        return ErrorStatus.GENERAL_FAILURE, None
