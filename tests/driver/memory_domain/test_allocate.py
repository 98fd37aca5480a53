"""D15: IDevice::allocate accepts well-formed roles and refuses every malformed allocation with no buffer, token 0.

The failure table follows the public conformance suite's allocation tests (empty roles, missing or foreign
prepared models, model and io indexes out of range, bad frequencies, repeated roles, operands that disagree on
type, scale, zero point or dimensions, and descriptors that conflict with the roles).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from driver_under_test import create_device
from harness.hal import (
    BufferDesc,
    BufferRole,
    ErrorStatus,
    MeasureTiming,
    OperandType,
    OutputShape,
    PreparedModel,
    Request,
    Timing,
)
from harness.hal.interfaces import Buffer
from tests.driver.conftest import prepared
from tests.driver.memory_domain.helpers import F32, allocate, allocated, copy_in, typed_add_model
from tests.driver.models import add_model

Q8 = OperandType.TENSOR_QUANT8_ASYMM
F16 = OperandType.TENSOR_FLOAT16


class _NotThisDriversModel(PreparedModel):
    """A prepared model no device of this driver made."""

    def execute(self, request: Request, measure, deadline, loop_timeout_duration, callback) -> ErrorStatus:
        return ErrorStatus.GENERAL_FAILURE

    def execute_synchronously(self, request: Request, measure: MeasureTiming, deadline, loop_timeout_duration):
        return ErrorStatus.GENERAL_FAILURE, list[OutputShape](), Timing()

    def execute_fenced(self, request, wait_for, measure, deadline, loop_timeout_duration, timeout_after_fence):
        return ErrorStatus.GENERAL_FAILURE, None, None

    def configure_execution_burst(self, callback, request_channel, result_channel):
        return ErrorStatus.GENERAL_FAILURE, None


def assert_refused(result, status: ErrorStatus = ErrorStatus.INVALID_ARGUMENT) -> None:
    """The HAL's convention for a failed allocation: that status, no buffer, token 0."""
    assert result == (status, None, 0)


def test_a_valid_allocation_returns_a_buffer_and_a_positive_token(device) -> None:
    pm = prepared(device, add_model())
    status, buffer, token = allocate(device, [pm], inputs=[(0, 0)], outputs=[(0, 0)])
    assert status == ErrorStatus.NONE and isinstance(buffer, Buffer) and token > 0
    _, other_token = allocated(device, [pm], inputs=[(0, 1)])
    assert other_token not in (0, token)


def test_one_prepared_model_listed_twice_may_serve_distinct_roles(device) -> None:
    pm = prepared(device, add_model())
    allocated(device, [pm, pm], inputs=[(0, 0), (1, 1)])


def test_the_lowest_and_highest_frequencies_are_accepted(device) -> None:
    pm = prepared(device, add_model())
    for frequency in (1e-6, 1.0):
        allocated(device, [pm], inputs=[(0, 0)], frequency=frequency)


# --- roles and prepared models -------------------------------------------------------------------------------


def test_no_roles_at_all_is_refused(device) -> None:
    assert_refused(allocate(device, []))
    assert_refused(allocate(device, [prepared(device, add_model())]))


@pytest.mark.parametrize("side", ["inputs", "outputs"])
def test_a_missing_prepared_model_is_refused(device, side: str) -> None:
    assert_refused(allocate(device, [None], **{side: [(0, 0)]}))


@pytest.mark.parametrize("side", ["inputs", "outputs"])
def test_a_prepared_model_of_another_driver_is_refused(device, side: str) -> None:
    assert_refused(allocate(device, [_NotThisDriversModel()], **{side: [(0, 0)]}))


@pytest.mark.parametrize("side", ["inputs", "outputs"])
def test_a_prepared_model_of_another_device_instance_is_refused(device, side: str) -> None:
    foreign = prepared(create_device(faults=[]), add_model())
    assert_refused(allocate(device, [foreign], **{side: [(0, 0)]}))
    # Even next to one of this device's own prepared models.
    own = prepared(device, add_model())
    assert_refused(allocate(device, [own, foreign], **{side: [(0, 0)]}))


@pytest.mark.parametrize("side", ["inputs", "outputs"])
def test_a_model_index_out_of_range_is_refused(device, side: str) -> None:
    pm = prepared(device, add_model())
    assert_refused(allocate(device, [pm], **{side: [(1, 0)]}))
    assert_refused(allocate(device, [pm], **{side: [(-1, 0)]}))


@pytest.mark.parametrize(("side", "io_index"), [("inputs", 2), ("outputs", 1), ("inputs", -1)])
def test_an_io_index_out_of_range_is_refused(device, side: str, io_index: int) -> None:
    pm = prepared(device, add_model())  # two inputs, one output
    assert_refused(allocate(device, [pm], **{side: [(0, io_index)]}))


@pytest.mark.parametrize("frequency", [10.0, 0.0, -0.5, 1.0000001, math.nan, math.inf])
@pytest.mark.parametrize("side", ["inputs", "outputs"])
def test_a_frequency_outside_zero_one_is_refused(device, side: str, frequency: float) -> None:
    pm = prepared(device, add_model())
    assert_refused(allocate(device, [pm], frequency=frequency, **{side: [(0, 0)]}))


@pytest.mark.parametrize("side", ["inputs", "outputs"])
def test_the_same_role_twice_is_refused(device, side: str) -> None:
    pm = prepared(device, add_model())
    assert_refused(allocate(device, [pm], **{side: [(0, 0), (0, 0)]}))
    # Different model indexes naming the same prepared model are still the same role.
    assert_refused(allocate(device, [pm, pm], **{side: [(0, 0), (1, 0)]}))


def test_input_and_output_with_the_same_index_are_distinct_roles(device) -> None:
    pm = prepared(device, add_model())
    allocated(device, [pm], inputs=[(0, 0)], outputs=[(0, 0)])


def test_malformed_arguments_are_refused(device) -> None:
    pm = prepared(device, add_model())
    assert_refused(device.allocate([2, 2], [pm], [BufferRole(0, 0)], []))  # type: ignore[arg-type]
    assert_refused(device.allocate(BufferDesc(), [pm], [(0, 0, 1.0)], []))  # type: ignore[list-item]
    assert_refused(device.allocate(BufferDesc(), [pm], [BufferRole(0, "0")], []))  # type: ignore[arg-type]
    assert_refused(device.allocate(BufferDesc([-1, 2]), [pm], [BufferRole(0, 0)], []))
    assert_refused(device.allocate(BufferDesc(), pm, [BufferRole(0, 0)], []))  # type: ignore[arg-type]


# --- operands that disagree -----------------------------------------------------------------------------------

# name -> (first model, conflicting model); every pair is valid on its own and differs in one respect.
CONFLICTS: dict[str, tuple[Callable, Callable]] = {
    "type": (lambda: typed_add_model([2, 2]), lambda: typed_add_model([2, 2], F16)),
    "scale": (lambda: typed_add_model([2, 2], Q8, 0.5), lambda: typed_add_model([2, 2], Q8, 1.0)),
    "zero_point": (lambda: typed_add_model([2, 2], Q8, 0.5, 0), lambda: typed_add_model([2, 2], Q8, 0.5, 10)),
    "rank": (lambda: typed_add_model([2, 2]), lambda: typed_add_model([2])),
    "dimensions": (lambda: typed_add_model([2, 2]), lambda: typed_add_model([4, 2])),
}


@pytest.mark.parametrize(
    "roles",
    [
        {"inputs": [(0, 0), (1, 0)]},
        {"inputs": [(0, 0)], "outputs": [(1, 0)]},
        {"outputs": [(0, 0), (1, 0)]},
    ],
    ids=["in-in", "in-out", "out-out"],
)
@pytest.mark.parametrize("conflict", sorted(CONFLICTS))
def test_role_operands_that_disagree_are_refused(device, conflict: str, roles: dict) -> None:
    first, second = (prepared(device, build()) for build in CONFLICTS[conflict])
    assert_refused(allocate(device, [first, second], **roles))
    # The same roles on two copies of the first model are fine.
    allocated(device, [first, prepared(device, CONFLICTS[conflict][0]())], **roles)


@pytest.mark.parametrize("bad", [[2], [2, 2, 1], [4, 2], [2, 3]])
@pytest.mark.parametrize("side", ["inputs", "outputs"])
def test_a_descriptor_that_conflicts_with_the_roles_is_refused(device, side: str, bad: list[int]) -> None:
    pm = prepared(device, add_model())
    assert_refused(allocate(device, [pm], dims=bad, **{side: [(0, 0)]}))
    allocated(device, [pm], dims=[2, 2], **{side: [(0, 0)]})
    allocated(device, [pm], dims=[0, 2], **{side: [(0, 0)]})


def test_descriptor_dimensions_for_a_scalar_role_are_refused(device) -> None:
    pm = prepared(device, typed_add_model([2, 2], activation_input=True))
    assert_refused(allocate(device, [pm], inputs=[(0, 2)], dims=[1]))
    allocated(device, [pm], inputs=[(0, 2)])


# --- unknown sizes and limits ----------------------------------------------------------------------------------


def test_unknown_dimensions_are_supported(device) -> None:
    pm = prepared(device, add_model(dims=[0, 2], out_dims=[0, 0]))
    allocated(device, [pm], inputs=[(0, 0)])
    allocated(device, [pm], outputs=[(0, 0)])


def test_descriptor_and_roles_merge_into_one_shape(device) -> None:
    pm = prepared(device, add_model(dims=[0, 2], out_dims=[0, 0]))
    buffer, _ = allocated(device, [pm], inputs=[(0, 0)], outputs=[(0, 0)], dims=[3, 0])
    # [0, 2] (input), [0, 0] (output) and [3, 0] (descriptor) fix [3, 2]: copyFrom needs no dimensions.
    assert copy_in(buffer, np.zeros((3, 2), np.float32), dims=[]) == ErrorStatus.NONE
    assert copy_in(buffer, np.zeros((4, 2), np.float32), dims=[]) == ErrorStatus.INVALID_ARGUMENT


def test_a_buffer_above_the_memory_limit_is_unsupported(device) -> None:
    pm = prepared(device, add_model(dims=[0, 0], out_dims=[0, 0]))
    # 65536 x 65536 float32 is 16 GiB: refused as unsupported, without reserving anything.
    assert_refused(allocate(device, [pm], inputs=[(0, 0)], dims=[65536, 65536]), ErrorStatus.GENERAL_FAILURE)
    # Only the known part counts at allocation: 65536 x ? float32 may still fit.
    allocated(device, [pm], inputs=[(0, 0)], dims=[65536, 0])


def test_allocation_works_for_every_tensor_type_the_roles_share(device) -> None:
    for type_, scale in ((F32, 0.0), (F16, 0.0), (Q8, 0.5)):
        pm = prepared(device, typed_add_model([2, 2], type_, scale))
        allocated(device, [pm], inputs=[(0, 0), (0, 1)], outputs=[(0, 0)])
