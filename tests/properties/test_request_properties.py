"""Properties of request validation on every execution path (REQUIREMENTS V30-V37, D5, D14)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harness.gen.model import ModelConfig
from harness.targets.request import RequestTarget
from tests.properties.support import judge
from tests.verdicts import assert_passes

EVERY_PATH = RequestTarget(kinds=("request",))
FENCED_ONLY = RequestTarget(model_config=ModelConfig(unknown_dims_probability=0.6), kinds=("fenced_request",))


@given(st.data())
def test_invalid_requests_are_rejected_on_every_path(device, data) -> None:
    verdict, case = judge(EVERY_PATH, data, device)
    assert_passes(verdict, case)


@given(st.data())
def test_fenced_executions_reject_unspecified_outputs_and_others_run_them(device, data) -> None:
    verdict, case = judge(FENCED_ONLY, data, device)
    assert_passes(verdict, case)
