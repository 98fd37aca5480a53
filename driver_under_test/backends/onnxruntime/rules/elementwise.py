"""Element-wise arithmetic, activations, unary math, comparisons, logical operations, SELECT and the type
conversions (CAST, QUANTIZE, DEQUANTIZE).

Computing rules read real values (`Op.x`) and write them (`Op.y`): float16 is computed in float32 (ONNX Runtime's
CPU provider has float16 kernels for few operators) and rounded once into the float16 output; quantized operands
are dequantized and the result quantized into the output's own scale and zero point (QDQ).
"""

from __future__ import annotations

import numpy as np

from driver_under_test.backends._operation import check_arithmetic_activation
from driver_under_test.backends.onnxruntime._graph import Op
from driver_under_test.backends.onnxruntime._registry import rule
from driver_under_test.backends.onnxruntime.rules._common import (
    BOOL8,
    F16,
    F32,
    FLOAT,
    FLOAT_QUANT,
    I32,
    NUMERIC,
    Q8,
    Q8_PC,
    Q8_SYMM,
    Q16_ASYMM,
    Q16_SYMM,
    QS8,
    activate,
    activation,
)
from harness.hal import OperationType as O

# ---- binary arithmetic with a fused activation ----


_ARITHMETIC = {O.ADD: "Add", O.SUB: "Sub", O.MUL: "Mul"}


@rule([O.ADD, O.SUB, O.MUL], types=NUMERIC, params={2: "activation"}, check=check_arithmetic_activation)
def arithmetic(op: Op) -> None:
    """HAL ADD/SUB/MUL: inputs 0 input0, 1 input1 (broadcast against input0), 2 activation (INT32 constant);
    output 0. ONNX Add/Sub/Mul (multidirectional broadcasting, as the HAL's), then the activation's node.
    Quantized operands may each have their own scale and zero point: each is dequantized with its own."""
    result = op.node(_ARITHMETIC[op.type], [op.x(0), op.x(1)])
    activate(op, result, activation(op, 2), op.y())


@rule(O.DIV, types={F32, F16, I32}, params={2: "activation"}, check=check_arithmetic_activation)
def div(op: Op) -> None:
    """HAL DIV: inputs 0 input0, 1 input1 (broadcast), 2 activation; output 0. Float: ONNX Div then the
    activation. TENSOR_INT32: the HAL rounds the quotient toward negative infinity where ONNX Div truncates
    toward zero, so the truncated quotient is lowered by one where the remainder (Mod with fmod=1: the dividend's
    sign) is not zero and its sign differs from the divisor's. (Subtracting the remainder from the dividend first
    would overflow int32 near its limits.) A zero divisor (whose result the HAL leaves unspecified) is replaced by
    1: an integer division by zero would kill the process instead of giving some value."""
    a, b = op.x(0), op.x(1)
    if op.in_type(0) != I32:
        activate(op, op.node("Div", [a, b]), activation(op, 2), op.y())
        return
    zero = op.const(np.int32(0))
    divisor = op.node("Where", [op.node("Equal", [b, zero]), op.const(np.int32(1)), b])
    truncated = op.node("Div", [a, divisor])
    remainder = op.node("Mod", [a, divisor], fmod=1)
    signs_differ = op.node("Xor", [op.node("Less", [remainder, zero]), op.node("Less", [divisor, zero])])
    lower = op.node("And", [op.node("Not", [op.node("Equal", [remainder, zero])]), signs_differ])
    op.node("Sub", [truncated, op.node("Cast", [lower], to="INT32")], [op.y()])


@rule([O.MAXIMUM, O.MINIMUM], types=NUMERIC)
def maximum_minimum(op: Op) -> None:
    """HAL MAXIMUM/MINIMUM: inputs 0 input0, 1 input1 (broadcast); output 0. ONNX Max/Min over real values
    (quantized inputs may each have their own scale and zero point)."""
    op.node("Max" if op.type == O.MAXIMUM else "Min", [op.x(0), op.x(1)], [op.y()])


@rule(O.POW, types=FLOAT)
def pow_(op: Op) -> None:
    """HAL POW: inputs 0 base, 1 exponent (broadcast); output 0. ONNX Pow."""
    op.node("Pow", [op.x(0), op.x(1)], [op.y()])


# ---- unary math ----

_UNARY = {
    O.ABS: ("Abs", FLOAT | {I32}),
    O.NEG: ("Neg", FLOAT | {I32}),
    O.EXP: ("Exp", FLOAT),
    O.LOG: ("Log", FLOAT),
    O.SQRT: ("Sqrt", FLOAT),
    O.SIN: ("Sin", FLOAT),
    O.FLOOR: ("Floor", FLOAT),
}


def _unary(kind: O, onnx_op: str, types: frozenset[int]) -> None:
    def emit(op: Op) -> None:
        op.node(onnx_op, [op.x(0)], [op.y()])

    emit.__name__ = emit.__qualname__ = kind.name.lower()
    emit.__doc__ = f"HAL {kind.name}: input 0; output 0 (same shape). ONNX {onnx_op}."
    rule(kind, types=types)(emit)


for _kind, (_onnx_op, _types) in _UNARY.items():
    _unary(_kind, _onnx_op, _types)


@rule(O.RSQRT, types=FLOAT)
def rsqrt(op: Op) -> None:
    """HAL RSQRT: input 0; output 0. ONNX Reciprocal of Sqrt (ONNX has no reciprocal square root)."""
    op.node("Reciprocal", [op.node("Sqrt", [op.x(0)])], [op.y()])


# ---- activations ----

_ACTIVATION_CODES = {O.RELU: 1, O.RELU1: 2, O.RELU6: 3}


@rule([O.RELU, O.RELU1, O.RELU6], types=FLOAT_QUANT)
def relu_family(op: Op) -> None:
    """HAL RELU/RELU1/RELU6: input 0; output 0 (quantized: its own scale and zero point). ONNX Relu, or Clip to
    [-1, 1] / [0, 6]."""
    activate(op, op.x(0), _ACTIVATION_CODES[op.type], op.y())


_PLAIN_ACTIVATIONS = {O.LOGISTIC: "Sigmoid", O.TANH: "Tanh", O.HARD_SWISH: "HardSwish"}


@rule([O.LOGISTIC, O.TANH, O.HARD_SWISH], types=FLOAT_QUANT)
def plain_activation(op: Op) -> None:
    """HAL LOGISTIC/TANH/HARD_SWISH: input 0; output 0 (quantized LOGISTIC/TANH outputs have the scale and zero
    point the HAL fixes). ONNX Sigmoid/Tanh/HardSwish (HardSwish's x * max(0, min(1, x / 6 + 1 / 2)) is the
    HAL's x * relu6(x + 3) / 6)."""
    op.node(_PLAIN_ACTIVATIONS[op.type], [op.x(0)], [op.y()])


@rule(O.ELU, types=FLOAT, params={1: "alpha"})
def elu(op: Op) -> None:
    """HAL ELU: inputs 0 input, 1 alpha (FLOAT32 or FLOAT16 constant scalar); output 0. ONNX Elu with the alpha
    attribute."""
    op.node("Elu", [op.x(0)], [op.y()], alpha=float(op.scalar(1)))


@rule(O.PRELU, types=FLOAT_QUANT)
def prelu(op: Op) -> None:
    """HAL PRELU: inputs 0 input, 1 alpha (broadcast against each other, both ways); output 0 of the broadcast
    shape. ONNX PRelu broadcasts alpha only towards the input, so the rule writes
    Where(input < 0, input * alpha, input), whose broadcasting is the HAL's."""
    x, alpha = op.x(0), op.x(1)
    negative = op.node("Less", [x, op.const(np.float32(0))])
    op.node("Where", [negative, op.node("Mul", [x, alpha]), x], [op.y()])


# ---- comparisons and logic ----

_COMPARISONS = {
    O.EQUAL: "Equal",
    O.NOT_EQUAL: "Equal",
    O.GREATER: "Greater",
    O.GREATER_EQUAL: "GreaterOrEqual",
    O.LESS: "Less",
    O.LESS_EQUAL: "LessOrEqual",
}


@rule(list(_COMPARISONS), types=NUMERIC | {BOOL8})
def comparison(op: Op) -> None:
    """HAL EQUAL/NOT_EQUAL/GREATER/GREATER_EQUAL/LESS/LESS_EQUAL: inputs 0 input0, 1 input1 (broadcast); output
    0 (TENSOR_BOOL8). ONNX Equal (and Not for NOT_EQUAL), Greater, GreaterOrEqual, Less, LessOrEqual over real
    values (quantized inputs with their own scales). ONNX orders no booleans: BOOL8 inputs are compared as int32."""
    a, b = op.x(0), op.x(1)
    if op.in_type(0) == BOOL8 and op.type not in (O.EQUAL, O.NOT_EQUAL):
        a, b = op.node("Cast", [a], to="INT32"), op.node("Cast", [b], to="INT32")
    if op.type == O.NOT_EQUAL:
        op.node("Not", [op.node("Equal", [a, b])], [op.output()])
    else:
        op.node(_COMPARISONS[op.type], [a, b], [op.output()])


_LOGICAL = {O.LOGICAL_AND: "And", O.LOGICAL_OR: "Or"}


@rule(list(_LOGICAL), types={BOOL8})
def logical_binary(op: Op) -> None:
    """HAL LOGICAL_AND/LOGICAL_OR: inputs 0, 1 (TENSOR_BOOL8, broadcast); output 0. ONNX And/Or."""
    op.node(_LOGICAL[op.type], [op.input(0), op.input(1)], [op.output()])


@rule(O.LOGICAL_NOT, types={BOOL8})
def logical_not(op: Op) -> None:
    """HAL LOGICAL_NOT: input 0 (TENSOR_BOOL8); output 0. ONNX Not."""
    op.node("Not", [op.input(0)], [op.output()])


@rule(O.SELECT, types=NUMERIC, type_input=1)
def select(op: Op) -> None:
    """HAL SELECT: inputs 0 condition (TENSOR_BOOL8), 1 input0 (where true), 2 input1 (where false), all of one
    shape; output 0. ONNX Where over real values (quantized inputs and output may each have their own scale)."""
    op.node("Where", [op.input(0), op.x(1), op.x(2)], [op.y()])


# ---- type conversions ----

# Integer storage types and their ranges: CAST into an 8-bit type saturates (the HAL's rule).
_EIGHT_BIT = {Q8: (0, 255), QS8: (-128, 127), Q8_SYMM: (-128, 127), BOOL8: None}
_ONNX_TYPE = {F32: "FLOAT", F16: "FLOAT16", I32: "INT32", Q8: "UINT8"}


def _check_cast(op: Op) -> str | None:
    source, target = op.in_type(0), op.out().type
    if source == target or (source in _ONNX_TYPE and target in _ONNX_TYPE):
        return None
    return f"{op.name}: from operand type {source} to {target} is not a conversion the HAL defines"


@rule(O.CAST, types={F32, F16, I32, Q8, QS8, Q8_SYMM, Q16_SYMM, Q16_ASYMM, BOOL8}, check=_check_cast)
def cast(op: Op) -> None:
    """HAL CAST: input 0; output 0 of the same shape. Scale and zero point are ignored: the stored numbers are
    converted, toward zero from float to integer, saturating into an 8-bit target (ONNX Cast wraps, so a Clip
    first). The same type on both sides copies (Identity)."""
    source, target = op.in_type(0), op.out().type
    x = op.input(0)
    if source == target:
        op.node("Identity", [x], [op.output()])
        return
    if target == Q8:
        if source in (F32, F16):
            # Truncate first: Clip then Cast of a value between 255 and 256 (or -1 and 0) stays in range.
            x = op.node("Clip", [op.node("Cast", [x], to="FLOAT"), op.const(np.float32(0)), op.const(np.float32(255))])
        elif source == I32:
            x = op.node("Clip", [x, op.const(np.int32(0)), op.const(np.int32(255))])
    op.node("Cast", [x], [op.output()], to=_ONNX_TYPE[target])


@rule(O.QUANTIZE, types=FLOAT)
def quantize(op: Op) -> None:
    """HAL QUANTIZE: input 0 (float); output 0 (TENSOR_QUANT8_ASYMM or _SIGNED). ONNX QuantizeLinear with the
    output's scale and zero point (it rounds halves to even where the HAL rounds them away from zero: within the
    HAL's one-unit tolerance)."""
    op.node("Identity", [op.x(0)], [op.y()])


@rule(O.DEQUANTIZE, types={Q8, QS8, Q8_SYMM, Q8_PC})
def dequantize(op: Op) -> None:
    """HAL DEQUANTIZE: input 0 (quantized; per-channel along its channel dimension); output 0 (float32 or
    float16). ONNX DequantizeLinear (with axis for per-channel), Cast for a float16 output."""
    op.node("Identity", [op.x(0)], [op.y()])
