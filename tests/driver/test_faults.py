"""The execution-layer faults planted in the prepared model: each changes exactly the behaviour it documents."""

from __future__ import annotations

import pytest

from driver_under_test import CATALOGUE, create_device
from harness.case import simple_request
from harness.hal import NO_TIMING, ErrorStatus, MeasureTiming
from tests.driver.conftest import f32, prepared
from tests.driver.models import add_model, add_then_mul_model

A = f32([[1, 2], [3, 4]])


def _sync(device, model, sizes, **kw):
    pm = prepared(device, model)
    with simple_request(model, [A, A], sizes) as rb:
        return pm.execute_synchronously(rb.request, kw.get("measure", MeasureTiming.NO), None, None)


def test_unknown_faults_are_refused_with_the_known_names() -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        create_device(faults=["no_such_fault"])


def test_faults_can_come_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("NNFUZZ_FAULTS", "timing_when_not_asked")
    assert create_device().faults.active("timing_when_not_asked")
    assert not create_device(faults=[]).faults.names


def test_every_fault_is_documented() -> None:
    for fault in CATALOGUE.values():
        assert fault.area and len(fault.description) > 20, fault


def test_timing_when_not_asked() -> None:
    clean = _sync(create_device(faults=[]), add_model(), [16])
    faulty = _sync(create_device(faults=["timing_when_not_asked"]), add_model(), [16])
    assert clean[2].time_in_driver == NO_TIMING
    assert faulty[0] == ErrorStatus.NONE and faulty[2].time_in_driver != NO_TIMING


def test_insufficient_marks_wrong_output() -> None:
    clean = _sync(create_device(faults=[]), add_then_mul_model(), [16, 8])
    faulty = _sync(create_device(faults=["insufficient_marks_wrong_output"]), add_then_mul_model(), [16, 8])
    assert [s.is_sufficient for s in clean[1]] == [True, False]
    assert faulty[0] == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
    assert [s.is_sufficient for s in faulty[1]] == [False, True]


def test_unknown_shape_not_reported() -> None:
    model = add_model(out_dims=[0, 0])
    clean = _sync(create_device(faults=[]), model, [16])
    faulty = _sync(create_device(faults=["unknown_shape_not_reported"]), model, [16])
    assert clean[1][0].dimensions == [2, 2]
    assert faulty[0] == ErrorStatus.NONE and faulty[1][0].dimensions == [0, 0]
