"""Every model of the public conformance vectors is valid, so the driver's validation must accept each one."""

from __future__ import annotations

import pytest

from driver_under_test.errors import DriverError
from driver_under_test.validation import Limits, validate_model
from harness.case import ConformanceDataMissing, load_vectors

pytestmark = pytest.mark.slow

# The vectors' own count (shared/conformance/README.md): 310 + 364 + 3482.
EXPECTED_CASES = 4156


def test_every_conformance_model_validates() -> None:
    try:
        cases = list(load_vectors())
    except ConformanceDataMissing as e:
        pytest.skip(str(e))
    rejected = []
    for case in cases:
        try:
            validate_model(case.model, Limits())
        except DriverError as e:
            rejected.append(f"{case.name}: {e}")
    assert len(cases) == EXPECTED_CASES
    assert rejected == []
