"""Properties of executions, stated over generated models and requests (REQUIREMENTS D5, D7, D8, D9, O2)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harness.gen.model import ModelConfig
from harness.gen.requests import RequestConfig
from harness.targets.execution import ExecutionTarget
from tests.properties.support import judge
from tests.verdicts import assert_passes

MATCHING = ExecutionTarget()
# Many outputs of unknown dimensions and many too-small buffers: the shape conventions are exercised on most cases.
CONVENTIONS = ExecutionTarget(
    model_config=ModelConfig(unknown_dims_probability=0.5, extra_output_probability=0.4),
    request_config=RequestConfig(too_small_probability=0.3, output_dims_probability=0.2),
)


@given(st.data())
def test_valid_models_match_reference(device, data) -> None:
    verdict, case = judge(MATCHING, data, device)
    assert_passes(verdict, case)


@given(st.data())
def test_output_shapes_and_timing_follow_the_conventions(device, data) -> None:
    verdict, case = judge(CONVENTIONS, data, device)
    assert_passes(verdict, case)
