"""Burst executions over fast message queues (D20-D22)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.hal import BurstCallback, BurstContext, ErrorStatus

if TYPE_CHECKING:
    from driver_under_test.prepared_model import DriverPreparedModel


def configure_burst(
    prepared_model: DriverPreparedModel, callback: BurstCallback, request_channel: object, result_channel: object
) -> tuple[ErrorStatus, BurstContext | None]:
    """Start a burst listener for this prepared model; GENERAL_FAILURE until bursts are offered."""
    return ErrorStatus.GENERAL_FAILURE, None
