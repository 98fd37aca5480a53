"""Element-wise arithmetic, activations, comparisons, logical operations, SELECT and the type conversions."""

from __future__ import annotations

import numpy as np

from driver_under_test.backends._operation import check_arithmetic_activation
from driver_under_test.backends.litert._graph import QUANT8, Op, TensorSpec
from driver_under_test.backends.litert._registry import rule
from driver_under_test.backends.litert.rules._common import (
    BOOL8,
    F16,
    F32,
    FLOAT,
    FLOAT_QUANT,
    I32,
    Q8,
    Q8_PC,
    Q8_SYMM,
    Q16_ASYMM,
    Q16_SYMM,
    QS8,
    QUANT,
    activation,
    requantize,
)
from driver_under_test.backends.litert.rules._limits import Kernel, refusal
from harness.hal import OperationType as O

# ---- binary arithmetic with a fused activation ----


def _check_arithmetic(op: Op) -> str | None:
    """ADD/SUB/MUL: the activation, then the limits of LiteRT's quantized kernel."""
    reason = check_arithmetic_activation(op)
    if reason is not None:
        return reason
    if op.in_type(0) not in QUANT8:
        return None  # the limits of ADD, SUB and MUL are those of their 8-bit quantized kernels
    builtin = _ARITH_BUILTINS[op.type][0]
    return refusal(Kernel(op.name, builtin, op.spec(0), op.out_spec(), activation=activation(op, 2)))


_ARITH_BUILTINS = {O.ADD: ("ADD", "AddOptions"), O.SUB: ("SUB", "SubOptions"), O.MUL: ("MUL", "MulOptions")}


# LiteRT's SUB has no float16 kernel (optimized and reference kernel sets): float16 SUB runs in float32.
@rule(O.SUB, types=FLOAT_QUANT | {I32}, params={2: "activation"}, check=_check_arithmetic, half=True)
@rule([O.ADD, O.MUL], types=FLOAT_QUANT | {I32, F16}, params={2: "activation"}, check=_check_arithmetic)
def arithmetic(op: Op) -> None:
    """HAL ADD/SUB/MUL: inputs 0 input0, 1 input1 (broadcast against input0), 2 activation (INT32 constant);
    output 0. TFLite ADD/SUB/MUL with the activation fused; quantized operands may each have their own scale and
    zero point, which the TFLite kernels requantize as the HAL does. Float16: ADD and MUL have LiteRT kernels,
    SUB is computed in float32."""
    builtin, options = _ARITH_BUILTINS[op.type]
    op.emit(builtin, [op.input(0), op.input(1)], [op.output()], options, fusedActivationFunction=activation(op, 2))


@rule(O.DIV, types={F32, I32}, params={2: "activation"}, check=check_arithmetic_activation, half=True)
def div(op: Op) -> None:
    """HAL DIV: inputs 0 input0, 1 input1 (broadcast), 2 activation; output 0. Float: TFLite DIV with the
    activation fused. TENSOR_INT32: the HAL rounds the quotient toward negative infinity, TFLite DIV truncates
    toward zero, so the rule uses FLOOR_DIV (which refuses a zero divisor at run time, where the HAL leaves the
    result unspecified)."""
    if op.in_type(0) == I32:
        op.emit("FLOOR_DIV", [op.input(0), op.input(1)], [op.output()])
    else:
        fused = activation(op, 2)
        op.emit("DIV", [op.input(0), op.input(1)], [op.output()], "DivOptions", fusedActivationFunction=fused)


@rule([O.MAXIMUM, O.MINIMUM], types=FLOAT_QUANT | {I32, F16})
def maximum_minimum(op: Op) -> None:
    """HAL MAXIMUM/MINIMUM: inputs 0 input0, 1 input1 (broadcast); output 0. TFLite MAXIMUM/MINIMUM compare the
    stored integers of quantized tensors without looking at scales, while the HAL lets each operand have its own
    scale and zero point: inputs are first requantized to the output's (QUANTIZE), which keeps the order."""
    builtin = "MAXIMUM" if op.type == O.MAXIMUM else "MINIMUM"
    a, b = op.input(0), op.input(1)
    if op.in_type(0) in QUANT:
        out = op.out_spec()
        a = requantize(op, a, op.spec(0), out)
        b = requantize(op, b, op.spec(1), out)
    op.emit(builtin, [a, b], [op.output()])


@rule(O.POW, types=FLOAT, half=True)
def pow_(op: Op) -> None:
    """HAL POW: inputs 0 base, 1 exponent (broadcast); output 0. TFLite POW."""
    op.emit("POW", [op.input(0), op.input(1)], [op.output()])


# ---- unary math ----

# Float16: NEG, SIN and FLOOR have LiteRT kernels; the others are computed in float32.
_UNARY = {
    O.ABS: ("ABS", FLOAT | {I32}),
    O.NEG: ("NEG", FLOAT | {I32, F16}),
    O.EXP: ("EXP", FLOAT),
    O.LOG: ("LOG", FLOAT),
    O.SQRT: ("SQRT", FLOAT),
    O.RSQRT: ("RSQRT", FLOAT),
    O.SIN: ("SIN", FLOAT | {F16}),
    O.FLOOR: ("FLOOR", FLOAT | {F16}),
}


def _unary(kind: O, builtin: str, types: frozenset[int]) -> None:
    def emit(op: Op) -> None:
        op.emit(builtin, [op.input(0)], [op.output()])

    emit.__name__ = emit.__qualname__ = kind.name.lower()
    emit.__doc__ = f"HAL {kind.name}: input 0; output 0 (same shape). TFLite {builtin}."
    rule(kind, types=types, half=F16 not in types)(emit)


for _kind, (_builtin, _types) in _UNARY.items():
    _unary(_kind, _builtin, _types)


# ---- activations ----

_ACTIVATIONS = {O.RELU: "RELU", O.RELU1: "RELU_N1_TO_1", O.RELU6: "RELU6", O.HARD_SWISH: "HARD_SWISH"}


def _check_relu_family(op: Op) -> str | None:
    """The limits of LiteRT's quantized kernel (only HARD_SWISH's has any)."""
    return refusal(Kernel(op.name, _ACTIVATIONS[op.type], op.spec(0), op.out_spec()))


@rule([O.RELU, O.RELU1, O.RELU6, O.HARD_SWISH], types=FLOAT_QUANT, check=_check_relu_family, half=True)
def relu_family(op: Op) -> None:
    """HAL RELU/RELU1/RELU6/HARD_SWISH: input 0; output 0 (quantized: its own scale and zero point). TFLite
    RELU/RELU_N1_TO_1/RELU6/HARD_SWISH, which requantize into the output's parameters."""
    op.emit(_ACTIVATIONS[op.type], [op.input(0)], [op.output()])


def _check_fixed_output_quant(op: Op) -> str | None:
    # The HAL fixes these outputs' quantization; LiteRT checks the same values in Prepare.
    if op.in_type(0) not in QUANT:
        return None
    out = op.out()
    expected = {
        (O.LOGISTIC, Q8): (1 / 256, 0),
        (O.LOGISTIC, QS8): (1 / 256, -128),
        (O.TANH, Q8): (1 / 128, 128),
        (O.TANH, QS8): (1 / 128, 0),
    }[(op.type, op.in_type(0))]
    if (float(np.float32(out.scale)), out.zero_point) != (float(np.float32(expected[0])), expected[1]):
        return f"{op.name}: quantized output must have scale {expected[0]} and zero point {expected[1]}"
    return None


@rule([O.LOGISTIC, O.TANH], types=FLOAT_QUANT | {F16}, check=_check_fixed_output_quant)
def logistic_tanh(op: Op) -> None:
    """HAL LOGISTIC/TANH: input 0; output 0 (quantized outputs have the fixed scale and zero point the HAL
    prescribes, which are also LiteRT's). TFLite LOGISTIC/TANH."""
    op.emit("LOGISTIC" if op.type == O.LOGISTIC else "TANH", [op.input(0)], [op.output()])


@rule(O.PRELU, types=FLOAT_QUANT, half=True)
def prelu(op: Op) -> None:
    """HAL PRELU: inputs 0 input, 1 alpha (broadcast against each other); output 0 of the broadcast shape.
    TFLite PRELU requires the output to have the input's shape: when alpha could widen it, the input is first
    broadcast to the common shape (BROADCAST_ARGS of both shapes, BROADCAST_TO)."""
    x, alpha = op.input(0), op.input(1)
    in_dims, alpha_dims = op.dims(0), op.dims(1)
    if not _input_has_output_shape(in_dims, alpha_dims):
        spec = op.spec(0)
        shapes = []
        for tensor, dims in ((x, in_dims), (alpha, alpha_dims)):
            shape = op.temp(TensorSpec("INT32", (len(dims),) if dims else None))
            op.emit("SHAPE", [tensor], [shape], "ShapeOptions", outType=op.b.model.schema.TensorType.INT32)
            shapes.append(shape)
        common = op.temp(TensorSpec("INT32", None))
        op.emit("BROADCAST_ARGS", shapes, [common])
        wide = op.temp(spec.with_shape(op.out_spec().shape))
        op.emit("BROADCAST_TO", [x, common], [wide])
        x = wide
    op.emit("PRELU", [x, alpha], [op.output()])


def _input_has_output_shape(in_dims: list[int], alpha_dims: list[int]) -> bool:
    """True when broadcasting alpha against the input certainly leaves the input's shape (known dimensions)."""
    if not in_dims or not alpha_dims or 0 in in_dims or 0 in alpha_dims or len(alpha_dims) > len(in_dims):
        return False
    return all(a in (1, d) for a, d in zip(reversed(alpha_dims), reversed(in_dims)))


# ---- comparisons and logic ----

_COMPARISONS = {
    O.EQUAL: "EQUAL",
    O.NOT_EQUAL: "NOT_EQUAL",
    O.GREATER: "GREATER",
    O.GREATER_EQUAL: "GREATER_EQUAL",
    O.LESS: "LESS",
    O.LESS_EQUAL: "LESS_EQUAL",
}


@rule(list(_COMPARISONS), types=FLOAT_QUANT | {I32, BOOL8, F16})
def comparison(op: Op) -> None:
    """HAL EQUAL/NOT_EQUAL/GREATER/GREATER_EQUAL/LESS/LESS_EQUAL: inputs 0 input0, 1 input1 (broadcast; quantized
    inputs may have different scales); output 0 TENSOR_BOOL8, the comparison of the real values. TFLite's
    comparison of the same name. LiteRT compares quantized tensors after rescaling them to 1/256 of a real unit
    (so with scale 0.001 the stored values 10 and 11 compare equal), and its optimized DEQUANTIZE rounds the same
    stored value differently in the vectorized body and the scalar tail of a tensor (so equal values compare
    unequal after it): quantized inputs of equal scale and zero point compare as their stored integers (CAST to
    INT32, exact), others as (q - zeroPoint) * scale computed in float32 (CAST, SUB, CAST, MUL: each exact or
    correctly rounded, the same on every kernel set). TFLite orders no booleans: TENSOR_BOOL8 inputs of the
    ordering comparisons are first CAST to INT32 (false 0 < true 1)."""
    builtin = _COMPARISONS[op.type]
    a, b = op.input(0), op.input(1)
    if op.in_type(0) == BOOL8 and op.type not in (O.EQUAL, O.NOT_EQUAL):
        a, b = _to_int32(op, a, op.spec(0)), _to_int32(op, b, op.spec(1))
    if op.in_type(0) in QUANT:
        sa, sb = op.spec(0), op.spec(1)
        a, b = _to_int32(op, a, sa), _to_int32(op, b, sb)
        if (sa.scales, sa.zero_points) != (sb.scales, sb.zero_points):
            a, b = _real_float32(op, a, sa), _real_float32(op, b, sb)
    op.emit(builtin, [a, b], [op.output()])


def _real_float32(op: Op, stored: int, spec: TensorSpec) -> int:
    """(stored - zeroPoint) * scale in float32 from the stored values as INT32."""
    centred = op.temp(spec.plain("INT32"))
    op.emit("SUB", [stored, op.const(np.array(spec.zero_points[0], np.int32))], [centred])
    as_float = op.temp(spec.plain("FLOAT32"))
    op.emit("CAST", [centred], [as_float])
    real = op.temp(spec.plain("FLOAT32"))
    op.emit("MUL", [as_float, op.const(np.array(spec.scales[0], np.float32))], [real])
    return real


def _to_int32(op: Op, tensor: int, spec: TensorSpec) -> int:
    out = op.temp(spec.plain("INT32"))
    op.emit("CAST", [tensor], [out])
    return out


_LOGICAL = {O.LOGICAL_AND: "LOGICAL_AND", O.LOGICAL_OR: "LOGICAL_OR", O.LOGICAL_NOT: "LOGICAL_NOT"}


@rule(list(_LOGICAL), types={BOOL8})
def logical(op: Op) -> None:
    """HAL LOGICAL_AND/LOGICAL_OR: inputs 0 input0, 1 input1 (broadcast); LOGICAL_NOT: input 0; output 0
    TENSOR_BOOL8. TFLite builtin of the same name."""
    inputs = [op.input(i) for i in range(op.n_inputs)]
    op.emit(_LOGICAL[op.type], inputs, [op.output()])


@rule(O.SELECT, types=FLOAT_QUANT | {I32}, type_input=1, half=True)
def select(op: Op) -> None:
    """HAL SELECT: inputs 0 condition (TENSOR_BOOL8), 1 input1, 2 input2 (all the same shape); output 0 takes
    input1 where the condition holds, else input2. TFLite SELECT copies stored values, so quantized inputs whose
    scale or zero point differ from the output's are first requantized (QUANTIZE)."""
    a, b = op.input(1), op.input(2)
    if op.in_type(1) in QUANT:
        out = op.out_spec()
        a = requantize(op, a, op.spec(1), out)
        b = requantize(op, b, op.spec(2), out)
    # LiteRT's SELECT keeps the declared output shape when every operand has one element: declare it.
    op.emit("SELECT", [op.input(0), a, b], [op.output(like=1)])


# ---- conversions ----

_EIGHT_BIT_RANGE = {Q8: (0, 255), QS8: (-128, 127), Q8_SYMM: (-128, 127)}


@rule(O.CAST, types={F32, F16, I32, Q8, QS8, Q8_SYMM, Q16_SYMM, Q16_ASYMM, BOOL8})
def cast(op: Op) -> None:
    """HAL CAST: input 0; output 0 of the same shape. The HAL converts the stored numbers, ignoring scales and
    zero points, truncating toward zero and saturating into an 8-bit target. TFLite CAST truncates but wraps, so
    an 8-bit target from a wider source is first clamped (MAXIMUM/MINIMUM with the target's range). A cast to
    the same type is a copy (TFLite CAST of the same type)."""
    source_type, target_type = op.in_type(0), op.out().type
    tensor, spec = op.input(0), op.spec(0)
    if target_type in _EIGHT_BIT_RANGE and source_type in (F32, I32, F16):
        lo, hi = _EIGHT_BIT_RANGE[target_type]
        dtype = {F32: np.float32, I32: np.int32, F16: np.float16}[source_type]
        plain = spec.plain(spec.type)
        low = op.temp(plain)
        op.emit("MAXIMUM", [tensor, op.const(np.asarray(lo, dtype=dtype))], [low])
        clamped = op.temp(plain)
        op.emit("MINIMUM", [low, op.const(np.asarray(hi, dtype=dtype))], [clamped])
        tensor = clamped
    # Stored numbers, not real values: LiteRT's CAST reads the integers whatever the quantization says.
    op.emit("CAST", [tensor], [op.output()])


@rule(O.QUANTIZE, types=FLOAT, half=True)
def quantize(op: Op) -> None:
    """HAL QUANTIZE: input 0 (float); output 0 TENSOR_QUANT8_ASYMM(_SIGNED) with its scale and zero point, values
    rounded half away from zero and saturated. TFLite QUANTIZE (same rounding)."""
    op.emit("QUANTIZE", [op.input(0)], [op.output()])


@rule(O.DEQUANTIZE, types={Q8, QS8, Q8_SYMM, Q8_PC}, check=lambda op: _check_dequantize(op))
def dequantize(op: Op) -> None:
    """HAL DEQUANTIZE: input 0 (quantized, per-channel included); output 0 TENSOR_FLOAT32 or TENSOR_FLOAT16.
    TFLite DEQUANTIZE, which writes float32: a float16 output is then CAST."""
    if op.out().type == F32:
        op.emit("DEQUANTIZE", [op.input(0)], [op.output()])
        return
    wide = op.temp(op.out_spec().plain("FLOAT32"))
    op.emit("DEQUANTIZE", [op.input(0)], [wide])
    op.emit("CAST", [wide], [op.output()])


@rule(O.ELU, types=FLOAT, params={1: "alpha"}, half=True)
def elu(op: Op) -> None:
    """HAL ELU: inputs 0 input, 1 alpha (FLOAT32 constant); output 0 = x for x > 0, alpha * (exp(x) - 1) else.
    TFLite ELU has alpha 1: with alpha 1 the builtin, otherwise the composition
    MAXIMUM(x, 0) + alpha * (EXP(MINIMUM(x, 0)) - 1), which is x above zero and the exponential branch below."""
    alpha = float(op.scalar(1))
    x, spec = op.input(0), op.spec(0)
    if alpha == 1.0:
        op.emit("ELU", [x], [op.output()])
        return
    zero, one = op.const(np.float32(0)), op.const(np.float32(1))
    negative, exp, minus_one, scaled, positive = (op.temp(spec) for _ in range(5))
    op.emit("MINIMUM", [x, zero], [negative])
    op.emit("EXP", [negative], [exp])
    op.emit("SUB", [exp, one], [minus_one], "SubOptions")
    op.emit("MUL", [minus_one, op.const(np.float32(alpha))], [scaled], "MulOptions")
    op.emit("MAXIMUM", [x, zero], [positive])
    op.emit("ADD", [positive, scaled], [op.output()], "AddOptions")


# ---- random ----


def _check_multinomial(op: Op) -> str | None:
    if op.rank(0) != 2:
        return f"{op.name}: the logits must have a known rank of 2"
    return None


@rule(O.RANDOM_MULTINOMIAL, types=FLOAT, params={2: "seeds"}, runtime_scalars={1}, check=_check_multinomial, half=True)
def random_multinomial(op: Op) -> None:
    """HAL RANDOM_MULTINOMIAL: inputs 0 logits [batches, classes] (unnormalized log-probabilities), 1 sample
    count (INT32, may be given at run time), 2 seeds (TENSOR_INT32 [2], constant); output 0 [batches, samples]
    TENSOR_INT32, classes drawn from softmax(logits). TFLite MULTINOMIAL (inputs: logits, the sample count as a
    0-d tensor; the seeds as the options seed and seed2; int32 output). The values are random and the HAL
    specifies only their distribution. LiteRT's generator state lives in the interpreter and moves on after
    every run, so two executions with the same seeds draw different samples, and seeds (0, 0) make it seed
    itself from the system."""
    seeds = [int(s) for s in op.value(2).reshape(-1)]
    op.emit("MULTINOMIAL", [op.input(0), op.input(1)], [op.output()], "RandomOptions", seed=seeds[0], seed2=seeds[1])


def _check_dequantize(op: Op) -> str | None:
    if op.out().type not in (F32, F16):
        return f"{op.name}: output type {op.out().type} is not float"
    return None
