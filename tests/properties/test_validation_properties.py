"""Properties of model validation and preparation, stated over generated models (REQUIREMENTS D2, D3, V1-V25)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harness.targets.validation import ValidationTarget
from tests.properties.support import judge
from tests.verdicts import assert_passes

VALID = ValidationTarget(kinds=("valid",))
MUTATED_MODELS = ValidationTarget(kinds=("model",))
MUTATED_PREPARATION = ValidationTarget(kinds=("preparation",))


@given(st.data())
def test_valid_models_are_never_rejected(device, data) -> None:
    verdict, case = judge(VALID, data, device)
    assert_passes(verdict, case)


@given(st.data())
def test_mutated_models_are_rejected(device, data) -> None:
    verdict, case = judge(MUTATED_MODELS, data, device)
    assert_passes(verdict, case)


@given(st.data())
def test_invalid_preparation_arguments_are_rejected(device, data) -> None:
    verdict, case = judge(MUTATED_PREPARATION, data, device)
    assert_passes(verdict, case)
