"""Fixtures for the driver's tests: a fault-free device, preparation, and the execution paths."""

from __future__ import annotations

import numpy as np
import pytest

from driver_under_test import create_device
from harness.hal import ErrorStatus, ExecutionPreference, Model, PreparedModel, Priority
from harness.hal.callbacks import WaitablePreparedModelCallback
from harness.paths import PATHS

TOKEN = bytes(32)


@pytest.fixture
def device():
    """A fault-free driver device with default options."""
    return create_device(faults=[])


def prepare(
    device, model: Model, *, deadline=None, priority=Priority.MEDIUM, preference=ExecutionPreference.FAST_SINGLE_ANSWER
) -> tuple[ErrorStatus, ErrorStatus, PreparedModel | None]:
    """(launch status, callback status, prepared model) of prepare_model."""
    callback = WaitablePreparedModelCallback()
    launch = device.prepare_model(model, preference, priority, deadline, [], [], TOKEN, callback)
    status, prepared = callback.result(timeout=30)
    return launch, status, prepared


def prepared(device, model: Model) -> PreparedModel:
    """A prepared model, asserting that preparation succeeded."""
    launch, status, pm = prepare(device, model)
    assert (launch, status) == (ErrorStatus.NONE, ErrorStatus.NONE)
    assert pm is not None
    return pm


@pytest.fixture(params=sorted(PATHS))
def path(request):
    """Each execution path in turn, as (name, run function)."""
    return request.param, PATHS[request.param]


def f32(values) -> np.ndarray:
    """A float32 array."""
    return np.asarray(values, dtype=np.float32)
