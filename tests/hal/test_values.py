"""Reading a model's constants where their locations point (harness.hal.values)."""

from __future__ import annotations

import struct

import pytest

from harness.hal import DataLocation, Model, Operand, OperandLifeTime, OperandType, Subgraph, create_ashmem
from harness.hal.values import constant_value

T = OperandType


def _subgraph_with(operand: Operand) -> Subgraph:
    return Subgraph(operands=[operand], input_indexes=[], output_indexes=[])


def test_constant_value_reads_operand_values():
    operand = Operand(
        type=T.TENSOR_INT32,
        dimensions=[2],
        lifetime=OperandLifeTime.CONSTANT_COPY,
        location=DataLocation(0, 4, 8),
    )
    model = Model(main=_subgraph_with(operand), operand_values=b"\xee" * 4 + struct.pack("<2i", 7, -8))
    assert constant_value(model, model.main, 0).tolist() == [7, -8]


def test_constant_value_reads_a_pool():
    pool = create_ashmem(64)
    pool.write(10, struct.pack("<f", 1.5))
    operand = Operand(type=T.FLOAT32, lifetime=OperandLifeTime.CONSTANT_REFERENCE, location=DataLocation(0, 10, 4))
    model = Model(main=_subgraph_with(operand), pools=[pool])
    assert float(constant_value(model, model.main, 0)) == 1.5


@pytest.mark.parametrize(
    ("lifetime", "location"),
    [
        (OperandLifeTime.CONSTANT_COPY, DataLocation(0, 4, 4)),  # past the end of operandValues
        (OperandLifeTime.CONSTANT_COPY, DataLocation(0, 0, 2)),  # length is not the operand's size
        (OperandLifeTime.CONSTANT_REFERENCE, DataLocation(1, 0, 4)),  # no such pool
        (OperandLifeTime.TEMPORARY_VARIABLE, DataLocation(0, 0, 4)),  # not a constant
    ],
)
def test_constant_value_is_none_when_the_location_points_nowhere(lifetime, location):
    operand = Operand(type=T.INT32, lifetime=lifetime, location=location)
    model = Model(main=_subgraph_with(operand), operand_values=b"\x01\x00\x00\x00")
    assert constant_value(model, model.main, 0) is None
    assert constant_value(model, model.main, 5) is None
