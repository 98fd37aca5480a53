"""Shared catalogue helpers: rounding, storing, broadcasting, axis handling, signature matching, checks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis.extra.numpy import mutually_broadcastable_shapes

from harness.hal import Operand
from harness.hal import OperandType as T
from harness.hal import OperationType as Op
from harness.ops import Arg, ShapeContext, Signature
from harness.ops.common import (
    ExecutionError,
    broadcast_dims,
    checks,
    fixed_output_quant,
    from_real,
    normalize_axis,
    requantize,
    round_half_away,
    signature_accepts,
    to_real,
)
from tests.ops._build import out, run, tensor


def test_round_half_away_from_zero():
    assert round_half_away(np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.49])).tolist() == [1, 2, 3, -1, -3, 0]


def test_from_real_quantizes_and_saturates():
    q8 = Operand(type=T.TENSOR_QUANT8_ASYMM, scale=0.5, zero_point=10)
    assert from_real(np.array([0.0, 1.25, -100.0, 1000.0]), q8).tolist() == [10, 13, 0, 255]
    assert from_real(np.array([70000.0]), Operand(type=T.TENSOR_FLOAT16)).tolist() == [np.inf]
    assert from_real(np.array([-2.7, 1e12]), Operand(type=T.TENSOR_INT32)).tolist() == [-2, 2**31 - 1]


def test_requantize_between_quantizations():
    src = Operand(type=T.TENSOR_QUANT8_ASYMM, scale=0.5, zero_point=10)
    dst = Operand(type=T.TENSOR_QUANT8_ASYMM_SIGNED, scale=0.25, zero_point=-5)
    # (14 - 10) * 0.5 = 2.0 -> 2.0 / 0.25 - 5 = 3
    assert requantize(np.array([14], np.uint8), src, dst).tolist() == [3]
    assert to_real(np.array([14], np.uint8), src).tolist() == [2.0]


def test_broadcast_dims_follows_the_hal_rules():
    assert broadcast_dims((4, 1, 2), (5, 4, 3, 1)) == (5, 4, 3, 2)
    assert broadcast_dims((0, 3), (1, 3)) == (0, 3)  # unknown stays unknown against 1
    assert broadcast_dims((0, 3), (2, 3)) == (2, 3)  # an unknown dimension must be 1 or 2
    with pytest.raises(ValueError):
        broadcast_dims((2, 3), (3, 3))


@settings(max_examples=50, deadline=None)
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=4, max_side=3, min_side=1))
def test_broadcast_dims_agrees_with_numpy_on_known_shapes(shapes):
    a, b = shapes.input_shapes
    assert broadcast_dims(a, b) == np.broadcast_shapes(a, b)


def test_normalize_axis():
    assert normalize_axis(-1, 3) == 2 and normalize_axis(0, 3) == 0
    with pytest.raises(ExecutionError):
        normalize_axis(3, 3)


def test_signature_accepts_optional_and_repeated_positions():
    f32 = (T.TENSOR_FLOAT32,)
    sig = Signature(
        inputs=(Arg("x", f32), Arg("flag", (T.BOOL,), optional=True)), outputs=(Arg("y", f32),), min_inputs=1
    )
    assert signature_accepts(sig, [T.TENSOR_FLOAT32], [T.TENSOR_FLOAT32])
    assert signature_accepts(sig, [T.TENSOR_FLOAT32, None], [T.TENSOR_FLOAT32])
    assert signature_accepts(sig, [T.TENSOR_FLOAT32, T.BOOL], [T.TENSOR_FLOAT32])
    assert not signature_accepts(sig, [None], [T.TENSOR_FLOAT32])
    assert not signature_accepts(sig, [T.TENSOR_FLOAT32, T.BOOL, T.BOOL], [T.TENSOR_FLOAT32])
    concat = Signature(inputs=(Arg("x", f32, repeated=True), Arg("axis", (T.INT32,))), outputs=(Arg("y", f32),))
    assert signature_accepts(concat, [T.TENSOR_FLOAT32] * 3 + [T.INT32], [T.TENSOR_FLOAT32])
    assert not signature_accepts(concat, [T.INT32], [T.TENSOR_FLOAT32])


def test_checks_report_every_violation():
    ctx = ShapeContext(operands=[], shapes=[], values=[], outputs=[Operand(type=T.TENSOR_QUANT8_ASYMM, scale=0.5)])
    combined = checks(fixed_output_quant(1 / 256, 0), None, lambda c: ["another"])
    assert len(combined(ctx)) == 2
    assert checks(None) is None
    # 1/256 written as a float32 value still matches.
    ctx.outputs[0].scale = float(np.float32(1 / 256))
    assert fixed_output_quant(1 / 256, 0)(ctx) == []


def test_kernels_return_inf_without_warnings():
    # pytest turns warnings into errors: an overflowing kernel must stay silent.
    (result,) = run(Op.EXP, [tensor(T.TENSOR_FLOAT16, [100.0])], [out(T.TENSOR_FLOAT16)])
    assert result.tolist() == [np.inf]
    (logs,) = run(Op.LOG, [tensor(T.TENSOR_FLOAT32, [0.0, -1.0])], [out(T.TENSOR_FLOAT32)])
    assert logs[0] == -np.inf and np.isnan(logs[1])
