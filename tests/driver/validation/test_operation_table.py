"""The driver's operation table against facts stated in NN HAL 1.3 types.hal, checked one signature at a time."""

from __future__ import annotations

import pytest

from driver_under_test.errors import DriverError
from driver_under_test.validation.operations import SIGNATURES, check_signature
from harness.hal import Operand, OperationType

from .builders import LT, OP, T


def operands(*types: T, lifetime: LT = LT.SUBGRAPH_INPUT) -> list[Operand]:
    return [Operand(type=t, dimensions=[] if t in SCALARS else [1], lifetime=lifetime) for t in types]


SCALARS = {T.INT32, T.FLOAT32, T.FLOAT16, T.BOOL, T.UINT32}
F32, F16, Q8, Q8S, TI32, TB8 = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM,
                                T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_INT32, T.TENSOR_BOOL8)  # fmt: skip
I32, BOOL = T.INT32, T.BOOL


def accepts(op: OP, inputs: list[T], outputs: list[T]) -> bool:
    try:
        check_signature(op, operands(*inputs), operands(*outputs, lifetime=LT.SUBGRAPH_OUTPUT), op.name)
    except DriverError:
        return False
    return True


def test_every_hal_operation_has_a_signature() -> None:
    assert set(SIGNATURES) == {t for t in OperationType if t != OperationType.OEM_OPERATION}


@pytest.mark.parametrize(("count", "ok"), [(7, True), (8, True), (9, False), (10, True), (11, True), (12, False),
                                           (13, True), (14, False)])  # fmt: skip
def test_conv_2d_takes_the_explicit_or_implicit_input_counts(count: int, ok: bool) -> None:
    # explicit padding: 10 (+ layout, + two dilations); implicit: 7 (+ layout, + two dilations)
    explicit = [F32, F32, F32] + [I32] * 7 + [BOOL, I32, I32]
    implicit = [F32, F32, F32] + [I32] * 4 + [BOOL, I32, I32]
    candidates = [c[:count] for c in (explicit, implicit) if len(c) >= count]
    assert any(accepts(OP.CONV_2D, c, [F32]) for c in candidates) == ok


def test_resize_nearest_neighbor_requires_its_layout_input() -> None:
    assert not accepts(OP.RESIZE_NEAREST_NEIGHBOR, [F32, I32, I32], [F32])
    assert accepts(OP.RESIZE_NEAREST_NEIGHBOR, [F32, I32, I32, BOOL], [F32])
    assert accepts(OP.RESIZE_BILINEAR, [F32, I32, I32], [F32])
    assert accepts(OP.RESIZE_BILINEAR, [F16, T.FLOAT16, T.FLOAT16, BOOL, BOOL, BOOL], [F16])
    assert not accepts(OP.RESIZE_BILINEAR, [F16, T.FLOAT32, T.FLOAT32], [F16])


def test_optional_tensor_inputs_are_present_with_or_without_value() -> None:
    assert not accepts(OP.SQUEEZE, [F32], [F32])
    perm = operands(TI32, lifetime=LT.NO_VALUE)
    check_signature(OP.TRANSPOSE, operands(F32) + perm, operands(F32), "TRANSPOSE")
    with pytest.raises(DriverError):  # ADD's second operand is not optional
        check_signature(OP.ADD, operands(F32) + operands(F32, lifetime=LT.NO_VALUE) + operands(I32), operands(F32),
                        "ADD")  # fmt: skip


def test_the_primary_operand_is_where_the_hal_puts_it() -> None:
    assert accepts(OP.EMBEDDING_LOOKUP, [TI32, Q8], [Q8])
    assert not accepts(OP.EMBEDDING_LOOKUP, [TI32, Q8], [TI32])
    assert accepts(OP.SELECT, [TB8, TI32, TI32], [TI32])
    assert accepts(OP.FILL, [TI32, T.FLOAT16], [F16])
    assert accepts(OP.FILL, [TI32, I32], [TI32])
    assert not accepts(OP.FILL, [TI32, T.FLOAT32], [TI32])


def test_type_changing_operations() -> None:
    assert accepts(OP.CAST, [F32], [Q8])
    assert accepts(OP.CAST, [TB8], [TB8])
    assert not accepts(OP.CAST, [TB8], [F32])
    assert accepts(OP.DEQUANTIZE, [Q8S], [F16])
    assert not accepts(OP.DEQUANTIZE, [F32], [F32])
    assert accepts(OP.QUANTIZE, [F16], [Q8S])
    assert accepts(OP.ARGMAX, [Q8, I32], [TI32])
    assert accepts(OP.EQUAL, [TB8, TB8], [TB8])
    assert not accepts(OP.EQUAL, [F32, F32], [F32])


def test_recurrent_operations_counts() -> None:
    lstm = [F32] * 20 + [I32, T.FLOAT32, T.FLOAT32]
    assert accepts(OP.LSTM, lstm, [F32] * 4)
    assert accepts(OP.LSTM, lstm + [F32] * 4, [F32] * 4)
    assert not accepts(OP.LSTM, lstm + [F32] * 2, [F32] * 4)
    rnn = [F32] * 12 + [I32, BOOL, BOOL]
    assert [n for n in range(6) if accepts(OP.BIDIRECTIONAL_SEQUENCE_RNN, rnn, [F32] * n)] == [1, 2, 3, 4]
    uni = [F32] * 20 + [I32, T.FLOAT32, T.FLOAT32, BOOL] + [F32] * 4
    assert [n for n in range(5) if accepts(OP.UNIDIRECTIONAL_SEQUENCE_LSTM, uni, [F32] * n)] == [1, 3]


def test_variadic_operations() -> None:
    assert accepts(OP.CONCATENATION, [Q8, Q8, Q8, I32], [Q8])
    assert not accepts(OP.CONCATENATION, [Q8, F32, I32], [Q8])
    assert not accepts(OP.CONCATENATION, [I32], [Q8])
    assert accepts(OP.SPLIT, [TI32, I32, I32], [TI32] * 3)
    assert not accepts(OP.SPLIT, [TI32, I32, I32], [])
