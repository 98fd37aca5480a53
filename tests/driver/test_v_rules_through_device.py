"""Every V rule through the device: the reference validator's mutation table (one row per rule, each a valid
subject broken by one mutation) driven into getSupportedOperations, prepareModel and every execution path."""

from __future__ import annotations

import contextlib
import gc
import sys
import weakref

import pytest

from harness.hal import ErrorStatus
from harness.paths import PATHS, ExecutionArgs
from tests.driver.conftest import prepare, prepared
from tests.driver.test_execution_contract import assert_failed_cleanly
from tests.reference.test_validator import ROWS, Row

INVALID = ErrorStatus.INVALID_ARGUMENT


def _rows(*kinds: str) -> list[Row]:
    return [r for r in ROWS if r.kind in kinds]


@pytest.mark.parametrize("row", _rows("model"), ids=lambda r: r.id)
def test_invalid_models_are_rejected_by_the_device(device, row: Row) -> None:
    base = row.base()
    assert device.get_supported_operations(base)[0] == ErrorStatus.NONE
    broken = row.mutation(base)
    assert device.get_supported_operations(broken) == (INVALID, [])
    assert prepare(device, broken) == (INVALID, INVALID, None)


@pytest.mark.parametrize("row", _rows("preparation"), ids=lambda r: r.id)
def test_invalid_preparation_arguments_are_rejected(device, row: Row) -> None:
    from tests.driver.models import add_model

    preference, priority = row.mutation(row.base())
    assert prepare(device, add_model(), preference=preference, priority=priority) == (INVALID, INVALID, None)


# A fenced-only rule (V37) leaves the request valid on the other paths, so it is paired with the fenced path only.
REQUEST_CASES = [
    (row, name)
    for row in _rows("request", "fenced")
    for name in sorted(PATHS)
    if row.kind == "request" or name == "fenced"
]


@pytest.mark.parametrize(("row", "path_name"), REQUEST_CASES, ids=[f"{r.id}-{p}" for r, p in REQUEST_CASES])
def test_invalid_requests_are_rejected_on_every_path(device, row: Row, path_name: str) -> None:
    model, request = row.base()
    pm = prepared(device, model)
    broken_model, broken_request = row.mutation((model, request))
    assert broken_model is model, "request rows mutate only the request"
    assert_failed_cleanly(PATHS[path_name](pm, broken_request, ExecutionArgs()), INVALID)


@contextlib.contextmanager
def _no_cycle_collection():
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@pytest.mark.parametrize("row", _rows("model"), ids=lambda r: r.id)
def test_a_rejected_model_is_freed_as_soon_as_it_is_dropped(device, row: Row) -> None:
    # No reference cycle through the rejection (an error kept in a local of a frame its traceback holds): a fuzz
    # loop then frees every case at once, with no work left to the cycle collector.
    broken = row.mutation(row.base())
    with _no_cycle_collection():
        assert device.get_supported_operations(broken) == (INVALID, [])
        assert prepare(device, broken) == (INVALID, INVALID, None)
        freed = weakref.ref(broken)
        del broken
        assert freed() is None


@pytest.mark.parametrize("row", _rows("request"), ids=lambda r: r.id)
def test_a_rejected_request_is_not_held_by_the_driver(device, row: Row) -> None:
    model, request = row.base()
    pm = prepared(device, model)
    _, broken = row.mutation((model, request))
    with _no_cycle_collection():
        held = sys.getrefcount(broken)
        assert_failed_cleanly(PATHS["async"](pm, broken, ExecutionArgs()), INVALID)
        assert sys.getrefcount(broken) == held
