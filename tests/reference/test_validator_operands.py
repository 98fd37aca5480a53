"""Operand-level and structural model rules, one claim per test. Expected verdicts come from the HAL's
documented rules (types.hal: scale and zeroPoint per OperandType, extension types, lifetimes)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from harness.hal import (
    DataLocation,
    ExtensionNameAndPrefix,
    Model,
    Subgraph,
    SymmPerChannelQuantParams,
)
from harness.hal import OperandLifeTime as L
from harness.hal import OperandType as T
from harness.reference import validate_model
from tests.reference.conftest import Values, add_model, operand, recount

EXT = (7 << 16) | 2  # an extension type with prefix 7


def with_spare_input(t: int, dims: list[int], **kw: Any) -> Model:
    """add_model plus an extra model input of type `t` that no operation reads, so only operand rules apply."""
    model = add_model()
    model.main.operands.append(operand(t, dims, L.SUBGRAPH_INPUT, **kw))
    model.main.input_indexes.append(len(model.main.operands) - 1)
    model.extension_name_to_prefix = [ExtensionNameAndPrefix("com.example.ext", 7)]
    return model


def rules(model: Model) -> set[str]:
    return {v.rule for v in validate_model(model)}


SCALE_CASES = [
    # (type, dims, scale, zero point, valid)
    (T.FLOAT32, [], 0.0, 0, True),
    (T.FLOAT32, [], 1.0, 0, False),
    (T.INT32, [], 0.0, 1, False),
    (T.BOOL, [], 0.1, 0, False),
    (T.TENSOR_FLOAT16, [2], 0.0, 0, True),
    (T.TENSOR_BOOL8, [2], 0.0, 3, False),
    (T.TENSOR_INT32, [2], 0.0, 0, True),
    (T.TENSOR_INT32, [2], 0.25, 0, True),  # quantized biases carry a scale
    (T.TENSOR_INT32, [2], -0.25, 0, False),
    (T.TENSOR_INT32, [2], 0.25, 1, False),
    (T.TENSOR_QUANT8_ASYMM, [2], 0.5, 0, True),
    (T.TENSOR_QUANT8_ASYMM, [2], 0.5, 255, True),
    (T.TENSOR_QUANT8_ASYMM, [2], 0.5, 256, False),
    (T.TENSOR_QUANT8_ASYMM, [2], 0.5, -1, False),
    (T.TENSOR_QUANT8_ASYMM, [2], 0.0, 0, False),
    (T.TENSOR_QUANT8_ASYMM, [2], -0.5, 0, False),
    (T.TENSOR_QUANT8_ASYMM, [2], math.nan, 0, False),
    (T.TENSOR_QUANT8_ASYMM_SIGNED, [2], 0.5, -128, True),
    (T.TENSOR_QUANT8_ASYMM_SIGNED, [2], 0.5, 127, True),
    (T.TENSOR_QUANT8_ASYMM_SIGNED, [2], 0.5, 128, False),
    (T.TENSOR_QUANT8_ASYMM_SIGNED, [2], 0.5, -129, False),
    (T.TENSOR_QUANT16_ASYMM, [2], 0.5, 65535, True),
    (T.TENSOR_QUANT16_ASYMM, [2], 0.5, 65536, False),
    (T.TENSOR_QUANT8_SYMM, [2], 0.5, 0, True),
    (T.TENSOR_QUANT8_SYMM, [2], 0.5, 1, False),
    (T.TENSOR_QUANT16_SYMM, [2], 0.5, 0, True),
    (T.TENSOR_QUANT16_SYMM, [2], 0.5, -1, False),
    (T.OEM, [], 3.0, 7, True),  # OEM types are opaque to validation
    (T.TENSOR_OEM_BYTE, [2], -3.0, -7, True),
    (EXT, [2], 0.0, 0, True),
    (EXT, [2], 0.5, 0, False),
    (EXT, [2], 0.0, 1, False),
]


@pytest.mark.parametrize(
    ("t", "dims", "scale", "zero_point", "valid"),
    SCALE_CASES,
    ids=[f"{T(c[0]).name if c[0] in T._value2member_map_ else 'EXT'}-{c[2]}-{c[3]}" for c in SCALE_CASES],
)
def test_scale_and_zero_point_follow_the_operand_type(
    t: int, dims: list[int], scale: float, zero_point: int, valid: bool
) -> None:
    found = rules(with_spare_input(t, dims, scale=scale, zero_point=zero_point))
    assert (found == set()) == valid, found
    assert found <= {"model.operand.scale", "model.operand.zero_point"}


def test_per_channel_zero_point_must_be_zero() -> None:
    params = SymmPerChannelQuantParams([0.5, 0.5], 0)
    assert rules(with_spare_input(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, [2], extra=params)) == set()
    found = rules(with_spare_input(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, [2], extra=params, zero_point=1))
    assert found == {"model.operand.zero_point"}


def test_per_channel_params_need_a_known_channel_dimension() -> None:
    params = SymmPerChannelQuantParams([], 1)
    found = rules(with_spare_input(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, [2, 0], extra=params))
    assert found == {"model.operand.channel_quant"}


def test_extension_types_need_a_declared_prefix() -> None:
    model = with_spare_input(EXT, [2])
    assert rules(model) == set()
    model.extension_name_to_prefix = []
    assert rules(model) == {"model.operand.type"}


def test_extension_operands_may_carry_extension_params_but_not_channel_params() -> None:
    assert rules(with_spare_input(EXT, [2], extra=b"\x01\x02")) == set()
    found = rules(with_spare_input(EXT, [2], extra=SymmPerChannelQuantParams([1.0, 1.0], 0)))
    assert found == {"model.operand.extra_params"}


def test_hal_types_take_no_extension_params() -> None:
    assert rules(with_spare_input(T.TENSOR_FLOAT32, [2], extra=b"\x01")) == {"model.operand.extra_params"}


@pytest.mark.parametrize("t", [T.SUBGRAPH, T.OEM, T.FLOAT16])
def test_scalar_like_types_have_no_dimensions(t: int) -> None:
    model = with_spare_input(t, [1])
    if t == T.SUBGRAPH:
        model.main.operands[-1].lifetime = L.SUBGRAPH  # a reference, not an input
        model.main.input_indexes.pop()
        model.referenced = [Subgraph()]  # an empty referenced subgraph is reported too; not the point here
    assert "model.operand.scalar_dimensions" in rules(model)


def test_a_negative_dimension_is_refused() -> None:
    assert rules(with_spare_input(T.TENSOR_FLOAT32, [2, -1])) == {"model.operand.dimension_value"}


def test_an_unknown_lifetime_is_refused() -> None:
    model = with_spare_input(T.TENSOR_FLOAT32, [2])
    model.main.operands[-1].lifetime = 7
    model.main.input_indexes.pop()
    assert rules(model) == {"model.operand.lifetime"}


def test_subgraph_type_and_lifetime_go_together() -> None:
    model = with_spare_input(T.SUBGRAPH, [])
    assert rules(model) == {"model.operand.subgraph_lifetime"}


def test_a_constant_tensor_needs_fully_specified_dimensions() -> None:
    model = add_model()
    values = Values()
    values.blob.extend(model.operand_values)
    model.main.operands.append(values.const(T.TENSOR_FLOAT32, (2,), [1.0, 2.0]))
    model.operand_values = bytes(values.blob)
    assert rules(model) == set()
    model.main.operands[-1].dimensions = [0]
    assert rules(model) == {"model.constant.dimensions"}


def test_a_constant_of_an_unknown_rank_is_refused() -> None:
    model = add_model()
    b = model.main.operands[1]
    b.lifetime, b.location, b.dimensions = L.CONSTANT_COPY, DataLocation(0, 0, 4), []
    model.main.input_indexes = [0]
    assert "model.constant.dimensions" in rules(model)


def test_io_indexes_must_name_operands_once() -> None:
    model = add_model()
    model.main.input_indexes = [0, 1, 1]
    assert rules(model) == {"model.io.duplicate"}
    model.main.input_indexes = [0, 1, 9]
    assert rules(model) == {"model.io.index"}


def test_a_subgraph_needs_operations() -> None:
    model = add_model()
    model.main.operations = []
    assert "model.subgraph.empty" in rules(recount(model))
    model = add_model()
    model.referenced = [Subgraph()]
    assert rules(model) == {"model.subgraph.empty"}


def test_extension_names_and_prefixes_are_declared_once() -> None:
    model = add_model()
    model.extension_name_to_prefix = [ExtensionNameAndPrefix("a.b", 1), ExtensionNameAndPrefix("a.c", 1)]
    assert rules(model) == {"model.extension.declaration"}
    model.extension_name_to_prefix = [ExtensionNameAndPrefix("a.b", 1), ExtensionNameAndPrefix("a.b", 2)]
    assert rules(model) == {"model.extension.declaration"}


def test_an_operand_read_twice_by_one_operation_counts_two_consumers() -> None:
    model = add_model()
    model.main.operations[0].inputs = [0, 0, 2]
    model.main.input_indexes = [0, 1]
    recount(model)
    assert model.main.operands[0].number_of_consumers == 2
    assert rules(model) == set()
    model.main.operands[0].number_of_consumers = 1
    assert rules(model) == {"model.operand.consumers"}


def test_an_operation_reading_its_own_output_reads_before_writing() -> None:
    model = add_model()
    model.main.operations[0].inputs = [3, 1, 2]
    recount(model)
    assert "model.operation.read_before_write" in rules(model)


@pytest.mark.parametrize("scale", [None, "scale", [0.5], {"scale": 0.5}])
def test_a_scale_that_is_not_a_number_is_a_bad_scale_and_nothing_else_trips_on_it(scale: object) -> None:
    # A malformed operand (D25): the HAL's scale is a float. The quantized input of ADD is read by its signature
    # checks, which must leave an operand with such a scale alone rather than fail on it.
    model = add_model(T.TENSOR_QUANT8_ASYMM, scale=0.5)
    model.main.operands[0].scale = scale  # type: ignore[assignment]
    found = validate_model(model)
    assert [(v.rule, v.v) for v in found] == [("model.operand.scale", "V4")], found
    assert "is not a number" in found[0].message
