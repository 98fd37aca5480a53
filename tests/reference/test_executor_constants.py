"""The executor's direct decoding of plain constants gives what harness.case.constant_value gives, and leaves every
other constant (malformed locations, unknown sizes, scalars with dimensions) to it."""

from __future__ import annotations

import numpy as np
import pytest

from harness.case import close_model_pools, model_from_json
from harness.gen.model import generate_model
from harness.gen.sources import RandomSource
from harness.hal import DataLocation, Model, Operand, Subgraph
from harness.hal import OperandLifeTime as L
from harness.hal import OperandType as T
from harness.hal.memory import create_ashmem
from harness.hal.values import constant_value
from harness.reference.executor import _plain_constant


def _same_array(a: np.ndarray, b: np.ndarray) -> None:
    assert (a.dtype, a.shape, a.tobytes()) == (b.dtype, b.shape, b.tobytes())
    assert a.flags.writeable and a.flags.c_contiguous  # kernels get arrays of their own, like constant_value's


def _check(model: Model, subgraph: Subgraph, index: int) -> bool:
    """True when the fast path decoded the operand (and agreed); False when it left it to constant_value."""
    fast = _plain_constant(model, subgraph.operands[index])
    if fast is None:
        return False
    general = constant_value(model, subgraph, index)
    assert general is not None
    _same_array(fast, general)
    return True


def test_every_constant_of_generated_models_decodes_as_constant_value_does() -> None:
    decoded = 0
    for seed in range(150):
        model = model_from_json(generate_model(RandomSource(seed)).model_json)
        try:
            for subgraph in (model.main, *model.referenced):
                for index, operand in enumerate(subgraph.operands):
                    if operand.lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE):
                        decoded += _check(model, subgraph, index)
        finally:
            close_model_pools(model)
    assert decoded > 300  # the fast path is the common one


def _model(operand: Operand, values: bytes = bytes(range(16)), pool_size: int = 16) -> Model:
    pool = create_ashmem(pool_size)
    pool.write(0, bytes(range(pool_size)))
    main = Subgraph(operands=[operand], operations=[], input_indexes=[], output_indexes=[])
    return Model(main=main, operand_values=values, pools=[pool])


COPY = dict(lifetime=L.CONSTANT_COPY)
REFERENCE = dict(lifetime=L.CONSTANT_REFERENCE)


@pytest.mark.parametrize(
    "operand",
    [
        Operand(T.TENSOR_FLOAT32, [2], location=DataLocation(0, 4, 8), **COPY),
        Operand(T.INT32, [], location=DataLocation(0, 12, 4), **COPY),
        Operand(T.TENSOR_QUANT8_ASYMM, [2, 3], location=DataLocation(0, 3, 6), **COPY),  # unaligned offset
        Operand(T.TENSOR_BOOL8, [4], location=DataLocation(0, 0, 4), **COPY),  # bytes 1, 2, 3 are true
        Operand(T.TENSOR_FLOAT16, [3], location=DataLocation(0, 10, 6), **REFERENCE),
        Operand(T.FLOAT32, [], location=DataLocation(0, 12, 4), **REFERENCE),
    ],
)
def test_plain_constants_are_decoded(operand: Operand) -> None:
    model = _model(operand)
    try:
        assert _check(model, model.main, 0)
    finally:
        close_model_pools(model)


@pytest.mark.parametrize(
    "operand",
    [
        Operand(T.INT32, [1], location=DataLocation(0, 0, 4), **COPY),  # a scalar with dimensions
        Operand(T.TENSOR_FLOAT32, [], location=DataLocation(0, 0, 4), **COPY),  # unknown rank
        Operand(T.TENSOR_FLOAT32, [0], location=DataLocation(0, 0, 0), **COPY),  # unknown dimension
        Operand(T.TENSOR_FLOAT32, [2], location=DataLocation(0, 0, 4), **COPY),  # too short
        Operand(T.TENSOR_FLOAT32, [2], location=DataLocation(0, 12, 8), **COPY),  # past operandValues
        Operand(T.TENSOR_FLOAT32, [2], location=DataLocation(1, 0, 8), **COPY),  # pool index for a copy
        Operand(T.TENSOR_FLOAT32, [2], location=DataLocation(0, -4, 8), **COPY),
        Operand(T.TENSOR_FLOAT32, [2], location=DataLocation(3, 0, 8), **REFERENCE),  # no such pool
        Operand(T.TENSOR_FLOAT32, [2], location=DataLocation(0, 12, 8), **REFERENCE),  # past the pool
        Operand(T.SUBGRAPH, [], location=DataLocation(0, 0, 0), lifetime=L.SUBGRAPH),
        Operand(T.TENSOR_FLOAT32, [2], location=DataLocation(0, 0, 8), lifetime=L.TEMPORARY_VARIABLE),
        Operand(T.OEM, [], location=DataLocation(0, 0, 4), **COPY),
    ],
)
def test_other_operands_are_left_to_constant_value(operand: Operand) -> None:
    model = _model(operand)
    try:
        assert _plain_constant(model, operand) is None
    finally:
        close_model_pools(model)
