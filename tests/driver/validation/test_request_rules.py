"""One test per request rule of the validation catalogue (V30-V37, D14): a valid request, then one broken rule."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from driver_under_test.validation import Limits, validate_model, validate_request
from harness.hal import DataLocation, DriverBufferToken, Model, Request, RequestArgument
from harness.hal.memory import Memory, create_ashmem

from .builders import (
    CONV_FILTER_BYTES,
    CONV_POOL_FILTER_OFFSET,
    add_model,
    conv_model,
    rejects,
    two_output_model,
)

LIMITS = Limits()
TENSOR_BYTES = 16  # a TENSOR_FLOAT32 [2, 2]


@pytest.fixture
def memory() -> Iterator[Memory]:
    m = create_ashmem(64)
    yield m
    m.close()


def arg(offset: int, length: int = TENSOR_BYTES, pool: int = 0, dims: list[int] | None = None) -> RequestArgument:
    return RequestArgument(location=DataLocation(pool, offset, length), dimensions=list(dims or []))


def add_request(memory: Memory) -> Request:
    """a at [0:16], b at [16:32], out at [32:48] of one pool."""
    return Request(inputs=[arg(0), arg(16)], outputs=[arg(32)], pools=[memory])


def valid(model: Model, request: Request, **kw: object) -> list[list[int]]:
    validate_model(model, LIMITS)
    return validate_request(model, request, limits=LIMITS, **kw)  # type: ignore[arg-type]


def check(model: Model, request: Request, rule: str, **kw: object) -> None:
    rejects(lambda: validate_request(model, request, limits=LIMITS, **kw), rule)  # type: ignore[arg-type]


def test_a_valid_request_returns_the_input_dimensions(memory: Memory) -> None:
    assert valid(add_model(), add_request(memory)) == [[2, 2], [2, 2]]


def test_request_dimensions_complete_unknown_model_dimensions(memory: Memory) -> None:
    model = add_model()
    model.main.operands[0].dimensions = [0, 2]
    model.main.operands[1].dimensions = []
    request = add_request(memory)
    request.inputs[0].dimensions = [2, 2]
    request.inputs[1].dimensions = [2, 2]
    assert valid(model, request) == [[2, 2], [2, 2]]


@pytest.mark.parametrize("side", ["inputs", "outputs"])
def test_v30_a_removed_or_added_argument_is_rejected(memory: Memory, side: str) -> None:
    model, request = add_model(), add_request(memory)
    valid(model, request)
    getattr(request, side).pop()
    check(model, request, "V30.argument_count")
    getattr(request, side).extend([arg(0), arg(16)])
    check(model, request, "V30.argument_count")


@pytest.mark.parametrize(
    "location",
    [DataLocation(0, 56, 16), DataLocation(0, 0, 65), DataLocation(0, 2**32 - 1, 16), DataLocation(0, -16, 16)],
)
def test_v31_a_location_outside_the_pool_is_rejected(memory: Memory, location: DataLocation) -> None:
    model, request = add_model(), add_request(memory)
    valid(model, request)
    request.outputs[0].location = location
    check(model, request, "V31.location_out_of_pool")


def test_v31_an_input_whose_length_is_not_its_size_is_rejected(memory: Memory) -> None:
    model, request = add_model(), add_request(memory)
    valid(model, request)
    request.inputs[1].location.length = 12
    check(model, request, "V31.input_length")


def test_v31_an_output_buffer_may_be_larger_or_smaller_than_the_output(memory: Memory) -> None:
    # Too small is OUTPUT_INSUFFICIENT_SIZE at execution, not an invalid request.
    model, request = add_model(), add_request(memory)
    request.outputs[0].location.length = 8
    valid(model, request)
    request.outputs[0].location.length = 32
    valid(model, request)


def test_v31_a_driver_buffer_argument_with_an_offset_is_rejected(memory: Memory) -> None:
    model, request = add_model(), add_request(memory)
    request.pools.append(DriverBufferToken(7))
    request.outputs[0] = arg(0, 0, pool=1)
    valid(model, request, known_tokens={7})
    request.outputs[0] = arg(4, 0, pool=1)
    check(model, request, "V31.driver_buffer_location", known_tokens={7})


@pytest.mark.parametrize("dims", [[3, 2], [2, 2, 1], [4]])
def test_v32_dimensions_that_conflict_with_the_model_are_rejected(memory: Memory, dims: list[int]) -> None:
    model, request = add_model(), add_request(memory)
    request.inputs[0].dimensions = [2, 2]
    valid(model, request)
    request.inputs[0].dimensions = dims
    check(model, request, "V32.dimensions_conflict")


def test_v32_dimensions_for_a_scalar_input_are_rejected(memory: Memory) -> None:
    model = add_model()
    # The activation becomes a model input.
    activation = model.main.operands[2]
    activation.lifetime, activation.location = 1, DataLocation()
    model.main.input_indexes.append(2)
    request = add_request(memory)
    request.inputs.append(arg(48, 4))
    valid(model, request)
    request.inputs[2].dimensions = [1]
    check(model, request, "V32.dimensions_conflict")


def test_v33_an_input_left_with_unknown_dimensions_is_rejected(memory: Memory) -> None:
    model, request = add_model(), add_request(memory)
    model.main.operands[1].dimensions = [2, 0]
    request.inputs[1].dimensions = [2, 2]
    valid(model, request)
    request.inputs[1].dimensions = [2, 0]
    check(model, request, "V33.input_dimensions_unspecified")
    request.inputs[1].dimensions = []
    check(model, request, "V33.input_dimensions_unspecified")


def test_v34_an_output_overlapping_an_input_is_rejected(memory: Memory) -> None:
    model, request = add_model(), add_request(memory)
    valid(model, request)
    request.outputs[0].location = DataLocation(0, 24, 16)  # [24:40] overlaps input b at [16:32]
    check(model, request, "V34.outputs_overlap")


def test_v34_inputs_may_share_bytes(memory: Memory) -> None:
    model, request = add_model(), add_request(memory)
    request.inputs[1].location = DataLocation(0, 0, TENSOR_BYTES)
    valid(model, request)


def test_v34_outputs_overlapping_each_other_are_rejected(memory: Memory) -> None:
    model = two_output_model()
    request = Request(inputs=[arg(0), arg(16)], outputs=[arg(32), arg(48)], pools=[memory])
    valid(model, request)
    request.outputs[1].location = DataLocation(0, 40, 16)
    check(model, request, "V34.outputs_overlap")


def test_v34_outputs_in_distinct_memories_at_the_same_offsets_do_not_overlap(memory: Memory) -> None:
    model = two_output_model()
    with create_ashmem(64) as other:
        request = Request(inputs=[arg(0), arg(16)], outputs=[arg(32), arg(32, pool=1)], pools=[memory, other])
        valid(model, request)
        # The same memory object listed twice is still one memory.
        request.pools[1] = memory
        check(model, request, "V34.outputs_overlap")


def test_d14_an_output_overlapping_a_reference_constant_is_rejected() -> None:
    with create_ashmem(64) as pool, create_ashmem(36) as inputs_memory:
        model = conv_model(pool)  # the filter is pool[8:24]
        # The output goes to the model's own pool, the input to another memory.
        request = Request(inputs=[arg(0, 36, pool=1)], outputs=[arg(32, 16, pool=0)], pools=[pool, inputs_memory])
        valid(model, request)
        end = CONV_POOL_FILTER_OFFSET + CONV_FILTER_BYTES
        request.outputs[0].location = DataLocation(0, end - 4, 16)
        check(model, request, "V34.outputs_overlap")


def test_v34_one_driver_buffer_as_input_and_output_is_rejected(memory: Memory) -> None:
    model, request = add_model(), add_request(memory)
    request.pools += [DriverBufferToken(5), DriverBufferToken(5)]
    request.inputs[0] = arg(0, 0, pool=1)
    request.outputs[0] = arg(0, 0, pool=2)
    check(model, request, "V34.driver_buffer_aliasing", known_tokens={5})
    request.inputs[1] = arg(0, 0, pool=2)  # two inputs may share a buffer
    request.outputs[0] = arg(32)
    valid(model, request, known_tokens={5})


def test_v35_a_pool_index_out_of_range_is_rejected(memory: Memory) -> None:
    model, request = add_model(), add_request(memory)
    valid(model, request)
    request.inputs[0].location.pool_index = 1
    check(model, request, "V35.pool_index")


def test_v35_an_unknown_driver_buffer_token_is_rejected(memory: Memory) -> None:
    model, request = add_model(), add_request(memory)
    request.pools.append(DriverBufferToken(9))
    check(model, request, "V35.unknown_buffer_token", known_tokens={7})
    check(model, request, "V35.unknown_buffer_token")


def test_v35_a_pool_that_is_neither_memory_nor_token_is_rejected(memory: Memory) -> None:
    model, request = add_model(), add_request(memory)
    request.pools.append("not a pool")  # type: ignore[arg-type]
    check(model, request, "V35.pool_kind")


@pytest.mark.parametrize(
    "argument",
    [
        RequestArgument(has_no_value=True, location=DataLocation(0, 0, 16)),
        RequestArgument(has_no_value=True, location=DataLocation(0, 4, 0)),
        RequestArgument(has_no_value=True, dimensions=[2, 2]),
    ],
)
def test_v36_an_argument_without_value_but_with_a_location_or_dimensions_is_rejected(
    memory: Memory, argument: RequestArgument
) -> None:
    model, request = add_model(), add_request(memory)
    request.outputs[0] = RequestArgument(has_no_value=True)
    valid(model, request)
    request.outputs[0] = argument
    check(model, request, "V36.no_value_with_location")


def test_v37_a_fenced_execution_with_an_unspecified_output_is_rejected(memory: Memory) -> None:
    model, request = add_model(), add_request(memory)
    model.main.operands[3].dimensions = [0, 2]
    valid(model, request)  # fine when not fenced: the driver reports the actual shape
    check(model, request, "V37.fenced_output_unspecified", fenced=True)
    request.outputs[0].dimensions = [2, 2]
    valid(model, request, fenced=True)


def test_malformed_requests_are_rejected_not_crashed(memory: Memory) -> None:
    model, request = add_model(), add_request(memory)
    request.inputs[0] = "junk"  # type: ignore[call-overload]
    check(model, request, "request.malformed")
    rejects(lambda: validate_request(model, None, limits=LIMITS), "request.malformed")  # type: ignore[arg-type]
