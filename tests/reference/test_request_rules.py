"""Request rules beyond the V table: driver buffers, what does and does not overlap, lengths, dimensions."""

from __future__ import annotations

import pytest

from harness.hal import DataLocation, DriverBufferToken, Model, Operation, Request, RequestArgument
from harness.hal import OperandLifeTime as L
from harness.hal import OperandType as T
from harness.hal import OperationType as Op
from harness.hal.memory import create_ashmem
from harness.reference import validate_fenced_request, validate_model, validate_request
from tests.reference.conftest import add_model, add_request, operand, pool_model, recount


def rules(model: Model, request: Request, *, fenced: bool = False) -> set[str]:
    assert validate_model(model) == []
    return {v.rule for v in (validate_fenced_request if fenced else validate_request)(model, request)}


def arg(pool: int, offset: int, length: int, dims: list[int] | None = None) -> RequestArgument:
    return RequestArgument(location=DataLocation(pool, offset, length), dimensions=dims or [])


def test_the_base_request_is_valid_on_every_path() -> None:
    model, request = add_request()
    assert rules(model, request) == set()
    assert rules(model, request, fenced=True) == set()


def test_driver_buffer_arguments_use_an_empty_location() -> None:
    model, request = add_request()
    request.pools.append(DriverBufferToken(5))
    request.inputs[0] = arg(1, 0, 0)
    assert rules(model, request) == set()
    request.inputs[0] = arg(1, 0, 8)
    assert rules(model, request) == {"request.pool.driver_buffer_location"}


def test_a_driver_buffer_token_must_be_positive() -> None:
    model, request = add_request()
    request.pools.append(DriverBufferToken(0))
    assert rules(model, request) == {"request.pool.token"}


def test_one_driver_buffer_may_feed_two_inputs_but_not_an_input_and_an_output() -> None:
    model, request = add_request()
    request.pools += [DriverBufferToken(5), DriverBufferToken(5)]
    request.inputs = [arg(1, 0, 0), arg(2, 0, 0)]
    assert rules(model, request) == set()
    request.outputs = [arg(1, 0, 0)]
    assert rules(model, request) == {"request.output.overlap"}


def test_inputs_may_share_bytes() -> None:
    model, request = add_request()
    request.inputs[1] = arg(0, 0, 8)
    assert rules(model, request) == set()


def test_an_output_touching_an_input_does_not_overlap_it() -> None:
    model, request = add_request()
    request.outputs = [arg(0, 16, 8)]
    request.inputs[1] = arg(0, 8, 8)  # [8, 16) and [16, 24) share no byte
    assert rules(model, request) == set()


def test_two_outputs_overlapping_are_refused() -> None:
    model = add_model()
    model.main.operands.append(operand(T.TENSOR_FLOAT32, (2,), L.SUBGRAPH_OUTPUT))
    model.main.operations.append(Operation(Op.ADD, [0, 1, 2], [4]))  # a second output, computed like the first
    model.main.output_indexes.append(4)
    _, request = add_request(recount(model))
    request.pools = [create_ashmem(40)]
    request.outputs = [arg(0, 16, 8), arg(0, 32, 8)]
    assert rules(model, request) == set()
    request.outputs[1] = arg(0, 20, 8)
    assert rules(model, request) == {"request.output.overlap"}


def test_the_same_memory_in_two_pool_slots_is_one_memory() -> None:
    model, request = add_request()
    request.pools.append(request.pools[0])
    request.outputs = [arg(1, 8, 8)]  # pool 1 is pool 0: [8, 16) is input b
    assert rules(model, request) == {"request.output.overlap"}


def test_an_output_must_not_overlap_a_constant_of_the_model_in_the_same_memory() -> None:
    model = pool_model()  # b lives in model.pools[0] at [0, 8)
    request = Request(inputs=[arg(0, 0, 8)], outputs=[arg(1, 0, 8)], pools=[create_ashmem(8), model.pools[0]])
    assert rules(model, request) == {"request.output.overlaps_constant"}
    request.pools[1] = create_ashmem(8)  # another memory of the same size
    assert rules(model, request) == set()


def test_a_short_output_buffer_is_left_to_execution() -> None:
    # OUTPUT_INSUFFICIENT_SIZE is an execution result, not a validation error.
    model, request = add_request()
    request.outputs = [arg(0, 16, 4)]
    assert rules(model, request) == set()


@pytest.mark.parametrize("length", [4, 12, 0])
def test_an_input_length_must_be_its_byte_size(length: int) -> None:
    model, request = add_request()
    request.pools = [create_ashmem(40)]
    request.inputs[0] = arg(0, 24, length, [2])
    assert rules(model, request) == {"request.input.length"}


def test_request_dimensions_complete_unknown_model_dimensions() -> None:
    model, request = add_request(add_model(a_dims=()))  # unknown rank
    assert rules(model, request) == set()
    request.inputs[0].dimensions = [0]
    assert rules(model, request) == {"request.dimensions.unknown_input"}
    request.inputs[0].dimensions = []
    assert rules(model, request) == {"request.dimensions.unknown_input"}


def test_an_input_length_is_checked_against_the_merged_dimensions() -> None:
    model, request = add_request(add_model(a_dims=(0,)))
    request.pools = [create_ashmem(40)]
    request.inputs[0] = arg(0, 24, 16, [4])  # 4 floats = 16 bytes: the request fills the unknown dimension
    assert rules(model, request) == set()
    request.inputs[0] = arg(0, 24, 8, [4])
    assert rules(model, request) == {"request.input.length"}


def test_unknown_output_dimensions_are_valid_except_in_fenced_executions() -> None:
    model, request = add_request(add_model(out_dims=(0,)))
    request.outputs = [arg(0, 16, 8)]
    assert rules(model, request) == set()
    assert rules(model, request, fenced=True) == {"request.fenced.unspecified_output"}
    request.outputs = [arg(0, 16, 8, [2])]
    assert rules(model, request, fenced=True) == set()


def test_an_omitted_argument_is_valid_with_an_empty_location() -> None:
    model, request = add_request()
    request.inputs[1] = RequestArgument(has_no_value=True)
    assert rules(model, request) == set()


def test_scalar_arguments_ignore_request_dimensions() -> None:
    model = add_model()
    act = model.main.operands[2]
    act.lifetime, act.location = L.SUBGRAPH_INPUT, DataLocation()
    model.main.input_indexes.append(2)
    model.operand_values = b""
    _, request = add_request(model)
    request.pools = [create_ashmem(28)]
    request.inputs.append(arg(0, 24, 4, [3]))
    assert rules(model, request) == set()


@pytest.mark.parametrize("location", [(0, -4, 8), (0, 0, -1), (0, 17, 8)])
def test_locations_outside_the_pool_are_refused(location: tuple[int, int, int]) -> None:
    model, request = add_request()
    request.outputs = [arg(*location)]
    assert "request.pool.bounds" in rules(model, request)
