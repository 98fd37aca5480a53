"""Each resource limit refuses a model or request past it with RESOURCE_EXHAUSTED_PERSISTENT, and quickly (D26)."""

from __future__ import annotations

import time

import pytest

from driver_under_test.validation import Limits, validate_model, validate_request
from harness.hal import DataLocation, ErrorStatus, Model, Operand, Operation, Request, RequestArgument, Subgraph
from harness.hal.memory import create_ashmem

from .builders import LT, OP, T, add_model, if_model, rejects, tensor

EXHAUSTED = ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT
LIMITS = Limits()


def refused(model: Model, limit: str, limits: Limits = LIMITS) -> None:
    rejects(lambda: validate_model(model, limits), f"limits.{limit}", EXHAUSTED)


def test_the_default_limits_are_the_documented_ones() -> None:
    assert LIMITS == Limits(
        max_operands=10_000,
        max_operations=5_000,
        max_rank=6,
        max_elements_per_operand=2**26,
        max_total_constant_bytes=1 << 30,
        max_subgraphs=64,
        max_request_args=1024,
    )


def test_a_million_operands_are_refused_quickly() -> None:
    model = add_model()
    # One operand object repeated: building the model costs nothing, validating it must not either.
    model.main.operands = [tensor([2, 2], LT.TEMPORARY_VARIABLE)] * 10**6
    started = time.perf_counter()
    refused(model, "max_operands")
    assert time.perf_counter() - started < 0.5


def test_operands_are_counted_over_all_subgraphs() -> None:
    model = if_model()  # 5 + 2 + 2 operands
    validate_model(model, Limits(max_operands=9))
    refused(model, "max_operands", Limits(max_operands=8))


def test_too_many_operations_are_refused() -> None:
    model = add_model()
    model.main.operations = [Operation(OP.ADD, [0, 1, 2], [3])] * 5_001
    refused(model, "max_operations")


def test_too_many_subgraphs_are_refused() -> None:
    model = add_model()
    model.referenced = [Subgraph()] * 64
    refused(model, "max_subgraphs")
    validate_model(if_model(), Limits(max_subgraphs=3))
    refused(if_model(), "max_subgraphs", Limits(max_subgraphs=2))


@pytest.mark.parametrize("dims", [[2**40], [2**40, 2**40], [2**13, 2**13, 2**1]])
def test_a_huge_dimension_is_refused_quickly(dims: list[int]) -> None:
    model = add_model()
    model.main.operands[0].dimensions = dims
    started = time.perf_counter()
    refused(model, "max_elements_per_operand")
    assert time.perf_counter() - started < 0.5


def test_unknown_dimensions_do_not_count_toward_the_element_limit() -> None:
    model = add_model()
    model.main.operands[3].dimensions = [0, 2**26]
    validate_model(model, LIMITS)


def test_a_rank_above_the_limit_is_refused() -> None:
    model = add_model()
    model.main.operands[0].dimensions = [1] * 7
    refused(model, "max_rank")
    model.main.operands[0].dimensions = [1] * 10**6
    refused(model, "max_rank")


def test_constants_above_the_byte_limit_are_refused() -> None:
    model = add_model()  # one 4-byte constant
    validate_model(model, Limits(max_total_constant_bytes=4))
    refused(model, "max_total_constant_bytes", Limits(max_total_constant_bytes=3))


def test_a_request_with_too_many_arguments_is_refused_quickly() -> None:
    model = add_model()
    with create_ashmem(64) as memory:
        argument = RequestArgument(location=DataLocation(0, 0, 16))
        for field, count in (("inputs", 1025), ("outputs", 10**6), ("pools", 1025)):
            request = Request(inputs=[argument] * 2, outputs=[RequestArgument(location=DataLocation(0, 32, 16))],
                              pools=[memory])  # fmt: skip
            setattr(request, field, [getattr(request, field)[0]] * count)
            started = time.perf_counter()
            rejects(lambda r=request: validate_request(model, r, limits=LIMITS), "limits.max_request_args", EXHAUSTED)
            assert time.perf_counter() - started < 0.5


def test_request_dimensions_past_the_limits_are_refused() -> None:
    model = add_model()
    model.main.operands[0].dimensions = []
    with create_ashmem(64) as memory:
        out = RequestArgument(location=DataLocation(0, 32, 16))
        b = RequestArgument(location=DataLocation(0, 16, 16))
        # Each dimension fits the HAL's uint32; their product is what exceeds the limit.
        for dims, limit in (([2**20, 2**20, 2**20], "max_elements_per_operand"), ([1] * 7, "max_rank")):
            a = RequestArgument(location=DataLocation(0, 0, 16), dimensions=dims)
            request = Request(inputs=[a, b], outputs=[out], pools=[memory])
            rejects(lambda r=request: validate_request(model, r, limits=LIMITS), f"limits.{limit}", EXHAUSTED)


def test_an_operand_list_of_another_kind_is_still_refused_by_length() -> None:
    # Limits apply before any per-operand work, whatever the operands are.
    model = Model(main=Subgraph(operands=[Operand(type=T.TENSOR_FLOAT32)] * 20_000))
    refused(model, "max_operands")
